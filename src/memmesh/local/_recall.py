"""Hybrid recall: an exact cosine scan fused with FTS5 BM25, scoped, gated and re-ranked.

1. Candidates come from both halves: the best cosines over the in-process matrix and the best
   BM25 matches of the query's content words (each quoted, so FTS syntax in a query is only
   text). Exact tokens such as ``E1234`` or ``node-gyp`` are searched as phrases, which is how
   they are found even when their cosine is low.
2. A cosine counts in the embedder's own units: its *closeness*, how many spreads it stands
   above what two unrelated texts get from that embedder (:func:`memmesh.embed.closeness`,
   calibrated per embedder by ``bench/calibrate.py``). So every setting below means the same
   whichever embedder the store uses.
3. Relevance (:func:`memmesh.local._fusion.fused`) is ``vector_weight * max(closeness, 0) +
   W_LEXICAL * bm25 / best_bm25``, plus ``W_EXACT`` when the item holds one of the query's
   exact tokens verbatim. ``vector_weight`` is the embedder's: how much its cosine tells beyond
   the words.
4. A candidate counts only when it passes an absolute gate (:func:`_passes_gate`): a
   closeness of ``MIN_CLOSENESS``, or ``MIN_COVERAGE`` of the query's content words, or one of
   its exact tokens.
5. Items whose track record is at or below :data:`memmesh.local.outcomes.EXCLUDE_AT` are left
   out; the rest are multiplied by :func:`memmesh.local.outcomes.rank_factor`.
6. The answer (:func:`_answer`): recall abstains when even the best score is under
   ``MIN_RELEVANCE``, the one setting of abstention; otherwise it keeps the items scoring at
   least ``MIN_SHARE_OF_BEST`` of the best. A source that recall-team asks skips this step
   (``answer=False``): the asker scores its hits again in other units and answers itself.

The weights and the two answer settings were chosen on the tuning half of teamdev (see
``bench/fusion.py`` and docs/benchmarks.md, which quotes the other half and LoCoMo).

An explained recall says what each step made of every candidate (:mod:`._explain`); it ranks
exactly as a plain one does, and only it runs the extra search that finds what would match
outside the scope or the restriction.
"""

import functools
import sqlite3
import time
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import msgspec
import numpy as np
import numpy.typing as npt

from memmesh import text as _text
from memmesh.embed import Vectors, closeness, unit_vector
from memmesh.local import journal, outcomes
from memmesh.local._explain import Explanation, Miss, Parts, Reason, left_out
from memmesh.local._fulltext import bm25, scope_token, seqs_of
from memmesh.local._fusion import W_EXACT, W_LEXICAL, Weights, fused
from memmesh.local._rows import ItemRow, item_of, outcome_score_of
from memmesh.local._running import Running
from memmesh.local._workers import Workers
from memmesh.local.items import GLOBAL, MAX_K, Item, check_name, check_query
from memmesh.local.validity import held_at, in_force

if TYPE_CHECKING:
    from memmesh.local._lexicon import LexiconView
    from memmesh.local._vectors import View
    from memmesh.local.store import Store

__all__ = [
    "MAX_K",
    "MIN_CLOSENESS",
    "MIN_COVERAGE",
    "MIN_RELEVANCE",
    "MIN_SHARE_OF_BEST",
    "W_EXACT",
    "W_LEXICAL",
    "Hit",
    "Mode",
    "Recall",
    "recall",
    "scope_of",
    "scope_token",
]

Mode = Literal["hybrid", "lexical", "vector"]
# Closer than about 5 in 6 unrelated texts: the gate drops only what is plainly unrelated.
MIN_CLOSENESS = 1.0
MIN_COVERAGE = 0.25
# The best hit must reach this, or recall abstains; the rest must reach this share of it. On
# teamdev's tuning half 0.5 cut answers that either half alone ranks in its first ten, and at
# 0.3 a question naming an identifier got about four hits instead of two (bench/fusion.py).
MIN_RELEVANCE = 0.6
MIN_SHARE_OF_BEST = 0.4
_POOL = 50
# Worker threads run the BM25 half of recalls beside the vector half in the caller
# (benchmarks switch PARALLEL_HALVES off to measure the gain: docs/benchmarks.md).
_LEXICAL_WORKERS = Workers(4, "bm25")
PARALLEL_HALVES = True
_running = Running()


class Hit(msgspec.Struct, frozen=True, kw_only=True):
    """One recalled item with the parts of its score (all of them in ``parts`` when the
    recall was explained)."""

    item: Item
    score: float
    cosine: float
    lexical: float
    parts: Parts | None = None


