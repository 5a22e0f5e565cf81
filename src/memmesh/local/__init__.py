"""The private local store: SQLite (WAL, one file), FTS5, vectors, journal, recall.

Nothing in this package knows about the network.
"""

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
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

# The store and recall need numpy; they are imported when first asked for, so that light
# modules of this package (items, project, digest) start without it.
_LAZY = {
    "Hit": "memmesh.local.recall",
    "Recall": "memmesh.local.recall",
    "recall": "memmesh.local.recall",
    "Store": "memmesh.local.store",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
