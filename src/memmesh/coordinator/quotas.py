"""How much the coordinator stores for each member key and for the whole team.

Each item a key publishes costs the coordinator memory for as long as it is kept: its vector
and row in the vector index, and its words in the lexicon (about 9 bytes per byte of text
when every word is new, docs/operations.md "Memory and quotas"). A key's items are its live
publications and its tombstones (a retracted item keeps its place until a purge, so that it
never comes back); its bytes are the UTF-8 bytes of its live publications' text. A publish
that would take the key or the team past a limit is refused whole before anything is stored
(:class:`~memmesh.coordinator.errors.QuotaExceeded`, 413); one that adds nothing (a new
version no longer than the last, a duplicate) always goes through. A retraction adds an item
only for an id the key never published here, and then only where there is room (else that
one retraction is ``stale``: see ``Coordinator._unkept``). The limits are
:class:`memmesh.net.quotas.Quotas`, `mem coordinator serve`'s ``--member-items`` and so on.
"""

import msgspec

from memmesh.coordinator._tables import Stored
from memmesh.coordinator._usage import Usage
from memmesh.coordinator.errors import QuotaExceeded
from memmesh.net.quotas import Quotas
from memmesh.registry.envelopes import Publication

__all__ = ["added", "check"]


def check(quotas: Quotas, member: Usage, team: Usage, adding: Usage) -> None:
    """Raise :class:`QuotaExceeded` if ``adding`` takes the member (holding ``member``) or the
    team (``team``) past ``quotas``; a figure that does not grow is never refused."""
    limits = (
        ("member", member, quotas.member_items, quotas.member_bytes),
        ("team", team, quotas.total_items, quotas.total_bytes),
    )
    for scope, held, items, size in limits:
        if adding.items > 0 and held.items + adding.items > items:
            raise QuotaExceeded(scope, "items", held.items, adding.items, items)
        if adding.text_bytes > 0 and held.text_bytes + adding.text_bytes > size:
            raise QuotaExceeded(scope, "bytes", held.text_bytes, adding.text_bytes, size)


def added(current: Stored | None, body: Publication) -> Usage:
    """What storing ``body`` over what is stored for its item (``current``) adds to its
    author's share: an item if there was none, and the growth of its text (may be negative)."""
    had = 0
    if current is not None and current.kind == "publication":
        had = len(msgspec.json.decode(current.payload, type=_Text).text.encode())
    return Usage(items=0 if current else 1, text_bytes=len(body.text.encode()) - had)


class _Text(msgspec.Struct, frozen=True):
    """The text of a stored publication's signed payload (the rest is not needed here)."""

    text: str