class Recall(msgspec.Struct, frozen=True, kw_only=True):
    """The answer to one recall: ranked hits, or an abstention.

    ``trace`` is the id the journal keeps it under (a recorded recall), ``explanation`` the
    near misses and the gate (an explained one).
    """

    query: str
    hits: tuple[Hit, ...]
    abstained: bool
    projects: tuple[str, ...]
    mode: Mode
    latency_ms: float
    trace: str | None = None
    explanation: Explanation | None = None


def scope_of(project: str) -> list[str]:
    """The projects a recall in ``project`` sees: itself and ``global``."""
    return [GLOBAL] if project == GLOBAL else [project, GLOBAL]


def recall(
    store: "Store",
    query: str,
    *,
    k: int = 5,
    project: str = GLOBAL,
    mode: Mode = "hybrid",
    record: bool = True,
    query_vector: npt.NDArray[np.floating[Any]] | None = None,
    restrict: Collection[str] | None = None,
    explain: bool = False,
    also_explain: Collection[str] = (),
    answer: bool = True,
    scope: Sequence[str] | None = None,
    as_of: float | None = None,
) -> Recall:
    """The ``k`` most relevant active items for ``query`` in ``project`` plus global, or in
    the projects ``scope`` names (each as given: global only when it is among them).

    ``mode`` picks the fused ranking or one half alone (used by benchmarks and by callers
    whose query vector is not comparable). ``record`` writes the recall to the journal, with
    a trace (its query, scope and hits: :func:`memmesh.local.replay`) unless ``restrict`` is
    given. ``query_vector`` is the query already embedded by this store's embedder (a caller
    that embedded once for several stores passes it). ``restrict`` limits the candidates to
    those item ids (a peer answers only from its published items). ``explain`` gives each hit
    its :class:`Parts` and adds the best near misses (:mod:`memmesh.local._explain`), and
    those of ``also_explain`` past that cap. ``answer=False`` returns the best ``k`` that pass
    the gate, without the answer's floor and cut (step 6). ``as_of`` answers from the items
    the store held, active and in force, at that moment (:func:`memmesh.local.validity.held_at`),
    by meaning alone: the word index holds only the items active now.
    """
    started = time.perf_counter()
    clean = check_query(query, k)
    if scope is None:
        projects = scope_of(check_name(project, "project"))
    else:
        projects = [check_name(name, "project") for name in dict.fromkeys(scope)] or [GLOBAL]
    query_tokens = set(_text.tokens(clean))
    mode = "vector" if as_of is not None else mode
    hits: list[Hit] = []
    explained = None
    if query_tokens:
        hits, explained = _ranked(
            store, clean, query_tokens, projects, k, mode, query_vector, restrict,
            also_explain if explain else None, answer, as_of,
        )  # fmt: skip
    if explain and explained is None:  # a query of stopwords and punctuation only
        weights = Weights(store.embedder.vector_weight)
        nothing = _Query(set(), set(), store.embedder.unrelated, weights, mode)
        explained = _explanation(nothing, k, [], store.clock(), ())
    latency = (time.perf_counter() - started) * 1000
    trace = None
    if record:
        with store._db.write() as conn:
            trace = journal.log_recall(
                conn, store.clock(), clean, projects[0], mode, k,
                [hit.item.id for hit in hits], latency_ms=latency, traced=restrict is None,
            )  # fmt: skip
    return Recall(
        query=clean,
        hits=tuple(hits),
        abstained=not hits,
        projects=tuple(projects),
        mode=mode,
        latency_ms=latency,
        trace=trace,
        explanation=explained,
    )


class _Query(NamedTuple):
    """What every candidate of one recall is judged against."""

    exact: set[str]
    words: set[str]
    unrelated: tuple[float, float]
    weights: Weights
    mode: Mode


class _Found(NamedTuple):
    """The candidates of one search: row numbers, each one's cosine and raw BM25, and the
    query's vector."""

    seqs: list[int]
    cosines: dict[int, float]
    bm25: dict[int, float]
    vector: "npt.NDArray[np.floating[Any]] | None" = None


# (-score, id, seq, cosine, lexical): sorting these ranks by score, then by id.
_Kept = tuple[float, str, int, float, float]
# An explained recall's verdict on each candidate: why it was left out (None: it passed).
_Judged = dict[int, tuple[Reason | None, Parts]]


def _relevance(query: "_Query", close: float, lexical: float, exact: bool) -> float:
    """How relevant a candidate is, from its closeness, its BM25 relative to the best one, and
    whether it holds one of the query's exact tokens."""
    if query.mode == "vector":
        return close
    if query.mode == "lexical":
        return lexical
    return fused(query.weights, close, lexical, exact)


def _passes_gate(close: float, exact: bool, coverage: float) -> bool:
    """The absolute gate that drops what is plainly unrelated: closer to the query than
    unrelated texts are, or holding one of its exact tokens, or enough of its words."""
    return close >= MIN_CLOSENESS or exact or coverage >= MIN_COVERAGE


