"""Recall quality on teamdev-format data (and LoCoMo dev), per embedder: the figures to tune from.

Run from the repository root::

    .venv/bin/python bench/quality.py                                # teamdev, hashing, both halves
    .venv/bin/python bench/quality.py --embedder wordllama --half tune --rankings
    .venv/bin/python bench/quality.py --embedder e5-small --locomo   # LoCoMo dev R@10
    .venv/bin/python bench/quality.py --throughput 5000              # texts/s on one core
    .venv/bin/python bench/quality.py --team --half report           # through recall-team

Teamdev (``--data PATH``, default ``../shared/eval/teamdev.json`` beside the repository, which
``../shared/eval/teamdev.md`` describes; skipped with a message when absent): every fact goes
into one home as ``mem remember --global --kind KIND --tag ...`` stores it (redacted, then
``Store.remember``, novelty gate included), in file order; each query is asked as ``mem recall
-k 10`` asks it (``recall(store, query, k=10, project="global")``, journaled). Printed per
query type (paraphrase, token, noise, private probe): hits@1, hits@5 and MRR over the 10 hits
(a query is a hit at k when an item holding one of its expected facts is among the first k;
a near-duplicate pair the store merged counts for either fact), how many abstained, and how
many answers held a ``share: false`` fact; then recall latency p50/p95.

This measures local recall: one store, no asker, no privacy filter. A private fact in a
local answer would leak only if that answer went to a teammate, so the "private surfaced"
column is what the team path must withhold (its target there is 0), and "owner hit@5" of the
private probes is the owner's own recall.

``--team`` asks through the team path instead (``bench/_quality_team.py``, with the processes
and members of ``bench/team_recall.py``): a coordinator and one peer daemon per member, as
processes on 127.0.0.1, every one stopped at the end. Each of the 5 members' homes remembers
that member's own facts in file order, in the fact's project, with its kind and tags (redacted
first, as ``mem remember --project P`` stores them); the items holding a ``share: true`` fact
are published (as team.yaml, which shares every kind, allows) and synced, the ``share: false``
ones never. Once the coordinator lists all 5 peers, each query is asked in this process with
:func:`memmesh.team.recall.recall_team` (k=10, fresh clients per call as one ``mem team
recall-team`` makes them), with the asking member's Store, Policy and identity, from the
expected fact's project: asked by the first member in roster order who owns none of its
expected facts (a private probe: never its owner). A noise query is asked from each of the
four projects in turn (each ask a row of its own; from global alone it would see only the
global facts), the noise queries going round the roster. A hit holding several facts (an
item its author's novelty gate merged, or the items recall-team lists in ``also`` as
corroborating it) counts for each. Printed per query
type: hit@1, hit@5, MRR@10, abstained, the queries whose answer held a ``share: false`` fact
and how many such facts it returned in all (leaks; the target is 0), and recall_team's
latency p50/p95 (all of it wall time: fan-out, verification, merge).

Halves: a query is in the **tuning** half when the first byte of SHA-256 of its text (UTF-8;
the queries carry no id and no text occurs twice) is even, else in the **report** half:
87 and 93 of teamdev's 180 queries. Choose settings on ``--half tune`` only, and quote
``--half report`` (never looked at while tuning) and LoCoMo as the held-out figures.

``--rankings`` adds recall's one-half modes (``vector``: cosine alone; ``lexical``: BM25
alone; both still behind recall's gate), the fused ranking without the answer's floor and cut
(``hybrid, uncut``: ``recall(answer=False)``, ranked as the one-half modes are, so that fusion
is compared with them apart from the answer's length) and a bench-only ranking of every item
by raw cosine with no gate at all, so that what fusion and the gate contribute is visible.

``--locomo [PATH]`` runs the LoCoMo dev split instead (default
``../shared/eval/locomo-dev.json``; licensed CC BY-NC, so it is read here at run time and never
copied into the repository; skipped when absent): each conversation its own store, a turn per
``remember()``, R@5/R@10/MRR@10 per mode over the 759 evidence-labelled questions, exactly as
``bench/local_recall.py --quality-only`` measures it; with ``--rankings``, once more for the
``hybrid, uncut`` row.

``--throughput N`` embeds N short synthetic developer memories (the generator of
``bench/local_recall.py``) with the process pinned to one CPU and prints texts per second.
"""

