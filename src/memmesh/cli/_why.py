"""`mem recall` and `mem why`: a recall, and a recall explained.

An explained recall prints each hit with the parts of its score on the line below, then the
near misses, each with the reason it was left out in words. `mem recall --explain` prints the
recall's trace id as its last line (plain `mem recall` keeps to its hits; `--json` always has
``trace``); `mem why --trace ID` runs that recall again and says what became of each item.
"""

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from memmesh.cli._common import Command, emit, open_store, shown_ids
from memmesh.cli._holds import add_as_of, as_of
from memmesh.cli.errors import UsageError
from memmesh.errors import ExitCode
from memmesh.local.items import MAX_K, iso
from memmesh.local.project import resolve_project
from memmesh.views import recall_json, replay_json

if TYPE_CHECKING:
    from memmesh.local import Explanation, LeftOut, Parts, Recall, Replay, Then
    from memmesh.local.anchors import Staleness
    from memmesh.local.items import Item

__all__ = ["add_recall", "explained_text"]

_K_HELP = f"at most N hits (1-{MAX_K}; default 5)"
_RECALL = (
    "Recall the items most relevant to a query, from the current project and global. "
    "Says so and returns nothing when nothing is relevant."
)
_WHY = (
    "Explain a recall: each hit with the parts of its score, then the near misses and why "
    "each was left out. --trace runs a past recall again and says what became of each item "
    "it returned."
)


def add_recall(
    command: Command, project_options: Callable[[argparse.ArgumentParser], None]
) -> None:
    """Add `mem recall` and `mem why`; ``project_options`` adds their ``--project``."""
    p = command(
        "recall",
        _recall,
        _RECALL,
        'mem recall "why do webhooks arrive twice" -k 3\n'
        '  mem recall "why do webhooks arrive twice" --explain',
        description=_RECALL + " Each recall is traced: --json gives its trace id and "
        "--explain prints it last, for `mem why --trace ID`. The last 1,000 recalls keep their "
        "query, in the local store only.",
        json_shape='{"query", "hits": [{"id", "text", "score", ..., "stale"}], "abstained", '
        '"projects", "latency_ms", "trace"};\n  "stale": the hit\'s anchored files that changed '
        'since, [{"path", "changed", "gone", "anchored_at"}];\n  with --as-of, "as_of"; with '
        '--explain each hit has "parts", and "explanation" the gate, the weights and "left_out"',
    )
    p.add_argument("query", help="what you want to know")
    p.add_argument("-k", type=int, default=5, metavar="N", help=f"at most N hits (1-{MAX_K})")
    project_options(p)
    p.add_argument(
        "--explain",
        action="store_true",
        help="the parts of each hit's score, then the near misses and why each was left out",
    )
    add_as_of(p)
    p = command(
        "why",
        _why,
        _WHY,
        'mem why "why do webhooks arrive twice" -k 3\n  mem why --trace 3f9a0c1b2d4e',
        description=_WHY + " Parts: cosine, BM25 and its share of the best, exact tokens "
        "shared, query words covered, track record. Reasons: below the relevance gate, a "
        "track record too poor, in another project, ranked below -k. Nothing is recorded. "
        "A replay uses the trace's query, project and k against the store as it is now.",
        json_shape='{"query", "hits": [{..., "parts"}], "abstained", "projects", '
        '"explanation": {"gate", "weights", "left_out": [{"id", "reason", "parts", ...}]}};\n'
        '  with --trace: {"trace": {"id", "at", "query", "project", "k", ...}, '
        '"then": [{"id", "rank", "fate", ...}], "now"}',
    )
    p.add_argument("query", nargs="?", help="what you want to know (or give --trace)")
    p.add_argument("-k", type=int, metavar="N", help=_K_HELP)
    project_options(p)
    p.add_argument("--trace", metavar="ID", help="run the recall traced under ID again")


def _recall(args: argparse.Namespace) -> int:
    from memmesh.local import recall
    from memmesh.local.anchors import stale as changed

    project = resolve_project(args.project)
    moment = as_of(args)
    with open_store(args) as store:
        answer = recall(
            store, args.query, k=args.k, project=project, explain=args.explain, as_of=moment
        )
        shown = shown_ids(store, _ids_in(answer))
        stale = changed(store, [hit.item.id for hit in answer.hits])
    text = explained_text(answer, shown) if args.explain else _hits_text(answer, shown, stale=stale)
    data = recall_json(answer, stale)
    if moment is not None:
        data["as_of"] = iso(moment)
    emit(args, data, text)
    return ExitCode.OK