def _answer(
    kept: list["_Kept"], final: bool, floor: float | None = None, share: float | None = None
) -> tuple[list["_Kept"], list["_Kept"], Reason]:
    """The ranked candidates an answer keeps, those it leaves out, and why it left them.

    A hybrid answer abstains (keeps nothing: ``below_floor``) when its best score is under
    ``MIN_RELEVANCE`` (or ``floor``), and otherwise drops what scores under ``MIN_SHARE_OF_BEST``
    (or ``share``) of the best (``far_below_best``). An answer that is not ``final`` keeps them
    all: a one-half ranking's scores are in other units, and recall-team scores a source's hits
    again in its own.
    """
    if not final or not kept:
        return kept, [], "far_below_best"
    best = -kept[0][0]
    if best < (MIN_RELEVANCE if floor is None else floor):
        return [], kept, "below_floor"
    least = (MIN_SHARE_OF_BEST if share is None else share) * best
    cut = next((i for i, entry in enumerate(kept) if -entry[0] < least), None)
    if cut is None:
        return kept, [], "far_below_best"
    return kept[:cut], kept[cut:], "far_below_best"


def _ranked(
    store: "Store",
    query: str,
    query_tokens: set[str],
    projects: list[str],
    k: int,
    mode: Mode,
    query_vector: npt.NDArray[np.floating[Any]] | None,
    restrict: Collection[str] | None,
    explain: Collection[str] | None,
    answer: bool,
    as_of: float | None = None,
) -> tuple[list[Hit], Explanation | None]:
    """The hits; with ``explain`` (the item ids always to explain), their explanation too."""
    pool = max(_POOL, 4 * k)
    if query_vector is not None:
        query_vector = unit_vector(query_vector, store.embedder.dim)
    wide, elsewhere = _Found([], {}, {}), []
    with _running, store.searching() as conn:
        only = seqs_of(conn, restrict) if restrict is not None else None
        if as_of is not None:
            held = held_at(conn, as_of, projects)
            only = held if only is None else sorted(set(held) & set(only))
        if only == [] and explain is None:
            return [], None
        with store.index.lock:
            vectors = store.index.vectors.view()
            words = store.index.lexicon.view() if store.index.lexicon is not None else None
        embed = store.embedder.embed_query if query_vector is None else query_vector
        found = _search(conn, vectors, words, query, embed, projects, pool, mode, only, as_of)
        if explain is not None:
            # What would match in any project, without the restriction: only when explaining.
            read = embed if found.vector is None else found.vector
            wide = _search(conn, vectors, words, query, read, [*vectors.blocks], pool, mode,
                           None, parallel=False)  # fmt: skip
            seen = set(found.seqs)
            elsewhere = [seq for seq in wide.seqs if seq not in seen]
        rows = store.index.rows_by_seq(conn, found.seqs + elsewhere, vectors.revs)
    now = store.clock()
    # Coverage counts words; a compound like ``text:webhooks`` counts through its parts.
    query_words = {token for token in query_tokens if token.isalnum()} or query_tokens
    judge = _Query(
        _text.exact_tokens(query), query_words, store.embedder.unrelated,
        Weights(store.embedder.vector_weight), mode,
    )  # fmt: skip
    judged: _Judged | None = {} if explain is not None else None
    kept = _judge(store, judge, found, found.seqs, rows, now, judged, as_of)
    kept.sort()
    kept, dropped, dropped_why = _answer(kept, answer and mode == "hybrid")
    hits = [
        Hit(item=item_of(rows[seq], now), score=-negative, cosine=cosine, lexical=lex,
            parts=judged[seq][1] if judged is not None else None)
        for negative, _, seq, cosine, lex in kept[:k]
    ]  # fmt: skip
    if judged is None or explain is None:
        return hits, None
    misses: list[Miss] = [
        (reason, parts, rows[seq], None) for seq, (reason, parts) in judged.items() if reason
    ]
    misses += [
        ("ranked_below_k", judged[seq][1], rows[seq], rank)
        for rank, (_, _, seq, _, _) in enumerate(kept[k:], start=k + 1)
    ]
    misses += [(dropped_why, judged[seq][1], rows[seq], None) for _, _, seq, _, _ in dropped]
    # Would match, but outside the scope, or in it but not among the items ``restrict`` allows.
    outside: _Judged = {}
    _judge(store, judge, wide, elsewhere, rows, now, outside)
    allowed = set(only) if only is not None else set()
    for seq, (reason, parts) in outside.items():
        if reason is None and rows[seq].project not in projects:
            misses.append(("out_of_scope", parts, rows[seq], None))
        elif reason is None and restrict is not None and seq not in allowed:
            misses.append(("withheld", parts, rows[seq], None))
    return hits, _explanation(judge, k, misses, now, explain)