import argparse
import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

import local_recall
from _common import Latency, log, ms_since, share, table
from memmesh.embed import DEFAULT_EMBEDDER, EMBEDDER_NAMES, get_embedder
from memmesh.local._recall import Mode, recall
from memmesh.local.items import GLOBAL
from memmesh.local.store import Store
from memmesh.policy import redact

EVAL = Path(__file__).resolve().parents[1].parent / "shared/eval"
TEAMDEV = EVAL / "teamdev.json"
K = 10
TYPES = ("paraphrase", "token", "noise", "private_probe")
HALVES = ("tune", "report", "all")
UNGATED = "cosine, ungated"
UNCUT = "hybrid, uncut"


def half_of(query: str) -> str:
    """``tune`` or ``report``: the fixed split of the module docstring."""
    return "tune" if hashlib.sha256(query.encode("utf-8")).digest()[0] % 2 == 0 else "report"


@dataclass(frozen=True)
class Row:
    """The figures of one query type (or of paraphrase and token together) in one ranking."""

    ranking: str
    type: str
    queries: int
    hit_at_1: float | None
    hit_at_5: float | None
    mrr: float | None
    abstained: float
    private_surfaced: float


@dataclass
class TeamdevResult:
    embedder: str
    half: str
    tags: bool
    facts: int
    items: int
    merged: int
    merged_dup_pairs: int
    remember_seconds: float
    rows: list[Row]
    latency: Latency


def load_store(
    store: Store, facts: Sequence[dict[str, Any]], *, tags: bool = True
) -> tuple[dict[str, str], int]:
    """Every fact stored the way ``mem remember --global`` stores it (with its tags, unless
    ``tags`` is false); the item of each fact, and how many of the merges were a fact into
    its ``dup_of`` original."""
    item_of: dict[str, str] = {}
    dup_merges = 0
    for fact in facts:
        clean = redact(fact["text"], fact["tags"] if tags else [])
        item, status = store.remember(
            clean.text, kind=fact["kind"], project=GLOBAL, tags=list(clean.tags)
        )
        item_of[fact["id"]] = item.id
        if status == "reinforced" and item_of.get(fact.get("dup_of") or "") == item.id:
            dup_merges += 1
    return item_of, dup_merges


def ungated_ranking(
    store: Store, query: str, matrix: np.ndarray[Any, Any], items: list[str]
) -> list[str]:
    """The k items of the highest raw cosine, with no gate: the vectors' ranking alone."""
    scores = matrix @ store.embedder.embed_query(query)
    return [items[i] for i in np.argsort(-scores, kind="stable")[:K]]