def _why(args: argparse.Namespace) -> int:
    from memmesh.local import recall, replay

    if args.query is None and args.trace is None:
        raise UsageError("why", "give a query, or --trace ID for a past recall")
    if args.query is not None and args.trace is not None:
        raise UsageError("why", "give a query or --trace ID, not both")
    if args.trace is not None and (args.k is not None or args.project is not None):
        raise UsageError("why", "a trace keeps its own -k and project")
    with open_store(args) as store:
        if args.trace is not None:
            again = replay(store, args.trace)
            shown = shown_ids(store, [*again.trace.item_ids, *_ids_in(again.now)])
            emit(args, replay_json(again), _replay_text(again, shown))
            return ExitCode.OK
        project = resolve_project(args.project)
        k = 5 if args.k is None else args.k
        answer = recall(store, args.query, k=k, project=project, record=False, explain=True)
        shown = shown_ids(store, _ids_in(answer))
    emit(args, recall_json(answer), explained_text(answer, shown))
    return ExitCode.OK


def _ids_in(answer: "Recall") -> list[str]:
    """The ids a recall's text shows: its hits', and its near misses' when explained."""
    left = answer.explanation.left_out if answer.explanation else ()
    return [hit.item.id for hit in answer.hits] + [miss.item.id for miss in left]


def _hits_text(
    answer: "Recall",
    shown: dict[str, str],
    parts: bool = False,
    stale: "dict[str, list[Staleness]] | None" = None,
) -> str:
    if answer.abstained:
        return f"nothing relevant in {' + '.join(answer.projects)} (abstained)"
    lines = []
    for hit in answer.hits:
        lines.append(f"{hit.score:.3f}  {_item_line(hit.item, shown)}")
        if stale and hit.item.id in stale:
            from memmesh.local.anchors import note

            lines.append(f"       {note(stale[hit.item.id])}")
        if parts and hit.parts is not None:
            lines.append(f"       {parts_text(hit.parts, hit.item)}")
    return "\n".join(lines)


def _item_line(item: "Item", shown: dict[str, str]) -> str:
    return f"{shown.get(item.id, item.id)}  [{item.kind}, {item.project}]  {item.text}"


def explained_text(answer: "Recall", shown: dict[str, str]) -> str:
    """An explained recall as text: each hit and its parts, the near misses and why, and the
    trace id last when the recall was recorded."""
    lines = [_hits_text(answer, shown, parts=True)]
    if answer.explanation is not None:
        lines += _left_out_lines(answer.explanation, answer.projects, shown)
    if answer.trace is not None:
        lines.append(f"trace {answer.trace} (mem why --trace {answer.trace})")
    return "\n".join(lines)


def _left_out_lines(
    explanation: "Explanation", projects: tuple[str, ...], shown: dict[str, str]
) -> list[str]:
    if not explanation.left_out:
        return ["left out: nothing else came near"]
    lines = ["left out:"]
    for miss in explanation.left_out:
        lines.append(f"       {_item_line(miss.item, shown)}")
        lines.append(f"         {reason_text(miss, explanation, projects)}")
    return lines


def parts_text(parts: "Parts", item: "Item") -> str:
    """The parts of a score in words: ``cosine 0.62, bm25 3.41 (1.00 of the best), ...``."""
    words = [
        f"cosine {parts.cosine:.3f} ({parts.closeness:+.1f} spreads)",
        f"bm25 {parts.bm25:.2f} ({parts.lexical:.2f} of the best)",
    ]
    if parts.exact_tokens:
        words.append(f"exact {', '.join(parts.exact_tokens)} +{parts.exact_bonus:.2f}")
    words.append(f"{parts.covered} of {parts.words} query words")
    words.append(f"{_record(item)} x{parts.factor:.2f}")
    return f"relevance {parts.relevance:.3f}: " + ", ".join(words) + f" = {parts.score:.3f}"