def _search(
    conn: sqlite3.Connection,
    vectors: "View",
    words: "LexiconView | None",
    query: str,
    query_vector: "npt.NDArray[np.floating[Any]] | Callable[[str], Vectors]",
    projects: list[str],
    pool: int,
    mode: Mode,
    only: list[int] | None,
    as_of: float | None = None,
    *,
    parallel: bool = True,
) -> _Found:
    """The candidates of both halves among active items of ``projects`` (and ``only``);
    ``query_vector`` is the query's, or what embeds it (while BM25 runs on its worker)."""
    # The two halves run at once when FTS5 ranks: SQLite and numpy both release the GIL,
    # so BM25 on a worker thread overlaps the matrix product here (see
    # docs/benchmarks.md). Only when no other recall is running, though: then the cores
    # are busy already, and the extra thread would only add hand-offs of the GIL. The
    # in-memory lexicon is quicker than the hand-off.
    pending = (
        _LEXICAL_WORKERS.submit(functools.partial(bm25, conn, None, query, projects, pool, only))
        if mode != "vector" and parallel and PARALLEL_HALVES and words is None and _running.alone()
        else None
    )
    try:
        if callable(query_vector):  # the encoder reads the query while BM25 runs
            query_vector = query_vector(query)
        vector_hits = (
            vectors.search(query_vector, projects, pool, only, every_status=as_of is not None)
            if mode != "lexical"
            else []
        )
    finally:
        if pending is not None:  # the worker is done with the connection before this goes on
            pending.wait()
    if pending is not None:
        lexical = pending.result()
    else:
        lexical = bm25(conn, words, query, projects, pool, only) if mode != "vector" else {}
    cosines = dict(vector_hits)
    seqs = list(dict.fromkeys([*cosines, *lexical]))
    cosines.update(vectors.cosine(query_vector, [s for s in lexical if s not in cosines]))
    return _Found(seqs, cosines, lexical, query_vector)


def _judge(
    store: "Store",
    query: _Query,
    found: _Found,
    seqs: list[int],
    rows: dict[int, ItemRow],
    now: float,
    judged: _Judged | None,
    as_of: float | None = None,
) -> list[_Kept]:
    """The candidates among ``seqs`` that pass the gate and their track record, unsorted;
    with ``judged``, the verdict on every candidate and its parts go there."""
    best_bm25 = max(found.bm25.values(), default=0.0)
    kept: list[_Kept] = []
    for seq in seqs:
        row = rows.get(seq)
        if row is None or (row.status != "active" and as_of is None) or not row.text:
            continue  # gone, archived or purged since the index and the full-text search saw it
        outcome_score = outcome_score_of(row, now)
        excluded = outcome_score <= outcomes.EXCLUDE_AT
        lapsed = not in_force(row.valid_from, row.valid_until, now if as_of is None else as_of)
        if (excluded or lapsed) and judged is None:
            continue
        cosine = found.cosines.get(seq, 0.0)
        raw = found.bm25.get(seq, 0.0)
        lex = raw / best_bm25 if best_bm25 > 0 else 0.0
        item_exact, item_tokens = store.index.tokens_of(row)
        exact = not query.exact.isdisjoint(item_exact)
        covered = len(query.words & item_tokens)
        close = closeness(cosine, query.unrelated)
        passes = _passes_gate(close, exact, covered / len(query.words))
        if not passes and judged is None:
            continue
        relevance = _relevance(query, close, lex, exact)
        factor = outcomes.rank_factor(outcome_score, row.reinforcements)
        if passes and not excluded and not lapsed:
            kept.append((-relevance * factor, row.id, seq, cosine, lex))
        if judged is not None:
            reason: Reason | None = None if passes else "below_gate"
            reason = "outcome_excluded" if excluded else reason
            judged[seq] = "not_in_force" if lapsed else reason, Parts(
                cosine=cosine, closeness=close, bm25=raw, lexical=lex,
                exact_tokens=tuple(sorted(query.exact & item_exact)),
                exact_bonus=relevance - _relevance(query, close, lex, False),
                covered=covered, words=len(query.words),
                relevance=relevance, factor=factor, score=relevance * factor,
            )  # fmt: skip
    return kept


def _explanation(
    query: _Query, k: int, misses: list[Miss], now: float, keep: Collection[str]
) -> Explanation:
    """The gate and weights in force, and the near misses (:func:`left_out`)."""
    return Explanation(
        unrelated=query.unrelated,
        min_closeness=MIN_CLOSENESS,
        min_coverage=MIN_COVERAGE,
        min_relevance=MIN_RELEVANCE,
        min_share_of_best=MIN_SHARE_OF_BEST,
        weights=query.weights._asdict(),
        exclude_at=outcomes.EXCLUDE_AT,
        query_words=tuple(sorted(query.words)),
        query_exact=tuple(sorted(query.exact)),
        k=k,
        left_out=left_out(misses, now, keep),
    )
