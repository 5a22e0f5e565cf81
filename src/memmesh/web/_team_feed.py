"""What the team shared and who was served what: the feed (as `mem team feed` reads it) and
the disclosures of the member's own items (as `mem team disclosures` reads them).

Both are calls to the coordinator (the disclosures also read the member's own peer daemon's
log); every text in them comes from the network, and the templates show it as text.
"""

from pathlib import Path

import msgspec

from memmesh.local.errors import ItemNotFound
from memmesh.local.items import check_name
from memmesh.local.store import Store
from memmesh.policy import Policy
from memmesh.registry.identity import Identity
from memmesh.team.disclosures import Disclosed, my_disclosures
from memmesh.team.feed import Feed, team_feed
from memmesh.web.errors import BadForm

__all__ = [
    "DISCLOSURES_MOST",
    "FEED_MOST",
    "Disclosures",
    "FeedView",
    "disclosures",
    "feed",
    "number",
]

FEED_MOST = 500  # as `mem team feed --limit` takes at most
DISCLOSURES_MOST = 1000  # as `mem team disclosures --limit` takes at most


class FeedView(msgspec.Struct, frozen=True, kw_only=True):
    """The feed, and the id to show for each of the member's own items in it (``own``; a
    teammate's item is shown by its whole id)."""

    feed: Feed
    own: dict[str, str]


class Disclosures(msgspec.Struct, frozen=True, kw_only=True):
    """The disclosures, the item they were asked about (``item_id``, ``""``: all), and the id
    to show for each item the store holds (``shown``)."""

    entries: list[Disclosed]
    item_id: str
    shown: dict[str, str]


def number(value: str | None, name: str, *, least: int, most: int, default: int) -> int:
    """A whole number from a query string, ``default`` when absent; a
    :class:`~memmesh.web.errors.BadForm` (400) naming ``name`` when it is not one between
    ``least`` and ``most``."""
    if value is None or not value.strip():
        return default
    text = value.strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 7:
        raise BadForm(name, "must be a whole number")
    found = int(text)
    if not least <= found <= most:
        raise BadForm(name, f"must be between {least} and {most}, not {found}")
    return found


def feed(policy: Policy, identity: Identity, home: Path, store: Store, limit: int) -> FeedView:
    """The newest ``limit`` changes of the team's feed (blocking: calls the coordinator)."""
    read = team_feed(policy, identity, limit=limit, home=home)
    own = [e.item_id for e in read.entries if e.key_id == identity.key_id]
    return FeedView(feed=read, own=store.short_ids(own))


def disclosures(
    policy: Policy,
    identity: Identity,
    store: Store,
    *,
    item: str,
    limit: int,
    per_asker: int,
) -> Disclosures:
    """Who was served the member's items (``item``: one item's id or prefix; ``per_asker``
    0: no cap), newest first (blocking: calls the coordinator)."""
    item_id = None
    if item:
        check_name(item, "item")  # an id or a prefix of one: nothing else is sent
        try:
            item_id = store.get(item).id
        except ItemNotFound:
            item_id = item  # gone from this store, perhaps still in the logs
    entries = my_disclosures(
        policy,
        identity,
        store,
        item_id=item_id,
        limit=limit,
        per_asker=per_asker or None,
    )
    shown = store.short_ids([e.item_id for e in entries])
    return Disclosures(entries=entries, item_id=item_id or "", shown=shown)
