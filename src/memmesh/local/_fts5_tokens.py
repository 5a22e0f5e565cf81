"""What the full-text index holds of a text, and its tokenizer run on a private in-memory table.

The index is fed the words of :func:`memmesh.text.words` (:func:`indexed`): folded (accents,
case and width), each run of CJK letters as its character pairs, the same segmentation as the
tokens recall's gate, the team's ranking and the hashing embedder use. The store's connection
registers it as an SQL function (:func:`register`), which the index's triggers call. FTS5
then splits that stream at its spaces (a query's compound, such as ``node-gyp``, at its
punctuation too: a phrase) and stems each word with its Porter stemmer, the stemming BM25's
weights were tuned with (recall's gate and the embedder keep :func:`memmesh.text.stem`).

The lexicon takes its terms from here, so they are what FTS5 holds, not an imitation of it:
rows are inserted into an FTS5 table with the same columns, settings and function as
``items_fts`` and read back through ``fts5vocab``, then rolled back.
"""

import os
import sqlite3
import threading
from collections.abc import Sequence
from functools import lru_cache

from memmesh import text as _text
from memmesh.local._schema import FTS_TOKENIZE, WORDS_FUNCTION

__all__ = ["forget_phrases", "indexed", "phrase_tokens", "register", "row_tokens"]


def indexed(value: str) -> str:
    """What the full-text index is given of a text (or of the tags' JSON): its words, in
    order, separated by spaces."""
    return " ".join(_text.words(value))


def register(conn: sqlite3.Connection) -> None:
    """Give ``conn`` the SQL function the full-text index's triggers call (:func:`indexed`)."""
    conn.create_function(WORDS_FUNCTION, 1, indexed, deterministic=True)


class _Tokenizer:
    """The full-text index's tokenizer, run on a private in-memory FTS5 table."""

    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        register(self._conn)
        self._conn.execute(
            f'CREATE VIRTUAL TABLE t USING fts5 (text, tags, scope, tokenize = "{FTS_TOKENIZE}")'
        )
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, instance)")
        self._lock = threading.Lock()

    def rows(self, rows: Sequence[tuple[int, str, str, str]]) -> list[tuple[str, int, str, int]]:
        """(term, seq, column, offset) of every token of ``rows`` (seq, text, tags, project),
        indexed as the ``items`` triggers index them."""
        if not rows:
            return []
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    f"INSERT INTO t (rowid, text, tags, scope) VALUES "
                    f"(?, {WORDS_FUNCTION}(?), {WORDS_FUNCTION}(?), 'p' || hex(?))",
                    rows,
                )
                return self._conn.execute("SELECT term, doc, col, offset FROM v").fetchall()
            finally:
                self._conn.execute("ROLLBACK")

    def phrase(self, text: str) -> tuple[str, ...]:
        """The tokens FTS5 makes of the quoted string ``text`` in a query, in order."""
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.execute("INSERT INTO t (rowid, text) VALUES (1, ?)", (text,))
                rows = self._conn.execute("SELECT term FROM v ORDER BY offset").fetchall()
            finally:
                self._conn.execute("ROLLBACK")
        return tuple(term for (term,) in rows)


_tokenizer: _Tokenizer | None = None
_tokenizer_lock = threading.Lock()


def _the_tokenizer() -> _Tokenizer:
    """This process's tokenizer, made at first use (a forked worker makes its own)."""
    global _tokenizer
    with _tokenizer_lock:
        if _tokenizer is None:
            _tokenizer = _Tokenizer()
        return _tokenizer


def _forget_tokenizer() -> None:
    global _tokenizer, _tokenizer_lock
    _tokenizer, _tokenizer_lock = None, threading.Lock()


# A SQLite connection must not be used on both sides of a fork.
os.register_at_fork(after_in_child=_forget_tokenizer)


def row_tokens(rows: Sequence[tuple[int, str, str, str]]) -> list[tuple[str, int, str, int]]:
    """(term, seq, column, offset) of every token of ``rows`` (seq, text, tags, project), as
    the ``items`` triggers index them into ``items_fts``."""
    return _the_tokenizer().rows(rows)


@lru_cache(maxsize=1 << 15)
def phrase_tokens(text: str) -> tuple[str, ...]:
    """The tokens FTS5 makes of the quoted string ``text`` in a query, in order; remembered,
    since the same words come back query after query."""
    return _the_tokenizer().phrase(text)


def forget_phrases() -> None:
    """Forget every phrase :func:`phrase_tokens` remembers (and so the words it was asked)."""
    phrase_tokens.cache_clear()
