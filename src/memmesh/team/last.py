"""The member's newest team recall, kept for `mem outcome --last`.

A local recall leaves its trace in the journal, a session hook its row in the hooks' journal;
a recall-team keeps what it showed here, in the member's store (one value, replaced by each
team recall): when it ran, its query, the member's own items it showed (by id) and the
teammates' (``member id/item id``, as :func:`memmesh.team.tallies.credit_teammate` takes them).
`mem outcome --last` credits whichever of the three is newest, so that a team recall is never
mistaken for the local recall before it.
"""

from typing import TYPE_CHECKING

import msgspec

from memmesh.local.store import Store

if TYPE_CHECKING:
    from memmesh.team.recall import TeamAnswer

__all__ = ["LastTeamRecall", "last_team_recall", "note_last"]

_SETTING = "team_last_recall"


class LastTeamRecall(msgspec.Struct, frozen=True, kw_only=True):
    """What the newest recall-team showed: ``own`` ids, ``team`` as ``member id/item id``."""

    at: float
    query: str
    own: tuple[str, ...] = ()
    team: tuple[str, ...] = ()

    @property
    def showed(self) -> bool:
        """Whether it showed anything to credit."""
        return bool(self.own or self.team)


def note_last(store: Store, answer: "TeamAnswer", own_key_id: str) -> None:
    """Keep ``answer`` as the newest team recall (every hit, ``also`` included)."""
    shown = [h for hit in answer.hits for h in (hit, *hit.also)]
    last = LastTeamRecall(
        at=store.clock(),
        query=answer.query,
        own=tuple(h.id for h in shown if h.key_id == own_key_id),
        team=tuple(f"{h.key_id}/{h.id}" for h in shown if h.key_id != own_key_id),
    )
    with store.transaction() as tx:
        store.set_setting(tx, _SETTING, msgspec.json.encode(last).decode())


def last_team_recall(store: Store) -> LastTeamRecall | None:
    """The newest team recall, or ``None`` when there was none (or it cannot be read)."""
    kept = store.setting(_SETTING)
    if kept is None:
        return None
    try:
        return msgspec.json.decode(kept, type=LastTeamRecall)
    except msgspec.DecodeError:
        return None
