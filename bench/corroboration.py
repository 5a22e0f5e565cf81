"""Corroboration in recall-team: which restatements the merging rule finds, and what it costs.

Run from the repository root::

    .venv/bin/python bench/corroboration.py                  # hashing and wordllama
    .venv/bin/python bench/corroboration.py --embedder hashing

Reads teamdev (``--data PATH``, default ``../shared/eval/teamdev.json`` beside the repository,
described by ``../shared/eval/teamdev.md``; skipped with a message when absent) at run time.

1. **Pairs.** Every pair of shared facts in the same project (877: 12 of them ``dup_of``
   pairs, the same fact by two members in other words; 865 not) is put to
   :func:`memmesh.team._corroborate.same_fact`, with the cosine of the asker's own embedder,
   under the rule recall-team uses and under variants that each drop or loosen one of its
   conditions. Printed: the dup pairs merged (of 12) and the other pairs wrongly merged (of
   865; "cross-owner": those whose facts have different owners, the only ones recall-team
   would ever compare, since it merges only different authors' items).
2. **Contrast pairs**, written here and not part of teamdev: facts on one topic that say
   different things (a changed number, before/after, a reversed choice, another claim about
   the same code), which no rule may merge, and two short restatements. Printed: which rule
   merges which.
3. **Ranking.** Every paraphrase, token and noise query scored over the 96 shared facts as
   recall-team scores hits (:func:`memmesh.team.rank.team_score`, the fact's cosine under the
   asker's embedder): hit@1, hit@5 and MRR over the first 5 hits, and how many distinct
   facts those hold, for items as they are, for corroborated hits, and for corroborated hits
   with a boost of ``B`` per further author (to see whether a boost would help).
"""

import argparse
import itertools
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from _common import table
from memmesh.embed import EmbedderUnavailable, get_embedder
from memmesh.embed.base import Embedder
from memmesh.team._corroborate import RULE, Rule, Statement, corroborating_groups, same_fact
from memmesh.team.rank import QueryTerms, team_score

TEAMDEV = Path(__file__).resolve().parents[1].parent / "shared/eval/teamdev.json"
EMBEDDERS = ("hashing", "wordllama")
K = 5
BOOSTS = (0.0, 0.05, 0.1)

VARIANTS: dict[str, Rule] = {
    "recall-team's rule": RULE,
    "with the cosine (min_cosine)": msgspec.structs.replace(RULE, cosine=True),
    "without the exact token in common": msgspec.structs.replace(RULE, anchor="off"),
    "with one even if neither names any": msgspec.structs.replace(RULE, anchor="always"),
    "without the number check": msgspec.structs.replace(RULE, numbers=False),
    "without the edit check": msgspec.structs.replace(RULE, max_similarity=1.01),
    "edit check at 0.5 (not 0.6)": msgspec.structs.replace(RULE, max_similarity=0.5),
    "without the 6 shared words": msgspec.structs.replace(RULE, min_shared_words=0),
    "Jaccard 0.15 (not 0.22)": msgspec.structs.replace(RULE, min_overlap=0.15),
    "words only: 6 shared, Jaccard": Rule(anchor="off", numbers=False, max_similarity=1.01),
    "cosine only (min_cosine)": Rule(
        min_shared_words=0,
        min_overlap=0.0,
        anchor="off",
        numbers=False,
        max_similarity=1.01,
        cosine=True,
    ),
}

# (what the pair shows, first text, second text, whether they state the same fact)
CONTRASTS: list[tuple[str, str, str, bool]] = [
    (
        "another number",
        "The billing service retries failed webhooks 5 times with exponential backoff (BILL-204)",
        "The billing service retries failed webhooks 3 times with exponential backoff (BILL-204)",
        False,
    ),
    (
        "an edit: a number, two words",
        "The billing service retries failed webhook deliveries 5 times with exponential "
        "backoff before it gives up (BILL-204)",
        "The billing service retries failing webhook deliveries 3 times with exponential "
        "backoff before giving up (BILL-204)",
        False,
    ),
    (
        "reworded, another number",
        "After 5 failed attempts with exponential backoff, the billing service stops retrying "
        "a webhook delivery (BILL-204)",
        "The billing service retries a failed webhook delivery (BILL-204) 3 times with "
        "exponential backoff, then stops",
        False,
    ),
    (
        "before / after",
        "Run make db-migrate before deploying the billing api to production",
        "Run make db-migrate after deploying the billing api to production",
        False,
    ),
    (
        "a reversed choice",
        "ADR-12: we chose Postgres advisory locks over Redis locks for the job scheduler",
        "ADR-12: we chose Redis locks over Postgres advisory locks for the job scheduler",
        False,
    ),
    (
        "another claim, one code",
        "ING-4471 means the Kafka consumer lost its partition assignment during a rebalance",
        "ING-4471 is logged when the Postgres pool is exhausted and a batch insert times out",
        False,
    ),
    (
        "one setting, two facts",
        "RIVERBED_BATCH_MAX defaults to 500 rows; past 2000 the Kafka consumer misses "
        "max.poll.interval.ms and gets kicked from the group",
        "RIVERBED_BATCH_MAX is read only at startup, so changing it needs a rollout restart "
        "of every riverbed replica before the Kafka consumer sees it",
        False,
    ),
    (
        "one topic, two facts",
        "The job scheduler takes Postgres advisory locks, never Redis ones",
        "The job scheduler queue leases each job for thirty seconds in Postgres",
        False,
    ),
    (
        "one topic, shared words",
        "Webhook deliveries that fail BILL-204 validation are retried with exponential backoff "
        "for up to one hour, then parked in the dead-letter table",
        "The billing service retries failed webhook deliveries 5 times with exponential backoff "
        "before it gives up",
        False,
    ),
    (
        "restated, with a code",
        "Webhook deliveries that fail BILL-204 validation are retried with exponential "
        "backoff for up to one hour, then parked in the dead-letter table",
        "After an hour of exponential backoff, a webhook delivery still failing BILL-204 "
        "validation is parked in the dead-letter table instead of being retried",
        True,
    ),
    (
        "restated, no code",
        "We chose Postgres advisory locks over Redis for the job scheduler",
        "For scheduling jobs we settled on advisory locks in Postgres instead of Redis",
        True,
    ),
]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=TEAMDEV, help="teamdev.json")
    parser.add_argument("--embedder", choices=EMBEDDERS, action="append", help="(repeatable)")
    return parser.parse_args(argv)


