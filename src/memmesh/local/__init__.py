"""The private local store: SQLite (WAL, one file), FTS5, vectors, journal, recall.

Nothing in this package knows about the network.
"""

from memmesh.local.errors import (
    AmbiguousId,
    CorruptDatabase,
    DamagedVector,
    EmbedderMismatch,
    ForeignDatabase,
    InvalidInput,
    ItemNotFound,
    NotActive,
    SchemaTooNew,
    StoreError,
)
from memmesh.local.items import GLOBAL, KINDS, Item
from memmesh.local.recall import Hit, Recall, recall
from memmesh.local.store import Store

__all__ = [
    "GLOBAL",
    "KINDS",
    "AmbiguousId",
    "CorruptDatabase",
    "DamagedVector",
    "EmbedderMismatch",
    "ForeignDatabase",
    "Hit",
    "InvalidInput",
    "Item",
    "ItemNotFound",
    "NotActive",
    "Recall",
    "SchemaTooNew",
    "Store",
    "StoreError",
    "recall",
]
