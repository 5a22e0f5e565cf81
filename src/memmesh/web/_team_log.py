"""The member's registry log on the page: every signed publication and retraction, newest
first (as `mem team log` lists them, oldest first), and `mem team verify`'s verdict on the
chain and its signatures."""

import msgspec

from memmesh.registry import Entry
from memmesh.team.member import Member

__all__ = ["SHOWN", "LogView", "log_view"]

# The most entries the page lists (the newest).
SHOWN = 500


class LogView(msgspec.Struct, frozen=True, kw_only=True):
    """The newest entries (``entries``, newest first) of ``total``; the id to show for each
    item (``shown``); the problems `mem team verify` finds (none: the chain is intact)."""

    entries: list[Entry]
    total: int
    shown: dict[str, str]
    problems: list[str]
    published: int
    retracted: int
    unacked: int

    @property
    def intact(self) -> bool:
        """Whether the chain and every signature verify."""
        return not self.problems


def log_view(member: Member) -> LogView:
    """The member's log and its verdict (blocking: reads the store)."""
    entries = member.registry.entries()
    problems = member.registry.verify()
    newest = list(reversed(entries[-SHOWN:]))
    kinds = [e.kind for e in entries]
    return LogView(
        entries=newest,
        total=len(entries),
        shown=member.store.short_ids([e.item_id for e in newest]),
        problems=problems,
        published=sum(1 for kind in kinds if kind == "publication"),
        retracted=sum(1 for kind in kinds if kind == "retraction"),
        unacked=sum(1 for e in entries if not e.acked),
    )
