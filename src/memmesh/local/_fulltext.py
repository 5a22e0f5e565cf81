"""The lexical half of recall: the query's terms, and FTS5's BM25 of the items in scope.

Every term is a quoted string in the MATCH expression, so operators, parentheses, colons or
stray quotes in the user's text are searched for as words and can never be a syntax error.
"""

import json
import sqlite3
from collections.abc import Collection
from typing import TYPE_CHECKING

from memmesh import text as _text

if TYPE_CHECKING:
    from memmesh.local._lexicon import LexiconView

__all__ = ["bm25", "fts_query", "fts_terms", "scope_token", "seqs_of"]

_MAX_QUERY_TERMS = 32


def seqs_of(conn: sqlite3.Connection, item_ids: Collection[str]) -> list[int]:
    """Row numbers of the given item ids."""
    rows = conn.execute(
        "SELECT seq FROM items WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(item_ids)),),
    )
    return [int(seq) for (seq,) in rows]


def bm25(
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
