"""Hybrid recall: an exact cosine scan fused with FTS5 BM25, scoped, gated and re-ranked.

1. Candidates come from both halves: the best cosines over the in-process matrix and the best
   BM25 matches of the query's content words (each quoted, so FTS syntax in a query is only
   text). Exact tokens such as ``E1234`` or ``node-gyp`` are searched as phrases, which is how
   they are found even when their cosine is low.
2. Relevance is ``W_VECTOR * cosine + W_LEXICAL * bm25 / best_bm25``, plus ``W_EXACT`` when
   the item holds one of the query's exact tokens verbatim.
3. A candidate counts only when it passes an absolute gate: the embedder's ``min_cosine``,
   or a quarter of the query's content words, or one of its exact tokens. With no candidate
   left, recall abstains.
4. Items whose track record is at or below :data:`memmesh.local.outcomes.EXCLUDE_AT` are left
   out; the rest are multiplied by :func:`memmesh.local.outcomes.rank_factor`.
"""

import concurrent.futures
import json
import sqlite3
import threading
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Literal

import msgspec
import numpy as np
import numpy.typing as npt

from memmesh import text as _text
from memmesh.embed import unit_vector
from memmesh.local import journal, outcomes
from memmesh.local._rows import item_of, outcome_score_of
from memmesh.local.errors import InvalidInput
from memmesh.local.items import GLOBAL, MAX_K, MAX_TEXT_BYTES, Item, check_name

if TYPE_CHECKING:
    from memmesh.local._lexicon import LexiconView
    from memmesh.local.store import Store

__all__ = [
    "MAX_K",
    "MIN_COVERAGE",
    "W_EXACT",
    "W_LEXICAL",
    "W_VECTOR",
    "Hit",
    "Mode",
    "Recall",
    "recall",
    "scope_of",
    "scope_token",
]

Mode = Literal["hybrid", "lexical", "vector"]
W_VECTOR = 0.4
W_LEXICAL = 0.6
# Sharing an exact token with the query (``node-gyp`` itself, not ``node-gyp-build``).
W_EXACT = 0.2
MIN_COVERAGE = 0.25
_POOL = 50
# Worker threads run the BM25 half of recalls beside the vector half in the caller.
_LEXICAL_WORKERS = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="bm25")
# Benchmarks switch this off to measure the gain (docs/benchmarks.md).
PARALLEL_HALVES = True
_MAX_QUERY_TERMS = 32


