"""What the coordinator keeps for each member key, for its operator: counted, listed, purged.

The coordinator opens one (:attr:`Coordinator.holdings`) to keep its tables and figures ready
and to check publications against past purges; ``mem coordinator items`` and ``purge`` open
one on the data folder, whether the coordinator runs or not. A purge is one write transaction
under the store's lock, like a publish: a running coordinator's in-memory indexes drop the
purged items at their next search, since every row a purge erases gets a new ``rev``.

A purge erases every item of a key, live or retracted (a live one's text, tags and vector
leave the store, search and the changes feed; a tombstone leaves the feed), so that nothing
of the key counts towards the quotas any more, and remembers the version each had
(``coord_purged``), which does a tombstone's work from then on: the key can never bring an
item back by sending it again (nor take a place by retracting it again), only publish a newer
version. The key itself is not refused: revoke it on the roster for that (``mem team
revoke``), which refuses everything it ever signed.
"""

import time
from collections.abc import Callable
from typing import Literal

import msgspec

from memmesh.coordinator import _members, _purged, _tables, _usage
from memmesh.coordinator._usage import Usage
from memmesh.coordinator.storage import CoordinatorStore, Tx
from memmesh.net.errors import NotFound
from memmesh.registry.envelopes import Envelope, Publication, Retraction, open_envelope
from memmesh.registry.errors import BadSignature
from memmesh.registry.identity import key_id, public_key_from_text

__all__ = ["FIRST_LINE", "HeldItem", "Holdings", "KeyHoldings"]

# Characters of an item's first line an operator's listing shows.
FIRST_LINE = 60


class KeyHoldings(msgspec.Struct, frozen=True, kw_only=True):
    """One key's share of the coordinator; ``name`` is its roster name, if it has one."""

    key: str
    key_id: str
    name: str
    items: int
    text_bytes: int


class HeldItem(msgspec.Struct, frozen=True, kw_only=True):
    """One item kept for a key: a live publication or a tombstone (``retracted``).

    ``text_bytes`` is its text's size (UTF-8); ``published_at`` is the time its author signed
    (publications only); ``stored_at`` when the coordinator applied it. ``first_line`` is the
    start of its text's first line (publications only; the data folder is the operator's).
    """

    item_id: str
    status: Literal["live", "retracted"]
    version: int
    text_bytes: int
    published_at: float | None
    stored_at: float
    first_line: str


class Holdings:
    """The figures, rows and purges of every key in a coordinator's store."""

    def __init__(self, store: CoordinatorStore, *, clock: Callable[[], float] = time.time) -> None:
        for schema in (
            _tables.COORDINATOR_SCHEMA,
            _members.ROSTER_SCHEMA,
            _usage.USAGE_SCHEMA,
            _purged.PURGED_SCHEMA,
        ):
            store.migrate(schema)
        with store.transaction() as tx:
            _usage.keep_counting(tx)
        self.store = store
        self._clock = clock

    def keys(self) -> list[KeyHoldings]:
        """Every key the coordinator keeps items for, the largest share first."""
        with self.store.read() as tx:
            figures = _usage.keys(tx)
            names = {m.key: m.name for m in _members.members(tx)}
        shares = [_share(key, usage, names.get(key, "")) for key, usage in figures.items()]
        return sorted(shares, key=lambda share: (-share.text_bytes, share.key))

    def find(self, *, key: str | None = None, member: str | None = None) -> str:
        """The author key that ``key`` (a key or its member id) or ``member`` (a roster
        name, key or member id) names; raises :class:`NotFound` for none."""
        with self.store.read() as tx:
            if member is not None:
                entry = _members.find(tx, member)
                if entry is None:
                    raise NotFound(f"the roster has no member {member!r}")
                return entry.key
            assert key is not None
            for held in _usage.keys(tx):
                if key in (held, _key_id(held)):
                    return held
        raise NotFound(f"the coordinator keeps no items for the key {key!r}")

    def items(self, key: str) -> list[HeldItem]:
        """Every item kept for ``key``, the oldest stored first."""
        with self.store.read() as tx:
            rows = _usage.held(tx, key)
        return [_item(row) for row in rows]

    def purge(self, key: str) -> int:
        """Erase every live publication and every tombstone of ``key`` for good; returns how
        many live publications there were."""
        with self.store.transaction() as tx:
            erased = erase_publications(self.store, tx, key, now=self._clock())
        if erased:
            self.store.scrub()  # what is left of their texts on disk, once for all of them
        return erased

    def purged(self, tx: Tx, body: Publication | Retraction) -> bool:
        """Whether a purge took this version of the body's item (or a newer one)."""
        version = _purged.version(tx, body.author_key, body.item_id)
        return version is not None and body.version <= version

    def usage(self, tx: Tx, key: str) -> tuple[Usage, Usage]:
        """What is kept for ``key`` and for every key together."""
        return _usage.of(tx, key), _usage.total(tx)


def erase_publications(
    store: CoordinatorStore, tx: Tx, key: str, *, now: float | None = None
) -> int:
    """Delete every envelope ``key`` published, in ``tx``: its live publications (their
    searchable copies lose text and vector) and its tombstones. They leave the feed and the
    key's figures; ``coord_purged`` keeps each item's version (at ``now``), so that no
    publication of it up to that version is taken again. Returns how many were live."""
    when = time.time() if now is None else now
    live = 0
    for row in _tables.drop_rows(tx, key):
        _purged.mark(tx, key, row.item_id, row.version, when)
        store.purge_copy(tx, row.copy_id)  # a tombstone's copy is blank already: no change
        if row.kind == "publication":
            live += 1
    return live


def _key_id(key: str) -> str:
    try:
        return key_id(public_key_from_text(key))
    except BadSignature:  # a key stored before keys were checked: it has no member id
        return ""


def _share(key: str, usage: Usage, name: str) -> KeyHoldings:
    return KeyHoldings(
        key=key, key_id=_key_id(key), name=name, items=usage.items, text_bytes=usage.text_bytes
    )


def _item(row: _usage.Held) -> HeldItem:
    published_at: float | None = None
    first_line = ""
    try:
        body = open_envelope(Envelope(payload=row.payload, signature=row.signature))
    except BadSignature:
        body = None
    if isinstance(body, Publication):
        published_at = body.published_at
        first_line = body.text.splitlines()[0] if body.text else ""
        first_line = first_line[:FIRST_LINE]
    return HeldItem(
        item_id=row.item_id,
        status="live" if row.kind == "publication" else "retracted",
        version=row.version,
        text_bytes=row.text_bytes,
        published_at=published_at,
        stored_at=row.applied_at,
        first_line=first_line,
    )
