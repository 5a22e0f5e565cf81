"""Recall's fusion settings, searched on teamdev's tuning half: each half's say, the grid.

Run from the repository root::

    .venv/bin/python bench/fusion.py                      # the default embedder
    .venv/bin/python bench/fusion.py --embedder hashing

Only the **tuning** half of teamdev is read (the split of ``bench/quality.py``); there is no
option for the other half. Quote the report half and LoCoMo with ``bench/quality.py``, once,
after the settings are fixed. Every fact is stored as ``bench/quality.py`` stores it, and each
query is recalled once as ``mem recall -k 10`` searches it, explained and without the answer's
floor and cut: that gives every candidate passing the gate with its parts as the real store
computes them (closeness, relative BM25, exact tokens, track record). Then, with no store:

1. **Each half's say.** Recall's halves already count by how much they discriminate for the
   query: a closeness is in spreads of unrelated texts, a BM25 is relative to the best one.
   Over each query's first ten candidates by each half, the median span of closeness (the
   best minus the tenth) and of relative BM25 is printed, and the lexical weight that gives the
   words the say the cosine has on the typical query: ``vector weight x span(closeness) /
   span(BM25)``.
2. **The grid.** Every setting of the vector weight, ``W_LEXICAL``, ``MIN_RELEVANCE`` and
   ``MIN_SHARE_OF_BEST`` below scores those candidates again with recall's own arithmetic
   (:func:`fused`, and the answer's floor and cut) and prints, per query type, hit@5, hit@10,
   MRR@10, the abstentions and how many hits a token query's answer holds (the cut's purpose:
   an identifier asked for is answered by its fact, not by ten), beside recall's two one-half
   rankings (``vector``, ``lexical``) on the same store. The shipped setting is replayed too,
   and checked against the real recall's answers (the exit status is 1 if they differ).
3. **The choice**, by one rule fixed before the other half or LoCoMo was run: no paraphrase
   abstained; then the most paraphrases found in the first five, then in the first ten (what
   ``mem recall -k 10`` and LoCoMo's R@10 count), then the best MRR@10; then the fewest hits
   for a token query; a tie goes to the row printed first. That setting is printed last.
"""

import argparse
import functools
import itertools
import json
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple, get_args

import local_recall
import quality
from _common import log, share, table
from memmesh.embed import DEFAULT_EMBEDDER, EMBEDDER_NAMES
from memmesh.local._explain import Parts
from memmesh.local._fusion import W_EXACT, W_LEXICAL, Weights, fused
from memmesh.local._recall import MIN_RELEVANCE, MIN_SHARE_OF_BEST, Mode, _answer, recall
from memmesh.local.items import GLOBAL
from memmesh.local.store import Store

VECTOR_WEIGHTS = (0.2, 0.25, 0.3, 0.4, 0.5)
LEXICAL_WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7, 1.0)
FLOORS = (0.6, 0.7, 0.8)
SHARES = (0.5, 0.4, 0.3)
# A half's span is measured over the first ten candidates it ranks: what recall -k 10 answers.
SPAN = 10
HALF = "tune"


class Query(NamedTuple):
    """One tuning query: its type, the items that answer it, every candidate passing the gate
    (with its parts), and the hits of recall's answer and of its two one-half rankings."""

    type: str
    wanted: set[str]
    candidates: list[tuple[str, Parts]]
    hybrid: list[str]
    vector: list[str]
    lexical: list[str]


# (type, rank of the first item that answers, hits answered) for each query
Outcome = tuple[str, int | None, int]


def gather(data: dict[str, Any], embedder: str) -> tuple[list[Query], float]:
    """The tuning half's queries with their candidates; and the embedder's vector weight."""
    asked = [query for query in data["queries"] if quality.half_of(query["q"]) == HALF]
    with (
        tempfile.TemporaryDirectory(prefix="memmesh-fusion-") as home,
        Store(Path(home), embedder=embedder) as store,
    ):
        item_of, _ = quality.load_store(store, data["facts"])
        every = sorted(set(item_of.values()))
        queries = []
        for query in asked:
            wanted = {item_of[fact] for fact in query["expect"]}
            options: dict[str, Any] = {"k": quality.K, "project": GLOBAL, "record": False}
            explained = recall(
                store, query["q"], **options, explain=True, also_explain=every, answer=False
            )
            assert explained.explanation is not None
            found = [(hit.item.id, hit.parts) for hit in explained.hits if hit.parts is not None]
            found += [
                (left.item.id, left.parts)
                for left in explained.explanation.left_out
                if left.reason == "ranked_below_k"
            ]
            hits = {
                mode: [hit.item.id for hit in recall(store, query["q"], **options, mode=mode).hits]
                for mode in get_args(Mode)
            }
            queries.append(
                Query(query["type"], wanted, found, hits["hybrid"], hits["vector"], hits["lexical"])
            )
        return queries, store.embedder.vector_weight


def answered(query: Query, weights: Weights, floor: float, share: float) -> list[str]:
    """The items recall -k 10 answers with under these settings, best first."""
    kept = []
    for item, parts in query.candidates:
        relevance = fused(weights, parts.closeness, parts.lexical, bool(parts.exact_tokens))
        kept.append((-relevance * parts.factor, item, 0, parts.cosine, parts.lexical))
    kept.sort()
    hits, _, _ = _answer(kept, True, floor, share)
    return [entry[1] for entry in hits[: quality.K]]


