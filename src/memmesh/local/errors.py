"""Errors of the private local store.

MemmeshError
└── StoreError
    ├── InvalidInput          text, kind, project or tag refused (exit 2)
    ├── ItemNotFound          no item with that id or id prefix
    ├── AmbiguousId           an id prefix matches several items, named (exit 2)
    ├── CandidateNotFound     no inbox candidate with that id or id prefix
    ├── NotPending            the inbox candidate was accepted or rejected already
    ├── InboxFull             the inbox holds as many pending candidates as it keeps
    ├── NotActive             the item is archived or superseded
    ├── NotRestorable         unforget of an item that was not forgotten, or cannot come back
    ├── CorruptDatabase       the store file is damaged or not SQLite
    ├── ForeignDatabase       a SQLite file that some other program owns
    ├── SchemaTooNew          written by a newer memmesh
    ├── EmbedderMismatch      the store's vectors come from another embedder
    ├── DamagedVector         a vector is not the size the embedder makes
    ├── StoreFull             the disk had no room for a write; nothing was written (507)
    ├── StoreLocked           another process held the store's lock too long
    ├── HomeNotCreated        the memmesh home folder cannot be made
    ├── TraceNotFound         no recall trace with that id (only the last ones are kept)
    ├── BadExport             an import file that is not a sound export, its line named (exit 2)
    └── RestoreRefused        a file restore will not put in place; nothing was replaced
"""

from memmesh.errors import ExitCode, MemmeshError

__all__ = [
    "AmbiguousId",
    "BadExport",
    "CandidateNotFound",
    "CorruptDatabase",
    "DamagedVector",
    "EmbedderMismatch",
    "ForeignDatabase",
    "HomeNotCreated",
    "InboxFull",
    "InvalidInput",
    "ItemNotFound",
    "NotActive",
    "NotPending",
    "NotRestorable",
    "RestoreRefused",
    "SchemaTooNew",
    "StoreError",
    "StoreFull",
    "StoreLocked",
    "TraceNotFound",
]


class StoreError(MemmeshError):
    """The local store refused or failed an operation."""


class InvalidInput(StoreError):
    """A value given to the store is not acceptable; nothing was changed."""

    exit_code = ExitCode.USAGE
    status = 400


class ItemNotFound(StoreError):
    """No item has this id (or id prefix)."""

    status = 404

    def __init__(self, item_id: str) -> None:
        super().__init__(f"no item with id {item_id!r}")
        self.item_id = item_id


class AmbiguousId(StoreError):
    """An id prefix names more than one item; the message lists the first ten.

    ``count`` items have it; ``candidates`` describes the first of them in id order
    (``01J9ZC4XQM gotcha "its first words…"``).
    """

    exit_code = ExitCode.USAGE
    status = 400

    def __init__(
        self, prefix: str, count: int, candidates: tuple[str, ...] = (), *, what: str = "items"
    ) -> None:
        named = " | ".join(candidates)
        if count > len(candidates) and candidates:
            named += f" | and {count - len(candidates)} more"
        super().__init__(
            f"id prefix {prefix!r} matches {count} {what}; give more characters"
            + (f": {named}" if named else "")
        )
        self.prefix = prefix
        self.count = count
        self.candidates = candidates


class CandidateNotFound(StoreError):
    """No candidate in the inbox has this id (or id prefix)."""

    status = 404

    def __init__(self, candidate_id: str) -> None:
        super().__init__(f"no inbox candidate with id {candidate_id!r} (`mem inbox` lists them)")
        self.candidate_id = candidate_id


class NotPending(StoreError):
    """The inbox candidate was accepted or rejected already; only pending ones change."""

    status = 409

    def __init__(self, candidate_id: str, status: str, item_id: str | None) -> None:
        became = f" as item {item_id}" if item_id else ""
        super().__init__(f"inbox candidate {candidate_id} was {status} already{became}")
        self.candidate_id = candidate_id
        self.candidate_status = status
        self.item_id = item_id


class InboxFull(StoreError):
    """The inbox holds ``limit`` pending candidates; nothing more is added until some are
    accepted or rejected."""

    status = 507

    def __init__(self, limit: int, adding: int) -> None:
        super().__init__(
            f"the inbox holds {limit:,} pending candidates, as many as it keeps: nothing of "
            f"these {adding:,} was added; accept or reject some first (`mem inbox`)"
        )
        self.limit = limit
        self.adding = adding


