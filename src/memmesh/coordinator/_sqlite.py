"""The coordinator's storage in one SQLite file, which is also its search cache.

The data folder's ``memory.db`` is a memmesh store (:class:`~memmesh.local.store.Store`): the
coordinator's tables live beside the store's own, and the searchable copy of a publication is
one of the store's items, written in the same transaction as its envelope. Several worker
processes of one host share the file (``--workers``); each keeps its own in-memory index.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from memmesh.coordinator.storage import Tables, Tx, Vector
from memmesh.embed import Embedder
from memmesh.local import Schema, Transaction
from memmesh.local.store import Store
from memmesh.net.nonces import NonceStore
from memmesh.registry.envelopes import Publication

__all__ = ["SqliteStore", "put_publication"]


class SqliteStore:
    """The coordinator's tables and search cache in ``data``/``memory.db``."""

    dialect: Final = "sqlite"

    def __init__(self, data: Path, *, embedder: str | None = None) -> None:
        self.cache = Store(
            data, embedder=embedder, author="coordinator", durable=True, lexicon=True
        )

    @property
    def home(self) -> Path:
        return self.cache.home

    @property
    def where(self) -> str:
        return str(self.cache.path)

    @property
    def embedder(self) -> Embedder:
        return self.cache.embedder

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        with self.cache.transaction() as tx:
            yield tx

    @contextmanager
    def read(self) -> Iterator[Tx]:
        with self.cache.reader() as tx:
            yield tx

    def migrate(self, tables: Tables) -> None:
        self.cache.migrate(Schema(owner=tables.owner, migrations=tables.sqlite))

    def put_copy(self, tx: Tx, copy: str, body: Publication, vector: Vector | None) -> None:
        put_publication(self.cache, copy, body, vector, _own(tx))

    def purge_copy(self, tx: Tx, copy: str) -> None:
        self.cache.purge(copy, tx=_own(tx))

    def scrub(self) -> None:
        self.cache.scrub()

    def warm(self) -> None:
        self.cache.warm()

    def follow(self) -> None:
        """The copies are written with the envelopes: the cache is never behind."""

    def nonces(self) -> NonceStore | None:
        return None

    def close(self) -> None:
        self.cache.close()


def put_publication(
    cache: Store, copy: str, body: Publication, vector: Vector | None, tx: Transaction
) -> None:
    """Put ``body`` in ``cache`` as the searchable copy ``copy``, inside ``tx`` (see
    :meth:`Store.put`); SQLite's own copies and a PostgreSQL host's cache are made alike."""
    cache.put(
        item_id=copy,
        text=body.text,
        kind=body.kind,
        project=body.project,
        tags=body.tags,
        author=body.author,
        created_at=body.published_at,
        vector=vector,
        tx=tx,
    )


def _own(tx: Tx) -> Transaction:
    """``tx`` as the store's own transaction (it gave every one of this storage's)."""
    assert isinstance(tx, Transaction), "a transaction of another storage"
    return tx