class _Running:
    """How many recalls this process is running: ``with`` it around one."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        with self._lock:
            self._count += 1

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self._count -= 1

    def alone(self) -> bool:
        """Whether the calling recall is the only one running."""
        return self._count <= 1


_running = _Running()


class Hit(msgspec.Struct, frozen=True, kw_only=True):
    """One recalled item with the parts of its score."""

    item: Item
    score: float
    cosine: float
    lexical: float


class Recall(msgspec.Struct, frozen=True, kw_only=True):
    """The answer to one recall: ranked hits, or an abstention."""

    query: str
    hits: tuple[Hit, ...]
    abstained: bool
    projects: tuple[str, ...]
    mode: Mode
    latency_ms: float


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
) -> Recall:
    """The ``k`` most relevant active items for ``query`` in ``project`` plus global.

    ``mode`` picks the fused ranking or one half alone (used by benchmarks and by callers
    whose query vector is not comparable). ``record`` writes the recall to the journal.
    ``query_vector`` is the query already embedded by this store's embedder (a caller that
    embedded once for several stores passes it). ``restrict`` limits the candidates to those
    item ids (a peer answers only from its published items).
    """
    started = time.perf_counter()
    clean = query.strip()
    if not clean:
        raise InvalidInput("the query is empty")
    if len(clean.encode("utf-8", errors="surrogatepass")) > MAX_TEXT_BYTES:
        raise InvalidInput(f"the query is longer than {MAX_TEXT_BYTES} bytes")
    if not 1 <= k <= MAX_K:
        raise InvalidInput(f"k must be between 1 and {MAX_K}, not {k}")
    projects = scope_of(check_name(project, "project"))
    query_tokens = set(_text.tokens(clean))
    hits: list[Hit] = []
    if query_tokens:
        hits = _ranked(store, clean, query_tokens, projects, k, mode, query_vector, restrict)
    latency = (time.perf_counter() - started) * 1000
    if record:
        with store._db.write() as conn:
            journal.log(
                conn, store.clock(), "recall", None,
                latency_ms=round(latency, 3), hits=len(hits), abstained=not hits, mode=mode,
            )  # fmt: skip
    return Recall(
        query=clean,
        hits=tuple(hits),
        abstained=not hits,
        projects=tuple(projects),
        mode=mode,
        latency_ms=latency,
    )


def _ranked(
    store: "Store",
    query: str,
    query_tokens: set[str],
    projects: list[str],
    k: int,
    mode: Mode,
    query_vector: npt.NDArray[np.floating[Any]] | None,
    restrict: Collection[str] | None,
) -> list[Hit]:
    pool = max(_POOL, 4 * k)
    if query_vector is not None:
        query_vector = unit_vector(query_vector, store.embedder.dim)
    if query_vector is None:
        query_vector = store.embedder.embed_query(query)
    with _running, store.searching() as conn:
        only = _seqs_of(conn, restrict) if restrict is not None else None
        if only == []:
            return []
        with store.index.lock:
            vectors = store.index.vectors.view()
            words = store.index.lexicon.view() if store.index.lexicon is not None else None
        # The two halves run at once when FTS5 ranks: SQLite and numpy both release the GIL,
        # so BM25 on a worker thread overlaps the matrix product here (see
        # docs/benchmarks.md). Only when no other recall is running, though: then the cores
        # are busy already, and the extra thread would only add hand-offs of the GIL. The
        # in-memory lexicon is quicker than the hand-off.
        pending = (
            _LEXICAL_WORKERS.submit(_bm25, conn, None, query, projects, pool, only)
            if mode != "vector" and PARALLEL_HALVES and words is None and _running.alone()
            else None
        )
        try:
            vector_hits = (
                vectors.search(query_vector, projects, pool, only) if mode != "lexical" else []
            )
        finally:
            if pending is not None:
                lexical = pending.result()
        if pending is None:
            lexical = _bm25(conn, words, query, projects, pool, only) if mode != "vector" else {}
        cosines = dict(vector_hits)
        seqs = list(dict.fromkeys([*cosines, *lexical]))
        cosines.update(vectors.cosine(query_vector, [s for s in lexical if s not in cosines]))
        rows = store.index.rows_by_seq(conn, seqs, vectors.revs)
    now = store.clock()
    best_bm25 = max(lexical.values(), default=0.0)
    query_exact = _text.exact_tokens(query)
    # Coverage counts words; a compound like ``text:webhooks`` counts through its parts.
    query_words = {token for token in query_tokens if token.isalnum()} or query_tokens
    min_cosine = store.embedder.min_cosine
    # (-score, id, seq, cosine, lexical): sorting these ranks by score, then by id.
    kept: list[tuple[float, str, int, float, float]] = []
    for seq in seqs:
        row = rows.get(seq)
        if row is None or row.status != "active" or not row.text:
            continue  # gone, archived or purged since the index and the full-text search saw it
        outcome_score = outcome_score_of(row, now)
        if outcome_score <= outcomes.EXCLUDE_AT:
            continue
        cosine = cosines.get(seq, 0.0)
        lex = lexical.get(seq, 0.0) / best_bm25 if best_bm25 > 0 else 0.0
        item_exact, item_tokens = store.index.tokens_of(row)
        exact = not query_exact.isdisjoint(item_exact)
        if not _relevant(cosine >= min_cosine, exact, item_tokens, query_words):
            continue
        if mode == "hybrid":
            relevance = W_VECTOR * cosine + W_LEXICAL * lex + (W_EXACT if exact else 0.0)
        elif mode == "vector":
            relevance = cosine
        else:
            relevance = lex
        score = relevance * outcomes.rank_factor(outcome_score, row.reinforcements)
        kept.append((-score, row.id, seq, cosine, lex))
    kept.sort()
    return [
        Hit(item=item_of(rows[seq], now), score=-negative, cosine=cosine, lexical=lex)
        for negative, _, seq, cosine, lex in kept[:k]
    ]


def _relevant(close: bool, exact: bool, item_tokens: frozenset[str], query_words: set[str]) -> bool:
    """The absolute gate that lets recall abstain instead of returning the least bad items."""
    if close or exact:
        return True
    covered = len(query_words & item_tokens)
    return covered / len(query_words) >= MIN_COVERAGE


def _seqs_of(conn: sqlite3.Connection, item_ids: Collection[str]) -> list[int]:
    """Row numbers of the given item ids."""
    rows = conn.execute(
        "SELECT seq FROM items WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(item_ids)),),
    )
    return [int(seq) for (seq,) in rows]


def _bm25(
    conn: sqlite3.Connection,
    words: "LexiconView | None",
    query: str,
    projects: list[str],
    pool: int,
    only: list[int] | None,
) -> dict[int, float]:
    """BM25 (higher is better) of the best FTS5 matches among active items in scope.

    The index holds only active items, and the scope is part of the MATCH, so FTS5 scores
    only the matches in these projects. A store that keeps the index's terms in memory
    (``words``) computes the same answer there.
    """
    terms = fts_terms(query)
    if not terms:
        return {}
    scopes = [scope_token(project) for project in projects]
    if words is not None:
        return words.bm25(terms, scopes, pool, only)
    match = _any_of(terms)
    scoped = " OR ".join(f"scope : {_quoted(scope)}" for scope in scopes)
    # "+rowid": the restriction filters FTS5's matches; a plain rowid constraint would be
    # handed to FTS5, which then runs the whole query once per allowed row (50x slower).
    restriction = "AND +rowid IN (SELECT value FROM json_each(?)) " if only is not None else ""
    extra = (json.dumps(only),) if only is not None else ()
    rows = conn.execute(
        "SELECT rowid, -bm25(items_fts, 1.0, 0.5, 0.0) AS s FROM items_fts "
        f"WHERE items_fts MATCH ? {restriction}ORDER BY s DESC LIMIT ?",
        (f"({match}) AND ({scoped})", *extra, pool),
    ).fetchall()
    return {int(seq): max(float(s), 0.0) for seq, s in rows}


def scope_token(project: str) -> str:
    """The one-token form of a project name in the full-text index (see the v3 migration)."""
    return "p" + project.encode("utf-8").hex()


def fts_terms(query: str) -> list[str]:
    """The query's content words and exact tokens that a lexical search looks for."""
    terms = [w for w in _text.words(query) if w not in _text.STOPWORDS]
    terms += sorted(_text.exact_tokens(query))
    return list(dict.fromkeys(terms))[:_MAX_QUERY_TERMS]


def fts_query(query: str) -> str:
    """An FTS5 MATCH expression that ORs :func:`fts_terms`.

    Every term is a quoted string, so operators, parentheses, colons or stray quotes in the
    user's text are searched for as words and can never be a syntax error.
    """
    return _any_of(fts_terms(query))


def _any_of(terms: list[str]) -> str:
    return " OR ".join(_quoted(term) for term in terms)


def _quoted(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'
