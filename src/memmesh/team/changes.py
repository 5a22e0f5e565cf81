"""Forget and revise as a member: the local change, then the retractions it causes.

A published item that is archived or superseded must stop being served, so every front end
(the `mem` command, the MCP server) forgets and revises through these functions: the change
and its retraction are never separated.
"""

from pathlib import Path

import msgspec

from memmesh.local.items import Item
from memmesh.local.store import Store
from memmesh.team.member import retract_changed

__all__ = ["Forgotten", "Revised", "forget", "revise"]


class Forgotten(msgspec.Struct, frozen=True, kw_only=True):
    """An item archived by :func:`forget`.

    * ``retracted`` - the ids of the publications retracted because of it.
    * ``warning`` - when the retraction has not reached the coordinator, what teammates see
      meanwhile and why: pushing it failed, or the policy does not push at once (it stays
      queued for `mem team sync`); ``None`` when it was pushed or nothing was published.
    """

    item: Item
    retracted: list[str]
    warning: str | None


class Revised(msgspec.Struct, frozen=True, kw_only=True):
    """An item superseded by :func:`revise`: ``old`` is kept as history, ``new`` replaces it
    with the track record ``old`` earned (see :meth:`memmesh.local.store.Store.revise`).

    ``retracted`` and ``warning`` are as in :class:`Forgotten`; ``unshared`` says, when the old
    item was published, that the revision is not shared until it is published itself.
    """

    old: Item
    new: Item
    retracted: list[str]
    warning: str | None
    unshared: str | None = None


def forget(home: Path, store: Store, item_id: str) -> Forgotten:
    """Archive the item (an id or unique prefix) and retract its publication, if any."""
    item = store.forget(item_id)
    retracted, warning = retract_changed(store, home)
    return Forgotten(item=item, retracted=retracted, warning=warning)


def revise(home: Path, store: Store, item_id: str, text: str) -> Revised:
    """Supersede the item with one saying ``text``, and retract the old one's publication."""
    old, new = store.revise(item_id, text)
    retracted, warning = retract_changed(store, home)
    unshared = None
    if old.id in retracted:
        unshared = f"the revision is not shared until you publish it: `mem team publish {new.id}`"
    return Revised(old=old, new=new, retracted=retracted, warning=warning, unshared=unshared)