def spans(queries: Sequence[Query]) -> tuple[float, float, int]:
    """The median span of closeness and of relative BM25 over each query's first ten
    candidates by that half, and how many queries had ten."""
    closeness, lexical = [], []
    for query in queries:
        if len(query.candidates) < SPAN:
            continue
        close = sorted((parts.closeness for _, parts in query.candidates), reverse=True)
        words = sorted((parts.lexical for _, parts in query.candidates), reverse=True)
        closeness.append(close[0] - close[SPAN - 1])
        lexical.append(words[0] - words[SPAN - 1])
    return statistics.median(closeness), statistics.median(lexical), len(closeness)


def figures(outcomes: Sequence[Outcome]) -> list[object]:
    """Paraphrase hit@5, hit@10, MRR@10 and abstained; private probes' hit@5 and MRR@10;
    token hit@5 and hits answered; noise abstained."""

    def of(kind: str) -> list[Outcome]:
        return [outcome for outcome in outcomes if outcome[0] == kind]

    def hit(kind: str, k: int) -> float:
        return share([rank is not None and rank <= k for _, rank, _ in of(kind)])

    def mrr(kind: str) -> float:
        return statistics.fmean(1 / rank if rank else 0.0 for _, rank, _ in of(kind))

    def abstained(kind: str) -> float:
        return share([hits == 0 for _, _, hits in of(kind)])

    paraphrase = [hit("paraphrase", 5), hit("paraphrase", 10), mrr("paraphrase")]
    probes = [hit("private_probe", 5), mrr("private_probe")]
    tokens = [hit("token", 5), statistics.fmean(hits for _, _, hits in of("token"))]
    return [*paraphrase, abstained("paraphrase"), *probes, *tokens, abstained("noise")]


def outcomes(queries: Sequence[Query], ranked: Callable[[Query], list[str]]) -> list[Outcome]:
    """Each query's type, first rank of an answer and hits answered, for one ranking."""
    out: list[Outcome] = []
    for query in queries:
        hits = ranked(query)
        out.append((query.type, local_recall.first_rank(hits, query.wanted), len(hits)))
    return out


def grid(
    queries: Sequence[Query], shipped: tuple[float, float, float, float]
) -> Iterable[list[object]]:
    """One row per setting of the vector weight, the lexical weight, the floor and the cut."""
    for setting in itertools.product(VECTOR_WEIGHTS, LEXICAL_WEIGHTS, FLOORS, SHARES):
        vector, lexical, floor, cut = setting
        weights = Weights(vector, lexical, W_EXACT)
        ranked = functools.partial(answered, weights=weights, floor=floor, share=cut)
        mark = "*" if setting == shipped else ""
        yield [f"{mark}{vector}", lexical, floor, cut, *figures(outcomes(queries, ranked))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=quality.TEAMDEV, help="teamdev-format JSON")
    parser.add_argument("--embedder", choices=EMBEDDER_NAMES, default=DEFAULT_EMBEDDER)
    args = parser.parse_args(argv)
    info = local_recall.machine_info(args.embedder)
    print("== memmesh fusion settings, teamdev tuning half only")
    print("  ".join(f"{key}: {value}" for key, value in info.items()))
    if not args.data.is_file():
        print(f"\n== teamdev: skipped, {args.data} not found")
        return 0
    data = json.loads(args.data.read_text(encoding="utf-8"))
    queries, vector_weight = gather(data, args.embedder)
    log(f"[{args.embedder}] {len(queries)} tuning queries gathered")
    shipped = Weights(vector_weight)
    replayed = [answered(q, shipped, MIN_RELEVANCE, MIN_SHARE_OF_BEST) for q in queries]
    agree = sum(mine == query.hybrid for mine, query in zip(replayed, queries, strict=True))
    close, words, measured = spans(queries)
    print(f"\n== each half's say ({measured} of {len(queries)} queries with {SPAN} candidates)")
    print(f"median span of the first {SPAN}: closeness {close:.2f} spreads, BM25 {words:.2f}")
    equal = vector_weight * close / words
    print(
        f"equal say at vector weight {vector_weight}: W_LEXICAL = {vector_weight} x {close:.2f}"
        f" / {words:.2f} = {equal:.2f} (shipped: {W_LEXICAL})"
    )
    print(
        f"\n== grid (* the shipped setting; replayed, it answers as recall does on {agree} of "
        f"{len(queries)} queries)"
    )
    headers = ["vector w", "W_LEXICAL", "floor", "share", "para hit@5", "para hit@10"]
    headers += ["para MRR", "para abstained", "probe hit@5", "probe MRR", "token hit@5"]
    headers += ["token hits", "noise abstained"]
    rows = [
        ["vector alone", "-", "-", "-", *figures(outcomes(queries, lambda q: q.vector))],
        ["lexical alone", "-", "-", "-", *figures(outcomes(queries, lambda q: q.lexical))],
        *grid(queries, (vector_weight, W_LEXICAL, MIN_RELEVANCE, MIN_SHARE_OF_BEST)),
    ]
    print(table(headers, rows))
    print(f"\nfirst by the rule: {' / '.join(str(cell) for cell in max(rows[2:], key=_rule)[:4])}")
    return 0 if agree == len(queries) else 1


def _rule(row: Sequence[Any]) -> tuple[bool, float, float, float, float]:
    """The choice's order (module docstring, 3.): what a grid row is ranked by."""
    hit5, hit10, mrr, abstained, _, _, _, token_hits, _ = row[4:]
    return abstained == 0, hit5, hit10, mrr, -token_hits


if __name__ == "__main__":
    sys.exit(main())