def cosines(embedder: Embedder, texts: Sequence[str]) -> np.ndarray[Any, Any]:
    vectors = embedder.embed(list(texts))
    return vectors @ vectors.T


def pair_rows(facts: list[dict[str, Any]], embedder: Embedder) -> list[list[object]]:
    """Per variant: dup pairs merged; other same-project pairs (and cross-owner ones among
    them) wrongly merged; and wrong merges among the pairs of every project."""
    statements = [Statement(f["text"]) for f in facts]
    matrix = cosines(embedder, [f["text"] for f in facts])
    dups = {frozenset((f["id"], f["dup_of"])) for f in facts if f.get("dup_of")}
    pairs = list(itertools.combinations(range(len(facts)), 2))
    rows: list[list[object]] = []
    for name, rule in VARIANTS.items():
        found = wrong = wrong_cross = wrong_anywhere = 0
        for i, j in pairs:
            if not same_fact(
                statements[i], statements[j], _given(float(matrix[i, j])),
                min_cosine=embedder.min_cosine, rule=rule,
            ):  # fmt: skip
                continue
            if frozenset((facts[i]["id"], facts[j]["id"])) in dups:
                found += 1
                continue
            wrong_anywhere += 1
            if facts[i]["project"] == facts[j]["project"]:
                wrong += 1
                wrong_cross += facts[i]["owner"] != facts[j]["owner"]
        rows.append(
            [name, embedder.name, f"{found}/{len(dups)}", wrong, wrong_cross, wrong_anywhere]
        )
    same_project = sum(facts[i]["project"] == facts[j]["project"] for i, j in pairs)
    rows.append(
        ["(pairs)", embedder.name, f"{len(dups)} dup", same_project - len(dups), None, len(pairs)]
    )
    return rows


def near_miss_rows(facts: list[dict[str, Any]], embedders: list[Embedder]) -> list[list[object]]:
    """The non-dup pairs closest to the word thresholds (one word short or less), with each
    embedder's cosine: how far the cosine check stands behind the words."""
    statements = [Statement(f["text"]) for f in facts]
    dups = {frozenset((f["id"], f["dup_of"])) for f in facts if f.get("dup_of")}
    matrices = [cosines(e, [f["text"] for f in facts]) for e in embedders]
    rows: list[list[object]] = []
    for i, j in itertools.combinations(range(len(facts)), 2):
        a, b = statements[i], statements[j]
        shared = len(a.content & b.content)
        dup = frozenset((facts[i]["id"], facts[j]["id"])) in dups
        if dup or shared < RULE.min_shared_words - 1:
            continue
        overlap = shared / len(a.content | b.content)
        cells: list[object] = [f"{facts[i]['id']} / {facts[j]['id']}", shared, overlap]
        for embedder, matrix in zip(embedders, matrices, strict=True):
            cells.append(f"{matrix[i, j]:.3f} (gate {embedder.min_cosine:g})")
        rows.append(cells)
    return sorted(rows, key=lambda row: (-int(str(row[1])), -float(str(row[2]))))


def contrast_rows(embedder: Embedder) -> list[list[object]]:
    rows: list[list[object]] = []
    for what, first, second, same in CONTRASTS:
        a, b = Statement(first), Statement(second)
        cosine = float(cosines(embedder, [first, second])[0, 1])
        merged = [
            same_fact(a, b, _given(cosine), min_cosine=embedder.min_cosine, rule=rule)
            for rule in VARIANTS.values()
        ]
        marks = "".join(("M" if m else ".") for m in merged)
        verdict = "ok" if merged[0] == same else ("missed" if same else "WRONG MERGE")
        rows.append([what, embedder.name, "same" if same else "different", cosine, marks, verdict])
    return rows