class NotActive(StoreError):
    """The operation needs an active item, and this one is archived or superseded."""

    status = 409

    def __init__(self, item_id: str, status: str) -> None:
        super().__init__(f"item {item_id} is {status}; only active items can be changed")
        self.item_id = item_id
        self.item_status = status


class NotRestorable(StoreError):
    """The item cannot be brought back to active; the message says why.

    It is active, it was revised rather than forgotten, its text was erased, or an active item
    says the same (``reason``).
    """

    status = 409

    def __init__(self, item_id: str, reason: str) -> None:
        super().__init__(f"item {item_id} {reason}")
        self.item_id = item_id
        self.reason = reason


class CorruptDatabase(StoreError):
    """The store file cannot be read as a memmesh database."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path} is not a usable memmesh store: {reason}")
        self.path = path


class ForeignDatabase(StoreError):
    """The file is a SQLite database that memmesh did not create."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"{path} is a SQLite database that memmesh did not create; "
            "refusing to touch it (choose another --home)"
        )
        self.path = path


class SchemaTooNew(StoreError):
    """The store was written by a newer memmesh than this one."""

    def __init__(self, path: str, found: int, supported: int, *, owner: str = "store") -> None:
        tables = "" if owner == "store" else f"its {owner} tables have "
        super().__init__(
            f"{path} {tables or 'has '}schema version {found}, newer than this memmesh "
            f"supports ({supported}); upgrade memmesh"
        )
        self.found = found
        self.supported = supported
        self.owner = owner


class EmbedderMismatch(StoreError):
    """The store's vectors were written by a different embedder than the one requested."""

    def __init__(self, stored: str, requested: str) -> None:
        super().__init__(
            f"this store's vectors come from embedder {stored!r}, not {requested!r}; "
            "vectors from different embedders cannot be mixed "
            "(run `mem reindex` to rebuild the vectors, or `mem reindex --embedder NAME` to "
            "switch the store)"
        )
        self.stored = stored
        self.requested = requested


class DamagedVector(StoreError):
    """A stored vector is not the size the store's embedder makes; a reindex rebuilds it."""

    def __init__(self, seq: int) -> None:
        super().__init__(
            f"item #{seq} has a damaged vector; run `mem reindex` to rebuild the vectors"
        )
        self.seq = seq


class StoreFull(StoreError):
    """The disk had no room for a write: nothing of it was written, the rest is intact.

    A limit on the file's size counts as a full disk too. The message names no file, since a
    daemon's answer carries it; ``path`` does.
    """

    status = 507

    def __init__(self, path: str) -> None:
        super().__init__(
            "the disk holding the store is full: nothing was written; free some space and try again"
        )
        self.path = path


class StoreLocked(StoreError):
    """Another process held the store's write lock for longer than the store waits."""

    def __init__(self, path: str, seconds: float) -> None:
        super().__init__(f"{path} stayed locked by another process for {seconds:.0f}s; try again")
        self.path = path
        self.seconds = seconds


class HomeNotCreated(StoreError):
    """The memmesh home folder does not exist and cannot be made."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"cannot create the memmesh home {path}: {reason}")
        self.path = path
        self.reason = reason


class TraceNotFound(StoreError):
    """No kept recall trace has this id: unknown, or older than the last ones kept.

    Only the last ``kept`` recalls keep a trace.
    """

    status = 404

    def __init__(self, trace_id: str, kept: int) -> None:
        super().__init__(f"no recall trace {trace_id!r}: only the last {kept:,} recalls keep one")
        self.trace_id = trace_id
        self.kept = kept


class BadExport(StoreError):
    """A file given to import is not a sound memmesh export: ``line`` (1 is the header; 0:
    the file cannot be read) says where, ``problem`` what. Nothing was imported."""

    exit_code = ExitCode.USAGE
    status = 400

    def __init__(self, path: str, line: int, problem: str) -> None:
        where = f"{path} line {line}" if line else path
        super().__init__(f"{where}: {problem}; nothing was imported")
        self.path = path
        self.line = line
        self.problem = problem


class RestoreRefused(StoreError):
    """A file `restore` was given cannot replace the store (``reason``: not a memmesh store,
    a newer schema, a failed integrity check, the store in use); nothing was replaced."""

    status = 409

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path} was not restored: {reason}; nothing was replaced")
        self.path = path
        self.reason = reason
