"""The team's roster on the page: who is a member, in what role, and an admin's changes to it.

The roster is read as `mem team members` reads it (:func:`memmesh.team.roster.members`: a
signed roster verified from the root team.yaml pins, names as output shows them), and every
change is the one `mem team invite`, `mem team members promote|demote` and `mem team revoke`
make, through the same functions: the roster's rules refuse a member who is no admin, whatever
a form posted. A refusal is said in the words `mem team` prints
(:func:`memmesh.team.refusals.refusal_of`): what this key may not do, or why the coordinator
refuses the key itself.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec

from memmesh.coordinator.errors import NotAnAdmin
from memmesh.coordinator.protocol import RevokeResponse
from memmesh.local.items import check_name
from memmesh.net.errors import Refused
from memmesh.net.presence import RosterMember
from memmesh.policy import Policy, load_policy
from memmesh.registry.errors import RosterChainBroken
from memmesh.registry.identity import Identity
from memmesh.team import roster
from memmesh.team.errors import AccessError
from memmesh.team.refusals import Asked, Refusal, refusal_of
from memmesh.web.errors import BadForm

__all__ = [
    "TTLS",
    "RosterView",
    "change_role",
    "checked_member",
    "checked_name",
    "invite",
    "revoke",
    "roster_view",
]

# How long an invite from the page works: the choices its form offers, in seconds.
TTLS = {"1h": 3600.0, "24h": 24 * 3600.0, "7d": 7 * 24 * 3600.0, "30d": roster.MAX_INVITE_TTL}


class RosterView(msgspec.Struct, frozen=True, kw_only=True):
    """The roster as `mem team members` lists it: the members (revoked ones too), whether it
    is enforced, whether it is signed (``statements`` on the chain, ``root`` pinned, or
    ``unverified``: signed, but team.yaml pins no root), and this member's own entry."""

    members: list[RosterMember]
    enforced: bool
    statements: int
    root: str | None
    me: RosterMember | None

    @property
    def admin(self) -> bool:
        """Whether this member may change the roster (as the roster says; the coordinator and
        the chain decide again on every change)."""
        return self.me is not None and self.me.admin and self.me.revoked_at is None

    @property
    def signed(self) -> bool:
        """Whether the roster is signed and verified from a pinned root."""
        return self.root is not None and self.statements > 0

    @property
    def active(self) -> int:
        """How many members are not revoked."""
        return sum(1 for member in self.members if member.revoked_at is None)

    @property
    def admins(self) -> int:
        """How many active members are admins."""
        return sum(1 for m in self.members if m.admin and m.revoked_at is None)


@contextmanager
def _asking(
    asked: Asked, what: str, policy: Policy, identity: Identity, field: str = "member"
) -> Iterator[None]:
    """A refusal of ``what`` said as `mem team` says it: a change this key may not make, or
    why the coordinator refuses the key itself. A name or member the roster's chain refuses
    is bad input in the form's ``field`` (:class:`BadForm`, 400)."""
    try:
        yield
    except (Refused, NotAnAdmin, RosterChainBroken) as exc:
        said = refusal_of(exc, asked, what, policy, identity)
        if not isinstance(said, Refusal):
            raise said from None
        if said.usage:
            raise BadForm(field, said.message) from None
        raise AccessError(said.message) from None


def roster_view(policy: Policy, identity: Identity, home: Path) -> RosterView:
    """The roster, as this member verifies it (blocking: a call to the coordinator)."""
    with _asking("member", "list members", policy, identity):
        listed = roster.members(policy, identity, home=home)
    root = load_policy(home).roster_root  # pinned on first sight, perhaps just now
    mine = [m for m in listed.members if m.key_id == identity.key_id]
    return RosterView(
        members=listed.members,
        enforced=listed.enforced,
        statements=listed.head_seq + 1,
        root=root,
        me=mine[-1] if mine else None,
    )


def checked_name(value: str) -> str:
    """A new member's name, by the rule every member name keeps."""
    return check_name(value, "member name")


def checked_member(value: str) -> str:
    """A member as the page names one in its forms: their member id (or name)."""
    return check_name(value, "member")


def invite(
    policy: Policy, identity: Identity, home: Path, name: str, *, ttl: float, admin: bool
) -> roster.Invited:
    """`mem team invite NAME --ttl ... [--admin]`: the invite and its join code."""
    with _asking("admin", "invite members", policy, identity, field="name"):
        return roster.invite(policy, identity, name, ttl=ttl, admin=admin, home=home)


def revoke(
    policy: Policy, identity: Identity, home: Path, member: str, *, purge: bool
) -> RevokeResponse:
    """`mem team revoke MEMBER [--purge] --yes`."""
    with _asking("admin", "revoke members", policy, identity):
        return roster.revoke(policy, identity, member, purge=purge, home=home)


def change_role(
    policy: Policy, identity: Identity, home: Path, member: str, *, admin: bool
) -> RosterMember:
    """`mem team members promote MEMBER` (``admin``) or `demote MEMBER`."""
    verb, change = ("promote", roster.promote) if admin else ("demote", roster.demote)
    with _asking("admin", f"{verb} members", policy, identity):
        return change(policy, identity, member, home=home)