def run_teamdev(
    data: dict[str, Any], embedder: str, half: str, rankings: Sequence[str], *, tags: bool = True
) -> TeamdevResult:
    facts: list[dict[str, Any]] = data["facts"]
    queries = [q for q in data["queries"] if half in ("all", half_of(q["q"]))]
    private = {fact["id"] for fact in facts if not fact["share"]}
    ranks: dict[str, list[int | None]] = {name: [] for name in rankings}
    abstained: dict[str, list[bool]] = {name: [] for name in rankings}
    surfaced: dict[str, list[bool]] = {name: [] for name in rankings}
    latencies: list[float] = []
    with (
        tempfile.TemporaryDirectory(prefix="memmesh-quality-") as home,
        Store(Path(home), embedder=embedder) as store,
    ):
        started = time.perf_counter()
        item_of, dup_merges = load_store(store, facts, tags=tags)
        seconds = time.perf_counter() - started
        private_items = {item_of[fact_id] for fact_id in private}
        first_fact = {item: fact for fact, item in reversed(item_of.items())}
        items = sorted(first_fact)
        by_id = {fact["id"]: fact for fact in facts}
        matrix = store.embedder.embed([by_id[first_fact[item]]["text"] for item in items])
        log(f"[{embedder}] {len(facts)} facts -> {len(items)} items in {seconds:.1f}s")
        for query in queries:
            wanted = {item_of[fact_id] for fact_id in query["expect"]}
            for name in rankings:
                if name == UNGATED:
                    hit_ids = ungated_ranking(store, query["q"], matrix, items)
                    gave_up = False
                elif name == UNCUT:
                    ranked = recall(
                        store, query["q"], k=K, project=GLOBAL, answer=False, record=False
                    )
                    hit_ids = [hit.item.id for hit in ranked.hits]
                    gave_up = ranked.abstained
                else:
                    mode = cast(Mode, name)  # every other ranking is one of recall's modes
                    began = time.perf_counter()
                    answer = recall(store, query["q"], k=K, project=GLOBAL, mode=mode)
                    if mode == "hybrid":
                        latencies.append(ms_since(began))
                    hit_ids = [hit.item.id for hit in answer.hits]
                    gave_up = answer.abstained
                ranks[name].append(local_recall.first_rank(hit_ids, wanted))
                abstained[name].append(gave_up)
                surfaced[name].append(not private_items.isdisjoint(hit_ids))
    rows = [
        row
        for name in rankings
        for row in _rows(name, [q["type"] for q in queries], ranks[name], abstained[name],
                         surfaced[name])
    ]  # fmt: skip
    return TeamdevResult(
        embedder=embedder,
        half=half,
        tags=tags,
        facts=len(facts),
        items=len(items),
        merged=len(facts) - len(items),
        merged_dup_pairs=dup_merges,
        remember_seconds=seconds,
        rows=rows,
        latency=Latency.of("recall -k 10, hybrid", latencies),
    )


def _rows(
    ranking: str,
    types: list[str],
    ranks: list[int | None],
    abstained: list[bool],
    surfaced: list[bool],
) -> list[Row]:
    groups = [(kind, {kind}) for kind in TYPES] + [("paraphrase+token", {"paraphrase", "token"})]
    out = []
    for label, kinds in groups:
        picked = [i for i, kind in enumerate(types) if kind in kinds]
        if not picked:
            continue
        found = [ranks[i] for i in picked]
        answerable = label != "noise"
        out.append(
            Row(
                ranking=ranking,
                type=label,
                queries=len(picked),
                hit_at_1=share([r == 1 for r in found]) if answerable else None,
                hit_at_5=share([r is not None and r <= 5 for r in found]) if answerable else None,
                mrr=statistics.fmean(1 / r if r else 0.0 for r in found) if answerable else None,
                abstained=share([abstained[i] for i in picked]),
                private_surfaced=share([surfaced[i] for i in picked]),
            )
        )
    return out


def print_teamdev(result: TeamdevResult) -> None:
    stored = "with their tags" if result.tags else "without tags"
    print(f"\n== teamdev, embedder {result.embedder}, half: {result.half}, facts {stored}")
    print(
        f"{result.facts} facts -> {result.items} items ({result.merged} merged on remember, "
        f"{result.merged_dup_pairs} of them into their dup_of original) in "
        f"{result.remember_seconds:.1f}s"
    )
    headers = ["ranking", "type", "queries", "hit@1", "hit@5", "MRR@10", "abstained",
               "private surfaced"]  # fmt: skip
    rows = [[r.ranking, r.type.replace("private_probe", "private probe (owner)"), r.queries,
             r.hit_at_1, r.hit_at_5, r.mrr, r.abstained, r.private_surfaced]
            for r in result.rows]  # fmt: skip
    print(table(headers, rows))
    lat = result.latency
    print(f"recall -k 10 (hybrid), {lat.n} calls: p50 {lat.p50:.2f} ms, p95 {lat.p95:.2f} ms")


@contextlib.contextmanager
def _uncut_hybrid() -> Iterator[None]:
    """``local_recall``'s LoCoMo run asks hybrid recall only, without the answer's floor and
    cut (its loop is the measurement; this changes only what it calls)."""
    swapped = {"recall": functools.partial(recall, answer=False), "MODES": ("hybrid",)}
    saved = {name: getattr(local_recall, name) for name in swapped}
    try:
        for name, value in swapped.items():
            setattr(local_recall, name, value)
        yield
    finally:
        for name, value in saved.items():
            setattr(local_recall, name, value)


