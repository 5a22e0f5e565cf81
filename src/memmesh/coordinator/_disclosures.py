"""The disclosure log: which member was served which author's item by a search, and when.

One row per item served to an asker other than its author: the time, the asker's key, the
author's key and the item id, never the query. The log is bounded: beyond
:data:`MAX_DISCLOSURES` rows, the oldest rows of the (author, asker) pair that has the most are
dropped, so that a member who searches without end pushes out only what was logged of its own
searches of that author, never what any author was told about anyone else. An author reads the
rows of its own items only (:meth:`DisclosureLog.entries` takes the author's key).

Searches must stay fast, so :class:`DisclosureLog` keeps new rows in memory and writes them in
one transaction at most once a second (and when it is closed). It is a best-effort log: a
crash loses the rows of the last second or so, and another worker process's rows of that
second are not listed until it has written them.
"""

import logging
import threading
from collections.abc import Callable, Iterable
from typing import NamedTuple

from memmesh.local import Schema, Transaction
from memmesh.local.errors import StoreError
from memmesh.local.store import Store
from memmesh.net.limits import shares_to_drop

__all__ = ["DISCLOSURES_SCHEMA", "FLUSH_EVERY", "MAX_DISCLOSURES", "DisclosureLog", "Row"]

_V1 = """
CREATE TABLE coord_disclosures (
    id          INTEGER PRIMARY KEY,
    served_at   REAL NOT NULL,
    asker_key   TEXT NOT NULL,
    author_key  TEXT NOT NULL,
    item_id     TEXT NOT NULL
);
CREATE INDEX coord_disclosures_author ON coord_disclosures (author_key, id);
"""

# The rows of one (author, asker) pair, oldest first: what a flood evicts.
_V2 = """
CREATE INDEX coord_disclosures_pair ON coord_disclosures (author_key, asker_key, id);
"""

DISCLOSURES_SCHEMA = Schema(owner="disclosures", migrations=(_V1, _V2))
MAX_DISCLOSURES = 100_000
FLUSH_EVERY = 1.0
_log = logging.getLogger("memmesh.coordinator")


class Row(NamedTuple):
    """One item served to one asker."""

    served_at: float
    asker_key: str
    author_key: str
    item_id: str


class DisclosureLog:
    """The disclosure rows of one coordinator process, written in batches.

    * ``store`` - the coordinator's store, whose file holds the table.
    * ``clock`` - the time rows are stamped with.
    * ``limit`` - most rows kept (:data:`MAX_DISCLOSURES`).
    * ``every`` - seconds rows may wait in memory before they are written (:data:`FLUSH_EVERY`).
    """

    def __init__(
        self,
        store: Store,
        *,
        clock: Callable[[], float],
        limit: int = MAX_DISCLOSURES,
        every: float = FLUSH_EVERY,
    ) -> None:
        store.migrate(DISCLOSURES_SCHEMA)
        self._store = store
        self._clock = clock
        self._limit = limit
        self._every = every
        self._pending: list[Row] = []
        self._lock = threading.Lock()
        self._writing = threading.RLock()
        self._timer: threading.Timer | None = None
        self._closed = False

    def record(self, asker_key: str, served: Iterable[tuple[str, str]]) -> None:
        """Note that ``asker_key`` was just served each (author key, item id) of ``served``;
        the asker's own items are not disclosures."""
        now = self._clock()
        rows = [Row(now, asker_key, author, item) for author, item in served if author != asker_key]
        if not rows:
            return
        with self._lock:
            if self._closed:
                return
            self._pending += rows
            if self._timer is None:
                self._timer = threading.Timer(self._every, self.flush)
                self._timer.daemon = True
                self._timer.start()

    def flush(self) -> None:
        """Write every row kept in memory, then drop rows beyond the limit (see the module
        docstring)."""
        # Rows are taken under the short lock and written under the other: a search that
        # records rows meanwhile never waits for the write and its sync.
        with self._writing:
            with self._lock:
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
                rows, self._pending = self._pending, []
                if not rows or self._closed:
                    return
            try:
                with self._store.transaction() as tx:
                    tx.executemany(
                        "INSERT INTO coord_disclosures (served_at, asker_key, author_key, item_id)"
                        " VALUES (?, ?, ?, ?)",
                        rows,
                    )
                    _evict(tx, self._limit)
            except StoreError as exc:
                # Best effort: a search never fails for its disclosure rows.
                _log.warning("%d disclosure rows were not written: %s", len(rows), exc)

    def close(self) -> None:
        """Write what is kept in memory; rows recorded later are dropped."""
        with self._writing:
            self.flush()
            with self._lock:
                self._closed = True

    def entries(
        self, author_key: str, item_id: str | None, limit: int, per_asker: int | None = None
    ) -> list[Row]:
        """Up to ``limit`` rows of ``author_key``'s items (``item_id``: that one only), newest
        first, at most ``per_asker`` of one asker's, including this process's rows not yet
        written."""
        self.flush()
        with self._store.reader() as tx:
            rows = tx.execute(
                "SELECT served_at, asker_key, author_key, item_id FROM (SELECT *, row_number() "
                "OVER (PARTITION BY asker_key ORDER BY id DESC) AS nth FROM coord_disclosures "
                "WHERE author_key = ? AND (? IS NULL OR item_id = ?)) "
                "WHERE nth <= ? ORDER BY id DESC LIMIT ?",
                (author_key, item_id, item_id, per_asker or limit, limit),
            ).fetchall()
        return [Row(float(r[0]), r[1], r[2], r[3]) for r in rows]


def _evict(tx: Transaction, limit: int) -> None:
    """Drop rows beyond ``limit``, each one the oldest of the pair that has the most then."""
    (count,) = tx.execute("SELECT count(*) FROM coord_disclosures").fetchone()
    if count <= limit:
        return
    sizes = tx.execute(
        "SELECT count(*), author_key, asker_key FROM coord_disclosures "
        "GROUP BY author_key, asker_key"
    ).fetchall()
    pairs = [(int(n), (author, asker)) for n, author, asker in sizes]
    for (author, asker), drop in shares_to_drop(pairs, limit).items():
        tx.execute(
            "DELETE FROM coord_disclosures WHERE id IN (SELECT id FROM coord_disclosures "
            "WHERE author_key = ? AND asker_key = ? ORDER BY id LIMIT ?)",
            (author, asker, drop),
        )
