"""Groups, roles and project grants: an admin's changes to the signed roster, and what it says.

Each change is a statement this admin signs after the roster as this member verified it, sent
as every roster change is (:func:`memmesh.team._roster_signed.change`): a group's members
(:func:`change_group`), a member's role (:func:`set_role`: ``reader`` asks the team but
publishes nothing), and who may read and publish one project's items (:func:`set_grant`).
They exist on a signed roster only: a team whose roster is not signed has no groups, and is
told to sign it first. :func:`verified_access` is the verified roster's
:class:`~memmesh.registry.access.Access`, for listing them and for deciding an audience.
"""

from collections.abc import Sequence
from pathlib import Path

import msgspec

from memmesh.net.connect import coordinator_client
from memmesh.net.errors import Conflict
from memmesh.net.presence import RosterMember
from memmesh.policy import Policy
from memmesh.registry import Identity
from memmesh.registry import roster_chain as chain
from memmesh.registry.access import Access
from memmesh.registry.envelopes import Audience
from memmesh.registry.errors import RosterChainBroken
from memmesh.registry.roster_chain import ProjectGrant, RosterState, SignedStatement
from memmesh.team import _roster_signed as signed
from memmesh.team.chain import verified_state

__all__ = [
    "GrantView",
    "GroupView",
    "change_group",
    "grants_of",
    "groups_of",
    "names_of",
    "require_signed",
    "set_grant",
    "set_role",
    "verified_access",
    "view_of",
]


class GroupView(msgspec.Struct, frozen=True, kw_only=True):
    """A group as output shows it: its name and its members' names (sorted)."""

    name: str
    members: tuple[str, ...]


class GrantView(msgspec.Struct, frozen=True, kw_only=True):
    """A project's grants as output shows them: the names that may read and publish its
    items (``None``: every member)."""

    project: str
    read: tuple[str, ...] | None
    publish: tuple[str, ...] | None


def require_signed(policy: Policy, what: str) -> None:
    """:class:`Conflict` for a team whose roster is not signed: ``what`` exists only there."""
    if policy.roster_root is None:
        raise Conflict(
            f"team {policy.team!r}'s roster is not signed, and {what} exist only on a signed "
            "roster: an admin signs it first (mem team members sign)"
        )


def verified_access(policy: Policy, identity: Identity, home: Path | None) -> Access:
    """The verified roster's rules, read from the coordinator (the chain kept in ``home`` is
    extended by what it holds beyond it); ``Access(None)`` for a roster not signed."""
    if policy.roster_root is None:
        return Access(None)
    with coordinator_client(policy, identity) as client:
        return Access(verified_state(client, home, policy))


def groups_of(access: Access) -> list[GroupView]:
    """Every group of the roster, by name, with its members' names."""
    state = access.state
    if state is None:
        return []
    names = chain.display_names(state)
    return [
        GroupView(name=group, members=tuple(sorted(names[m] for m in ids)))
        for group, ids in sorted(state.groups.items(), key=lambda g: g[0].lower())
    ]


def grants_of(access: Access) -> list[GrantView]:
    """Every project an admin named readers or publishers for."""
    state = access.state
    if state is None:
        return []
    return [view_of(access, project) for project in sorted(state.grants)]


def view_of(access: Access, project: str) -> GrantView:
    """One project's grants as output shows them."""
    grant = access.state.grants.get(project, ProjectGrant()) if access.state else ProjectGrant()
    read, publish = names_of(access, grant.read), names_of(access, grant.publish)
    return GrantView(project=project, read=read, publish=publish)


def names_of(access: Access, audience: Audience | None, author: str = "") -> tuple[str, ...] | None:
    """The names an audience shows as: its groups, then its members by display name (a
    member id the roster does not name as itself); ``None`` for the whole team. An audience
    naming nobody is for its author alone, ``author`` (a member id) when given."""
    if audience is None:
        return None
    shown = chain.display_names(access.state) if access.state else {}
    members = audience.members if audience.groups or audience.members or not author else (author,)
    return (*audience.groups, *(shown.get(m, m) for m in members))


def change_group(
    policy: Policy,
    identity: Identity,
    group: str,
    *,
    add: Sequence[str] = (),
    remove: Sequence[str] = (),
    home: Path | None = None,
) -> GroupView:
    """Put the members ``add`` into ``group`` and take ``remove`` out (names, member ids or
    keys, found anew on each head): an admin's signed change. The group as it then stands."""
    require_signed(policy, "groups")

    def make(state: RosterState) -> list[SignedStatement]:
        try:
            added = [signed.find(state, m).key_id for m in add]
            removed = [signed.find(state, m).key_id for m in remove]
            return [chain.group(state, identity, name=group, add=added, remove=removed)]
        except RosterChainBroken as exc:
            raise signed.refusal(exc, state) from None

    after, _ = signed.change(policy, identity, home, make)
    return next(g for g in groups_of(Access(after)) if g.name.lower() == group.lower())


def set_role(
    policy: Policy, identity: Identity, member: str, role: str, *, home: Path | None = None
) -> RosterMember:
    """Make ``member`` a ``reader`` or a plain ``member`` (an admin's signed change)."""
    require_signed(policy, "roles")
    return signed.change_member(
        policy,
        identity,
        home,
        member,
        lambda state, target: chain.set_role(state, identity, key=target.key, role=role),
    )[0]


def set_grant(
    policy: Policy,
    identity: Identity,
    project: str,
    *,
    read: Sequence[str] | None = None,
    publish: Sequence[str] | None = None,
    home: Path | None = None,
) -> GrantView:
    """Say who may read (``read``) and who may publish (``publish``) ``project``'s items:
    names of groups and members, or ``everyone``; what is not given (``None``) stays as it
    is. An admin's signed change; the project's grants as they then stand."""
    require_signed(policy, "project grants")

    def make(state: RosterState) -> list[SignedStatement]:
        access = Access(state)
        held = state.grants.get(project, ProjectGrant())
        reads = held.read if read is None else access.resolve(read)
        publishes = held.publish if publish is None else access.resolve(publish)
        try:
            return [chain.grant(state, identity, project=project, read=reads, publish=publishes)]
        except RosterChainBroken as exc:
            raise signed.refusal(exc, state) from None

    after, _ = signed.change(policy, identity, home, make)
    return view_of(Access(after), project)
