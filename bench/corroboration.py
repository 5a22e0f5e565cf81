"""Corroboration in recall-team: which restatements the merging rule finds, and what it costs.

Run from the repository root::

    .venv/bin/python bench/corroboration.py                  # hashing and wordllama
    .venv/bin/python bench/corroboration.py --embedder hashing --queries 100

Reads teamdev (``--data PATH``, default ``../shared/eval/teamdev.json`` beside the repository,
described by ``../shared/eval/teamdev.md``; its parts are skipped with a message when absent)
at run time.

1. **teamdev pairs.** Every pair of shared facts in the same project (877: 12 of them
   ``dup_of`` pairs, the same fact by two members in other words; 865 not) is put to
   :func:`memmesh.consolidate.corroborate.same_fact` (with the cosine of the asker's own embedder
   for the variants that use one), under the rule recall-team uses and under variants that
   each change one of its conditions. Printed: the dup pairs merged (of 12) and the other
   pairs wrongly merged (of 865; "cross-owner": those of two owners, the only ones
   recall-team compares; "any project": among all 4,560 pairs of shared facts).
2. **Generated answers.** teamdev's facts are far apart; the facts in one answer are not.
   ``bench/team_recall.py``'s generator writes 2,000 distinct memories (one corpus to choose
   on, another with another seed held out), dealt round-robin to 5 authors, and 300 questions
   about them; each question's 15 best memories (recall-team asks every source for 3k, k=5)
   are ranked as recall-team ranks hits and grouped. Every merge there counts as wrong: the
   memories are distinct facts (the generator may, rarely, state one twice in two templates).
   Printed: the answers holding a merged hit, of 300, the items merged, and the pairs merged
   among all 2,000 memories (for the variants asking at least 6 shared words and no cosine).
3. **Contrast pairs**, written here: facts on one topic that say different things (another
   number, before/after, a reversed choice, another claim about the same code), which no rule
   may merge, and two short restatements. Printed: which variant merges which.
4. **Ranking.** Every paraphrase, token and noise query scored over teamdev's 96 shared facts
   as recall-team scores hits (:func:`memmesh.team.rank.team_score`, the fact's cosine under
   the asker's embedder): hit@1, hit@5 and MRR over the first 5 hits and how many distinct
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
from memmesh.consolidate.corroborate import RULE, Rule, Statement, corroborating_groups, same_fact
from memmesh.embed import EmbedderUnavailable, get_embedder
from memmesh.embed.base import Embedder
from memmesh.local.items import GLOBAL
from memmesh.team.rank import QueryTerms, team_score
from team_recall import SEED, Corpus  # the team benchmark's generator of related memories

TEAMDEV = Path(__file__).resolve().parents[1].parent / "shared/eval/teamdev.json"
EMBEDDERS = ("hashing", "wordllama")
K = 5
BOOSTS = (0.0, 0.05, 0.1)
# The generated corpora: one to choose the rule on, one held out.
CORPORA = {"choose on": SEED + 10, "held out": SEED + 30}
MEMORIES = 2_000
AUTHORS = 5
QUESTIONS = 300
POOL = 3 * K  # recall-team asks each source for 3k hits

VARIANTS: dict[str, Rule] = {
    "recall-team's rule": RULE,
    "with the cosine (min_cosine)": msgspec.structs.replace(RULE, cosine=True),
    "identifiers: not each with one the other lacks": msgspec.structs.replace(
        RULE, identifiers="no_conflict"
    ),
    "identifiers: one in common": msgspec.structs.replace(RULE, identifiers="one_shared"),
    "identifiers ignored": msgspec.structs.replace(RULE, identifiers="off"),
    "without the number check": msgspec.structs.replace(RULE, numbers=False),
    "without the edit check": msgspec.structs.replace(RULE, max_similarity=1.01),
    "8 shared words (not 9)": msgspec.structs.replace(RULE, min_shared_words=8),
    "6 shared words, one identifier in common": msgspec.structs.replace(
        RULE, min_shared_words=6, identifiers="one_shared"
    ),
    "words only: 6 shared, Jaccard 0.22": Rule(
        min_shared_words=6, identifiers="off", numbers=False, max_similarity=1.01
    ),
    "cosine only (min_cosine)": Rule(
        min_shared_words=0,
        min_overlap=0.0,
        identifiers="off",
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
        "one command, two services",
        "To clear the cache in etl-pipeline, run `npm ci --legacy-peer-deps`.",
        "Before you clear the cache for tax-engine, run `npm ci --legacy-peer-deps` or the job "
        "fails with E3126.",
        False,
    ),
    (
        "one decision, two reasons",
        "For geo-lookup we chose to use Postgres advisory locks instead of Redis locks, since "
        "the team already knows it.",
        "We decided to use Postgres advisory locks instead of Redis locks for geo-lookup "
        "because it avoids float rounding errors.",
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
    parser.add_argument("--queries", type=int, default=QUESTIONS, help="generated questions")
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


def answer_rows(embedders: list[Embedder], queries: int) -> list[list[object]]:
    """Per variant, corpus and embedder: generated answers holding a merged hit, the items
    merged, and the pairs of memories merged among all (all wrong, see the module
    docstring)."""
    rows: list[list[object]] = []
    for corpus, seed in CORPORA.items():
        memories = Corpus(seed).memories(MEMORIES)
        asked = Corpus(seed + 1).queries(queries, memories)
        texts = [m.text for m in memories]
        tags = [m.tags for m in memories]
        authors = [f"member {i % AUTHORS}" for i in range(len(memories))]
        pairs = _word_pairs([Statement(text) for text in texts])
        for embedder in embedders:
            vectors = embedder.embed(texts)
            pools = [
                [i for _, i in _scores(
                    q.text, texts, tags, vectors, embedder,
                    [i for i, m in enumerate(memories) if m.project in (q.project, GLOBAL)],
                )][:POOL]
                for q in asked
            ]  # fmt: skip
            for name, rule in VARIANTS.items():
                merged_answers = merged_items = 0
                for pool in pools:
                    groups = corroborating_groups(
                        [texts[i] for i in pool], [authors[i] for i in pool], embedder,
                        limit=K, rule=rule,
                    )  # fmt: skip
                    merged = sum(len(group) - 1 for group in groups)
                    merged_answers += merged > 0
                    merged_items += merged
                merged_pairs: int | None = None  # counted only where the words alone decide
                if not rule.cosine and rule.min_shared_words >= _PAIRED:
                    merged_pairs = sum(
                        same_fact(a, b, _unused, min_cosine=embedder.min_cosine, rule=rule)
                        for a, b in pairs
                    )
                rows.append(
                    [name, embedder.name, corpus, merged_answers, merged_items, merged_pairs]
                )
    return rows


_PAIRED = 6


def _word_pairs(statements: list[Statement]) -> list[tuple[Statement, Statement]]:
    """The pairs of ``statements`` sharing at least 6 content words (the others no variant
    counted here merges, unless they are the same words, which these memories never are)."""
    holding: dict[str, list[int]] = {}
    for i, statement in enumerate(statements):
        for word in statement.content:
            holding.setdefault(word, []).append(i)
    pairs: list[tuple[Statement, Statement]] = []
    for i, statement in enumerate(statements):
        shared: dict[int, int] = {}
        for word in statement.content:
            for j in holding[word]:
                if j > i:
                    shared[j] = shared.get(j, 0) + 1
        pairs += [(statement, statements[j]) for j, n in shared.items() if n >= _PAIRED]
    return pairs


def _unused() -> float:
    raise AssertionError("the variants counted over all pairs use no cosine")


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
    tags = [tuple(f["tags"]) for f in facts]
    everyone = list(range(len(facts)))
    vectors = embedder.embed(texts)
    fact_of = {f["id"]: f.get("dup_of") or f["id"] for f in facts}
    modes: list[tuple[str, Callable[[list[int], dict[int, float]], list[list[int]]]]] = [
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
                scored = _scores(query["q"], texts, tags, vectors, embedder, everyone)
                scores = {i: score for score, i in scored}
                groups = arrange([i for _, i in scored], scores)
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


def _scores(
    query: str,
    texts: list[str],
    tags: list[tuple[str, ...]],
    vectors: np.ndarray[Any, Any],
    embedder: Embedder,
    among: list[int],
) -> list[tuple[float, int]]:
    """The texts (of ``among``) relevant to ``query`` with their scores, best first as
    recall-team ranks its hits (ties by index)."""
    terms = QueryTerms(query)
    cos = vectors @ embedder.embed_query(query)
    scored: list[tuple[float, int]] = []
    for i in among:
        score = team_score(terms, texts[i], tags[i], float(cos[i]), embedder)
        if score is not None:
            scored.append((score, i))
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    return scored


def _grouped(
    texts: list[str], facts: list[dict[str, Any]], embedder: Embedder, boost: float
) -> Callable[[list[int], dict[int, float]], list[list[int]]]:
    def arrange(order: list[int], scores: dict[int, float]) -> list[list[int]]:
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
    embedders: list[Embedder] = []
    for name in args.embedder or EMBEDDERS:
        try:
            embedders.append(get_embedder(name))
        except EmbedderUnavailable as exc:
            print(f"{name}: skipped ({exc.message})")
    data: dict[str, Any] | None = None
    if args.data.is_file():
        data = json.loads(args.data.read_text(encoding="utf-8"))
    else:
        print(f"teamdev: skipped, {args.data} not found")
    variants = list(VARIANTS)
    print("\nvariants: " + "; ".join(f"{n}. {v}" for n, v in enumerate(variants, 1)))
    if data is not None:
        facts = [f for f in data["facts"] if f["share"]]
        pairs = [row for e in embedders for row in pair_rows(facts, e)]
        print("\n== teamdev pairs of shared facts")
        headers = [
            "variant",
            "embedder",
            "dup merged",
            "wrong merges",
            "cross-owner",
            "any project",
        ]
        print(table(headers, pairs))
    print(f"\n== generated answers ({MEMORIES:,} memories, {args.queries} questions, {POOL} hits)")
    headers = ["variant", "embedder", "corpus", "answers with a merge", "items merged", "pairs"]
    print(table(headers, answer_rows(embedders, args.queries)))
    print("\n== contrast pairs (written here); one mark per variant, M = merged")
    contrasts = [row for e in embedders for row in contrast_rows(e)]
    print(table(["pair", "embedder", "truth", "cosine", "variants", "recall-team"], contrasts))
    if data is not None:
        for embedder in embedders:
            print(f"\n== teamdev ranking, {embedder.name}: first {K} hits over the shared facts")
            headers = ["queries", "hits", "hit@1", "hit@5", "MRR", "facts in 5", "abstained"]
            print(table(headers, ranking_rows(data, facts, embedder)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