def _record(item: "Item") -> str:
    if not (item.worked or item.failed or item.partial or item.reinforcements):
        return "no track record"
    return (
        f"record {item.outcome_score:+.2f} (worked {item.worked:.1f}, failed {item.failed:.1f}, "
        f"partial {item.partial:.1f}; reinforced {item.reinforcements}x)"
    )


def reason_text(miss: "LeftOut", explanation: "Explanation", projects: tuple[str, ...]) -> str:
    """Why a near miss was left out, in words, with the numbers that decided it."""
    parts, item = miss.parts, miss.item
    if miss.reason == "below_gate":
        exact = ", no exact token of the query" if explanation.query_exact else ""
        return (
            f"below the relevance gate: cosine {parts.cosine:.2f}, {parts.closeness:+.1f} spreads "
            f"above unrelated texts (under {explanation.min_closeness:+.1f}), "
            f"{parts.covered} of {parts.words} query words (under "
            f"{explanation.min_coverage:.0%}){exact}"
        )
    if miss.reason == "below_floor":
        return (
            f"nothing reached the relevance floor {explanation.min_relevance:.2f}, so the recall "
            f"abstained (score {parts.score:.3f})"
        )
    if miss.reason == "far_below_best":
        return (
            f"score {parts.score:.3f}, under {explanation.min_share_of_best:.0%} of the best "
            "hit's: too far behind to be worth showing"
        )
    if miss.reason == "not_in_force":
        return f"it holds {_validity_text(item)}, which leaves this moment out"
    if miss.reason == "outcome_excluded":
        return (
            f"its track record {item.outcome_score:+.2f} is at or below "
            f"{explanation.exclude_at:+.2f} (worked {item.worked:.1f}, failed {item.failed:.1f}, "
            f"partial {item.partial:.1f}): left out until its failures fade"
        )
    if miss.reason == "out_of_scope":
        return (
            f"in project {item.project}, outside {' + '.join(projects)}: "
            f"`mem recall --project {item.project}` would find it (score {parts.score:.3f})"
        )
    if miss.reason == "ranked_below_k":
        return f"ranked #{miss.rank}, below -k {explanation.k} (score {parts.score:.3f})"
    return f"withheld: not among the items this recall may answer from (score {parts.score:.3f})"


def _replay_text(again: "Replay", shown: dict[str, str]) -> str:
    trace, now = again.trace, again.now
    lines = [
        f'recall {trace.id} at {iso(trace.at)}: "{trace.query}" in {" + ".join(now.projects)}, '
        f"k {trace.k}, " + (f"{len(trace.item_ids)} returned" if trace.item_ids else "abstained"),
        "run again now: items may have changed since, and the scores are today's",
    ]
    assert now.explanation is not None
    for then in again.then:
        lines.append(f"#{then.rank}  " + _then_line(then, shown))
        lines.append(f"      {_fate_text(then, now.explanation, now.projects)}")
    new = [hit for hit in now.hits if hit.item.id not in trace.item_ids]
    if new:
        lines.append("returned now, not then:")
        lines += [f"{hit.score:.3f}  {_item_line(hit.item, shown)}" for hit in new]
    return "\n".join(lines)


def _then_line(then: "Then", shown: dict[str, str]) -> str:
    if then.item is None:
        return f"{then.item_id}  (no longer in the store)"
    return _item_line(then.item, shown)


def _fate_text(then: "Then", explanation: "Explanation", projects: tuple[str, ...]) -> str:
    changed = "; changed since" if then.changed and then.fate != "inactive" else ""
    if then.fate == "still_returned":
        return f"still returned, #{then.now_rank}{changed}"
    if then.fate == "left_out" and then.left_out is not None:
        return f"now left out: {reason_text(then.left_out, explanation, projects)}{changed}"
    if then.fate == "inactive" and then.item is not None:
        by = f" by {then.item.superseded_by}" if then.item.superseded_by else ""
        return f"no longer recalled: {then.item.status}{by}{changed}"
    return f"no longer a candidate: nothing in it is near the query now{changed}"


def _validity_text(item: "Item") -> str:
    """When the item holds, in words: "from DATE", "until DATE" or both."""
    ends = [("from", item.valid_from), ("until", item.valid_until)]
    return " ".join(f"{word} {iso(at)}" for word, at in ends if at is not None)