def run_locomo(path: Path, embedder: str, uncut: bool) -> local_recall.QualityResult:
    """LoCoMo dev as ``bench/local_recall.py`` measures it; with ``uncut``, a ``hybrid, uncut``
    row after the three modes."""
    quality = local_recall.run_quality(path, embedder, "remember")
    if uncut:
        with _uncut_hybrid():
            (row,) = local_recall.run_quality(path, embedder, "remember").rows
        quality.rows.append(dataclasses.replace(row, mode=UNCUT))
    return quality


def run_throughput(embedder: str, count: int) -> tuple[float, int]:
    """Texts per second embedding ``count`` short memories, pinned to one CPU, in batches of
    the size a reindex uses; and the CPU it ran on."""
    texts = [item.text for item in local_recall.Corpus(local_recall.SEED).items(count)]
    model = get_embedder(embedder)
    model.embed(texts[:50])  # load and warm
    allowed = os.sched_getaffinity(0)
    cpu = min(allowed)
    os.sched_setaffinity(0, {cpu})
    try:
        started = time.perf_counter()
        for start in range(0, count, local_recall._BULK_BATCH):
            model.embed(texts[start : start + local_recall._BULK_BATCH])
        seconds = time.perf_counter() - started
    finally:
        os.sched_setaffinity(0, allowed)
    return count / seconds, cpu


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=TEAMDEV, help="teamdev-format JSON file")
    parser.add_argument("--embedder", choices=EMBEDDER_NAMES, default=DEFAULT_EMBEDDER)
    parser.add_argument("--half", choices=HALVES, default="all", help="which queries (all)")
    parser.add_argument(
        "--rankings", action="store_true", help="also vector-only, BM25-only, raw cosine"
    )
    parser.add_argument(
        "--locomo", type=Path, nargs="?", const=EVAL / "locomo-dev.json",
        help="run LoCoMo dev (this file, default ../shared/eval/locomo-dev.json) instead",
    )  # fmt: skip
    parser.add_argument(
        "--no-tags", dest="tags", action="store_false", help="store the facts without tags"
    )
    parser.add_argument("--throughput", type=int, metavar="N", help="embed N texts on one CPU")
    parser.add_argument(
        "--team", action="store_true", help="ask teamdev through recall-team (processes)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    info = local_recall.machine_info(args.embedder)
    print("== memmesh recall quality benchmark")
    print("  ".join(f"{key}: {value}" for key, value in info.items()))
    report: dict[str, Any] = {"machine": info}
    if args.throughput:
        rate, cpu = run_throughput(args.embedder, args.throughput)
        print(f"\n== embedding: {args.throughput:,} short texts, {args.embedder}, CPU {cpu} only")
        print(f"{rate:,.0f} texts/s")
        report["throughput_texts_per_s"] = rate
    elif args.locomo is not None:
        if not args.locomo.is_file():
            print(f"\n== LoCoMo: skipped, {args.locomo} not found")
            return 0
        quality = run_locomo(args.locomo, args.embedder, args.rankings)
        local_recall.print_quality(quality)
        report["locomo"] = asdict(quality)
    else:
        if not args.data.is_file():
            print(f"\n== teamdev: skipped, {args.data} not found")
            return 0
        data = json.loads(args.data.read_text(encoding="utf-8"))
        halves = Counter(half_of(q["q"]) for q in data["queries"])
        print(f"halves: tune {halves['tune']} queries, report {halves['report']}")
        if args.team:
            import _quality_team  # imports this module: only now, once it is complete

            team = _quality_team.run_team_path(data, args.embedder, args.half, tags=args.tags)
            _quality_team.print_team(team)
            report["teamdev_team"] = asdict(team)
        else:
            modes = ["hybrid", UNCUT, "vector", "lexical", UNGATED] if args.rankings else ["hybrid"]
            result = run_teamdev(data, args.embedder, args.half, modes, tags=args.tags)
            print_teamdev(result)
            report["teamdev"] = asdict(result)
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
