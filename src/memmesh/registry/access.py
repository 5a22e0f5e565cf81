"""Who may read a published item, and who may publish in a project: the signed roster's word.

An item's readers are the active members its audience admits (:class:`Audience` in its signed
publication: its groups as the roster has them *now*, and the members it names; no audience is
the whole team), further narrowed by the project's read grant if an admin made one, and always
its author. A member may publish unless the roster makes them a reader, or the project's publish
grant leaves them out. :class:`Access` answers both from a verified
:class:`~memmesh.registry.roster_chain.RosterState`; whoever serves an item (the coordinator, a
peer) and whoever receives one (a member's recall-team and team cache) ask it, each with the
roster it verified, at the time of the request.

Without a signed roster there are no groups, roles or grants: an item for the whole team is for
every member, and an item with an audience is for its author alone (fail closed: nothing can
say who is in a group).
"""

import hashlib
from collections.abc import Iterable

import msgspec

from memmesh.registry.envelopes import Audience, Publication
from memmesh.registry.errors import PublishNotAllowed, UnknownAudience
from memmesh.registry.roster_chain import EVERYONE, ChainMember, ProjectGrant, RosterState

__all__ = ["EVERYONE", "Access"]

_OPEN = ProjectGrant()


class Access:
    """The read and publish rules of the roster ``state`` (``None``: the roster is not signed)."""

    def __init__(self, state: RosterState | None) -> None:
        self.state = state
        # Each member's groups, by member id: the check runs per item served.
        self._groups: dict[str, frozenset[str]] = {}
        for group, ids in (state.groups if state else {}).items():
            for member_id in ids:
                self._groups[member_id] = self._groups.get(member_id, frozenset()) | {group}

    def __repr__(self) -> str:
        head = None if self.state is None else self.state.head.seq
        return f"Access(head={head})"

    def restricted(self, project: str, audience: Audience | None) -> bool:
        """Whether an item of ``project`` for ``audience`` is for fewer than every member."""
        return audience is not None or self._grant(project).read is not None

    def may_read(
        self, reader: str, *, author: str, project: str, audience: Audience | None
    ) -> bool:
        """Whether the member ``reader`` (a member id) may be served an item ``author`` (a
        member id) published in ``project`` for ``audience``. Whether ``reader`` is an active
        member at all is the server's admission's word; here a restricted item admits only
        active members the roster names."""
        if not self.restricted(project, audience):
            return True
        member = self.state.members.get(reader) if self.state else None
        if member is None or not member.active:
            return False
        if reader == author:
            return True
        read = self._grant(project).read
        return self._admits(read, reader) and self._admits(audience, reader)

    def may_read_publication(self, reader: str, publication: Publication) -> bool:
        """:meth:`may_read` for a verified publication."""
        project, audience = publication.project, publication.audience
        return self.may_read(reader, author=publication.key_id, project=project, audience=audience)

    def publish_refusal(self, member: str, project: str) -> str | None:
        """Why the member ``member`` may not publish in ``project`` (``reader``,
        ``not_granted``), or ``None`` when they may."""
        if self.state is None:
            return None
        found = self.state.members.get(member)
        if found is not None and found.reader:
            return "reader"
        publish = self._grant(project).publish
        if publish is not None and not self._admits(publish, member):
            return "not_granted"
        return None

    def check_publish(self, member: str, name: str, project: str) -> None:
        """Raise :class:`PublishNotAllowed` (naming the member ``name``) when
        :meth:`publish_refusal` has a reason."""
        reason = self.publish_refusal(member, project)
        if reason is not None:
            raise PublishNotAllowed(name, project, reason)

    def unknown(self, audience: Audience | None) -> list[str]:
        """The groups ``audience`` names that the roster does not have, and the member ids it
        names that are not active members."""
        if audience is None:
            return []
        groups = self.state.groups if self.state else {}
        members = self.state.members if self.state else {}
        missing = [g for g in audience.groups if g not in groups]
        return missing + [m for m in audience.members if not _active(members.get(m))]

    def resolve(self, names: Iterable[str]) -> Audience | None:
        """The audience ``names`` (group names, member names or member ids, letter case aside)
        stand for, ``None`` (the whole team) when one is :data:`EVERYONE`;
        :class:`UnknownAudience` for those that are neither."""
        names = list(names)
        if any(name.lower() == EVERYONE for name in names):
            return None
        groups: list[str] = []
        members: list[str] = []
        unknown: list[str] = []
        by_group = {g.lower(): g for g in (self.state.groups if self.state else {})}
        active = [m for m in (self.state.members.values() if self.state else []) if m.active]
        for name in names:
            member = next((m for m in active if name in (m.key_id, m.key)), None)
            member = member or next((m for m in active if m.name.lower() == name.lower()), None)
            if name.lower() in by_group:
                groups.append(by_group[name.lower()])
            elif member is not None:
                members.append(member.key_id)
            else:
                unknown.append(name)
        if unknown:
            raise UnknownAudience(unknown, signed=self.state is not None)
        return Audience.of(groups, members)

    def readers(self, *, author: str, project: str, audience: Audience | None) -> list[ChainMember]:
        """The active members who may read such an item now, by name."""
        members = self.state.members.values() if self.state else []
        return sorted(
            (
                m
                for m in members
                if m.active
                and self.may_read(m.key_id, author=author, project=project, audience=audience)
            ),
            key=lambda m: m.name.lower(),
        )

    def mark(self, member: str) -> str:
        """A digest of what decides which items ``member`` may read: its groups, and the
        read grants. Equal marks mean equal reach; a member whose mark changed reads its
        feed again from the start (a widened reach must bring what it skipped)."""
        if self.state is None:
            return ""
        reads = {p: g.read for p, g in self.state.grants.items() if g.read is not None}
        member_of = sorted(self._groups.get(member, frozenset()))
        return hashlib.sha256(msgspec.json.encode([member_of, reads])).hexdigest()[:24]

    def _grant(self, project: str) -> ProjectGrant:
        return self.state.grants.get(project, _OPEN) if self.state else _OPEN

    def _admits(self, audience: Audience | None, member: str) -> bool:
        if audience is None:
            return True
        return member in audience.members or bool(
            self._groups.get(member, frozenset()).intersection(audience.groups)
        )


def _active(member: ChainMember | None) -> bool:
    return member is not None and member.active
