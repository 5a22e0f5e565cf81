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
    TraceNotFound,
)
from memmesh.local.items import GLOBAL, KINDS, MAX_K

if TYPE_CHECKING:
    from memmesh.local._db import Transaction
    from memmesh.local._explain import Explanation, LeftOut, Parts, Reason
    from memmesh.local._item import Item
    from memmesh.local._recall import (
        MIN_CLOSENESS,
        MIN_COVERAGE,
        MIN_RELEVANCE,
        MIN_SHARE_OF_BEST,
        W_EXACT,
        W_LEXICAL,
        Hit,
        Mode,
        Recall,
        recall,
        scope_of,
    )
    from memmesh.local._replay import Replay, Then, last_trace, replay
    from memmesh.local.schema import Schema
    from memmesh.local.store import Store

__all__ = [
    "GLOBAL",
    "KINDS",
    "MAX_K",
    "MIN_CLOSENESS",
    "MIN_COVERAGE",
    "MIN_RELEVANCE",
    "MIN_SHARE_OF_BEST",
    "W_EXACT",
    "W_LEXICAL",
    "AmbiguousId",
    "CorruptDatabase",
    "DamagedVector",
    "EmbedderMismatch",
    "Explanation",
    "ForeignDatabase",
    "Hit",
    "InvalidInput",
    "Item",
    "ItemNotFound",
    "LeftOut",
    "Mode",
    "NotActive",
    "Parts",
    "Reason",
    "Recall",
    "Replay",
    "Schema",
    "SchemaTooNew",
    "Store",
    "StoreError",
    "Then",
    "TraceNotFound",
    "Transaction",
    "last_trace",
    "recall",
    "replay",
    "scope_of",
]

# The store and recall need numpy, and the item msgspec; they are imported when first asked
# for, so that light modules of this package (items, project, digest) start without them.
_LAZY = {
    "Item": "memmesh.local._item",
    "Schema": "memmesh.local.schema",
    "MIN_CLOSENESS": "memmesh.local._recall",
    "MIN_COVERAGE": "memmesh.local._recall",
    "MIN_RELEVANCE": "memmesh.local._recall",
    "MIN_SHARE_OF_BEST": "memmesh.local._recall",
    "W_EXACT": "memmesh.local._recall",
    "W_LEXICAL": "memmesh.local._recall",
    "Hit": "memmesh.local._recall",
    "Mode": "memmesh.local._recall",
    "Recall": "memmesh.local._recall",
    "recall": "memmesh.local._recall",
    "scope_of": "memmesh.local._recall",
    "Explanation": "memmesh.local._explain",
    "LeftOut": "memmesh.local._explain",
    "Parts": "memmesh.local._explain",
    "Reason": "memmesh.local._explain",
    "Replay": "memmesh.local._replay",
    "Then": "memmesh.local._replay",
    "replay": "memmesh.local._replay",
    "last_trace": "memmesh.local._replay",
    "Store": "memmesh.local.store",
    "Transaction": "memmesh.local._db",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