def ranking_rows(
    data: dict[str, Any], facts: list[dict[str, Any]], embedder: Embedder
) -> list[list[object]]:
    """hit@1, hit@5, MRR and distinct facts in the top 5, items against corroborated hits."""
    texts = [f["text"] for f in facts]
    vectors = embedder.embed(texts)
    fact_of = {f["id"]: f.get("dup_of") or f["id"] for f in facts}
    modes: list[tuple[str, Callable[[list[int], list[float]], list[list[int]]]]] = [
        ("items", lambda order, scores: [[i] for i in order[:K]])
    ]
    for boost in BOOSTS:
        modes.append((f"corroborated, boost {boost:g}", _grouped(texts, facts, embedder, boost)))
    rows: list[list[object]] = []
    for kind in ("paraphrase", "token", "noise"):
        queries = [q for q in data["queries"] if q["type"] == kind]
        for name, arrange in modes:
            hits1 = hits5 = rr = distinct = answered = 0.0
            for query in queries:
                order, scores = _scored(query["q"], facts, vectors, embedder)
                groups = arrange(order, scores)
                answered += bool(groups)
                distinct += len({fact_of[facts[i]["id"]] for g in groups for i in g})
                expect = set(query["expect"])
                ranks = [r for r, g in enumerate(groups, 1) if expect & {facts[i]["id"] for i in g}]
                if ranks:
                    hits1 += ranks[0] == 1
                    hits5 += 1
                    rr += 1 / ranks[0]
            n = len(queries)
            if kind == "noise":
                rows.append([kind, name, None, None, None, distinct / n, 1 - answered / n])
            else:
                rows.append([kind, name, hits1 / n, hits5 / n, rr / n, distinct / n, None])
    return rows


def _given(cosine: float) -> Callable[[], float]:
    """The cosine ``same_fact`` asks for, computed beforehand."""
    return lambda: cosine


def _scored(
    query: str, facts: list[dict[str, Any]], vectors: np.ndarray[Any, Any], embedder: Embedder
) -> tuple[list[int], list[float]]:
    """The relevant facts' indexes best first (ties by id), and their scores by index."""
    terms = QueryTerms(query)
    cos = vectors @ embedder.embed_query(query)
    scores: list[float] = []
    kept: list[int] = []
    for i, fact in enumerate(facts):
        tags = tuple(fact["tags"])
        score = team_score(terms, fact["text"], tags, float(cos[i]), embedder.min_cosine)
        scores.append(-1.0 if score is None else score)
        if score is not None:
            kept.append(i)
    kept.sort(key=lambda i: (-scores[i], facts[i]["id"]))
    return kept, scores


def _grouped(
    texts: list[str], facts: list[dict[str, Any]], embedder: Embedder, boost: float
) -> Callable[[list[int], list[float]], list[list[int]]]:
    def arrange(order: list[int], scores: list[float]) -> list[list[int]]:
        groups = corroborating_groups(
            [texts[i] for i in order], [facts[i]["owner"] for i in order], embedder,
            limit=len(order),
        )  # fmt: skip
        indexed = [[order[i] for i in g] for g in groups]
        indexed.sort(key=lambda g: -(scores[g[0]] + boost * (len(g) - 1)))
        return indexed[:K]

    return arrange


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    print("== memmesh corroboration benchmark (recall-team merging restatements)")
    if not args.data.is_file():
        print(f"teamdev: skipped, {args.data} not found")
        return 0
    data = json.loads(args.data.read_text(encoding="utf-8"))
    facts = [f for f in data["facts"] if f["share"]]
    embedders: list[Embedder] = []
    for name in args.embedder or EMBEDDERS:
        try:
            embedders.append(get_embedder(name))
        except EmbedderUnavailable as exc:
            print(f"{name}: skipped ({exc.message})")
    pairs = [row for e in embedders for row in pair_rows(facts, e)]
    print("\n== teamdev same-project pairs of shared facts")
    headers = ["rule", "embedder", "dup merged", "wrong merges", "cross-owner", "any project"]
    print(table(headers, pairs))
    print("\n== the other pairs nearest the word thresholds (5 shared words), with their cosine")
    names = [f"cosine, {e.name}" for e in embedders]
    print(table(["pair", "shared words", "Jaccard", *names], near_miss_rows(facts, embedders)))
    print("\n== contrast pairs (written for this benchmark), M = merged, one mark per rule above")
    contrasts = [row for e in embedders for row in contrast_rows(e)]
    print(table(["pair", "embedder", "truth", "cosine", "rules", "recall-team"], contrasts))
    for embedder in embedders:
        print(f"\n== teamdev ranking, {embedder.name}: first {K} hits over the 96 shared facts")
        headers = ["queries", "hits", "hit@1", "hit@5", "MRR", "facts in 5", "abstained"]
        print(table(headers, ranking_rows(data, facts, embedder)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
