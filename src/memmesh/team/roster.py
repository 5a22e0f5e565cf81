"""The team's roster: invites, joining with a code, members and revocation.

In a team whose roster is signed (team.yaml pins its root: ``roster_root``), the roster is the
chain of statements its admins signed (:mod:`memmesh.registry.roster_chain`); the coordinator
stores and serves it, and cannot change it. In a team from before (no ``roster_root``, and a
coordinator holding no chain), the roster is the coordinator's table, which admins change
through its routes; every function here takes the path its team is on.

* An admin's :func:`invite` returns a one-line join code (:class:`~memmesh.coordinator.
  invites.JoinCode`) that works once, until it expires. On a signed roster the invite is a
  statement on the chain, with a key made for it alone whose private half (the secret) only
  the code holds, and the code names the chain's root; else the coordinator registers the
  SHA-256 of a random secret.
* :func:`join` is all a new laptop does with it: a key (made unless the home has one), then
  the code used once at the pinned coordinator. The first admin's code (the coordinator's
  own) starts the signed roster: its statement 0, signed by this key, which becomes the root.
  An invite on the chain: the chain is read, believed only if it starts at the code's root
  and keeps every rule, and this key signs its join. team.yaml is then written with the
  team, the name, the coordinator's URL, pin and key, and the root; until the coordinator
  has accepted the key, team.yaml is not touched. The verified chain is kept in the home.
* :func:`members`, :func:`add_member`, :func:`add_from_policy`, :func:`revoke`,
  :func:`promote`, :func:`demote` and :func:`rename` read and change the roster; only admins
  change it. :func:`sign_roster` signs the roster of a team from before, once.
* A revoked member's key stays refused. Inviting their name again makes a code that admits a
  new key only (:attr:`Invited.revoked_at` says so).

Every request is signed by the member's key (:func:`~memmesh.net.connect.coordinator_client`).
A refusal arrives as :class:`~memmesh.net.errors.Refused` with the coordinator's status; a
change this admin's memmesh refuses to sign is said in the roster's words (:class:`~memmesh.
coordinator.errors.LastAdmin`, ...) before anything is sent.
"""

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import msgspec

from memmesh.coordinator.errors import AlreadyAdmin, NoAdminToDemote
from memmesh.coordinator.invites import JoinCode, new_secret, secret_digest
from memmesh.coordinator.membership import MAX_INVITE_TTL
from memmesh.coordinator.protocol import (
    Invite,
    InviteRequest,
    MemberAdd,
    MemberAdmin,
    MemberRevoke,
    RevokeResponse,
)
from memmesh.net.client import Client
from memmesh.net.connect import coordinator_client
from memmesh.net.errors import Conflict, Refused
from memmesh.net.presence import Roster, RosterMember
from memmesh.net.urls import peer_url
from memmesh.policy import Policy, load_policy
from memmesh.policy.errors import NoCoordinator
from memmesh.registry import Identity
from memmesh.registry import roster_chain as chain
from memmesh.registry.errors import BadSignature, RosterChainBroken
from memmesh.registry.identity import key_id, public_key_from_text
from memmesh.registry.roster_chain import RosterState, SignedStatement
from memmesh.team import _roster_signed as signed
from memmesh.team._joining import JoinedTeam, join
from memmesh.team._roster_migrate import SignedRoster, sign_roster
from memmesh.team._roster_signed import Invited
from memmesh.team.chain import trusted_roster

__all__ = [
    "DEFAULT_INVITE_TTL",
    "MAX_INVITE_TTL",
    "FromPolicy",
    "Invited",
    "JoinedTeam",
    "NotAddable",
    "SignedRoster",
    "add_from_policy",
    "add_member",
    "demote",
    "invite",
    "join",
    "members",
    "promote",
    "rename",
    "revoke",
    "sign_roster",
]

DEFAULT_INVITE_TTL = 24 * 3600.0
# The coordinator's code for a change asked of its table once the roster is signed.
_ROSTER_SIGNED = "roster_signed"
_T = TypeVar("_T")


class NotAddable(msgspec.Struct, frozen=True, kw_only=True):
    """A team.yaml ``members:`` entry that cannot go on the roster, and why."""

    name: str
    key: str
    reason: str


class FromPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`add_from_policy` did with each ``members:`` entry."""

    added: list[RosterMember]
    already: list[RosterMember]
    not_addable: list[NotAddable]


def invite(
    policy: Policy,
    identity: Identity,
    name: str,
    *,
    ttl: float = DEFAULT_INVITE_TTL,
    admin: bool = False,
    now: float | None = None,
    home: Path | None = None,
) -> Invited:
    """Invite ``name`` for ``ttl`` seconds (at most 30 days), as an admin with ``admin``;
    returns the invite with its join code. ``home`` keeps the verified chain of a signed team.

    The caller checks ``ttl``. Raises :class:`NoCoordinator` without a coordinator,
    :class:`~memmesh.coordinator.errors.NotAnAdmin` (signed team) or the client's errors
    (:class:`~memmesh.net.errors.Refused` 403 when this key is no admin).
    """
    assert 0 < ttl <= MAX_INVITE_TTL, ttl
    if policy.coordinator is None:
        raise NoCoordinator()
    if policy.roster_root is None:
        legacy = _legacy_invite(policy, name, ttl=ttl, admin=admin, now=now)
        registered, policy = _on_table(policy, identity, home, legacy)
        if registered is not None:
            return registered
    return signed.invite(policy, identity, name, ttl=ttl, admin=admin, now=now, home=home)


def _legacy_invite(
    policy: Policy, name: str, *, ttl: float, admin: bool, now: float | None
) -> Callable[[Client], Invited]:
    """An invite the coordinator registers (a team whose roster is not signed): only the
    SHA-256 of a random secret, which the code carries, reaches it."""
    assert policy.coordinator is not None
    coordinator = policy.coordinator

    def ask(client: Client) -> Invited:
        secret = new_secret()
        expires_at = (time.time() if now is None else now) + ttl
        request = InviteRequest(
            name=name, digest=secret_digest(secret), expires_at=expires_at, admin=admin
        )
        registered = client.post("/v1/invites", request, Invite)
        code = JoinCode(
            url=peer_url(coordinator),
            team=policy.team,
            name=registered.name,
            secret=secret,
            expires_at=registered.expires_at,
            pin=policy.coordinator_pin,
            admin=registered.admin,
        )
        return Invited(
            code=code.encode(),
            name=registered.name,
            team=policy.team,
            expires_at=registered.expires_at,
            admin=registered.admin,
            revoked_at=registered.revoked_at,
        )

    return ask


def _on_table(
    policy: Policy, identity: Identity, home: Path | None, ask: Callable[[Client], _T]
) -> tuple[_T | None, Policy]:
    """An admin's change asked of the coordinator's table (``ask``), for a member pinning no
    root: its answer, or ``None`` and the policy pinning the root when the coordinator says
    the roster is signed (``roster_signed``): its root is then pinned on first sight, in
    ``home``'s team.yaml, and the caller signs the change instead."""
    try:
        with coordinator_client(policy, identity) as client:
            return ask(client), policy
    except Refused as refused:
        if refused.error_code != _ROSTER_SIGNED or home is None:
            raise
        pinned = _pinned(policy, identity, home)
        if pinned.roster_root is None:
            raise
        return None, pinned


def _pinned(policy: Policy, identity: Identity, home: Path) -> Policy:
    """``policy`` as team.yaml says once the signed roster was read (which pins its root on
    first sight; :func:`~memmesh.team.chain.trusted_roster`)."""
    with coordinator_client(policy, identity) as client:
        trusted_roster(client, home, policy, client.get("/v1/members", Roster))
    return load_policy(home)


def members(policy: Policy, identity: Identity, *, home: Path | None = None) -> Roster:
    """The roster, revoked members included: for a member pinning the signed roster's root,
    the verified chain's (``home`` keeps it), else the coordinator's."""
    with coordinator_client(policy, identity) as client:
        given = client.get("/v1/members", Roster)
        trusted = trusted_roster(client, home, policy, given)
    return given if trusted is None else trusted


def add_member(
    policy: Policy,
    identity: Identity,
    name: str,
    key: str,
    *,
    admin: bool = False,
    home: Path | None = None,
) -> RosterMember:
    """Put ``key`` (a public key) on the roster as ``name`` (an admin's change)."""
    if policy.roster_root is None:
        request = MemberAdd(name=name, key=key, admin=admin)
        added, policy = _on_table(
            policy,
            identity,
            home,
            lambda client: client.post("/v1/members/add", request, RosterMember),
        )
        if added is not None:
            return added

    def make(state: RosterState) -> list[SignedStatement]:
        try:
            return [chain.add(state, identity, key=key, name=name, admin=admin)]
        except RosterChainBroken as exc:
            raise signed.refusal(exc, state) from None

    after, _ = signed.change(policy, identity, home, make)
    return signed.member_of(after, key_id(public_key_from_text(key)))


def add_from_policy(policy: Policy, identity: Identity, *, home: Path | None = None) -> FromPolicy:
    """Put every team.yaml ``members:`` entry with a full public key on the roster (once);
    an entry with only a member id cannot be added (a key cannot be made from its id)."""
    roster = {member.key: member for member in members(policy, identity, home=home).members}
    added: list[RosterMember] = []
    already: list[RosterMember] = []
    not_addable: list[NotAddable] = []
    for entry in policy.members:
        reason = _not_a_key(entry.key)
        if reason:
            not_addable.append(NotAddable(name=entry.name, key=entry.key, reason=reason))
        elif entry.key in roster:
            already.append(roster[entry.key])
        else:
            member = add_member(policy, identity, entry.name, entry.key, home=home)
            roster[member.key] = member
            added.append(member)
    return FromPolicy(added=added, already=already, not_addable=not_addable)


def _not_a_key(text: str) -> str:
    """Why ``text`` is no public key to add ("" when it is one)."""
    try:
        public_key_from_text(text)
    except BadSignature:
        if len(text) == 16 and text.isalnum():
            return "team.yaml holds only its member id; add its public key: mem team members add"
        return "not a public key"
    return ""


def revoke(
    policy: Policy,
    identity: Identity,
    member: str,
    *,
    purge: bool = False,
    home: Path | None = None,
) -> RevokeResponse:
    """Refuse ``member`` (a name, public key or member id) from now on; with ``purge`` the
    coordinator also removes its published items (an admin's change)."""
    if policy.roster_root is None:
        request = MemberRevoke(member=member, purge=purge)
        answer, policy = _on_table(
            policy,
            identity,
            home,
            lambda client: client.post("/v1/members/revoke", request, RevokeResponse),
        )
        if answer is not None:
            return answer
    revoked, purged = signed.change_member(
        policy,
        identity,
        home,
        member,
        lambda state, target: chain.revoke(state, identity, key=target.key),
        purge=purge,
    )
    return RevokeResponse(member=revoked, purged=purged)


def promote(
    policy: Policy, identity: Identity, member: str, *, home: Path | None = None
) -> RosterMember:
    """Make ``member`` (a name, public key or member id) an admin (an admin's change)."""
    return _set_role(policy, identity, member, home, admin=True)


def demote(
    policy: Policy, identity: Identity, member: str, *, home: Path | None = None
) -> RosterMember:
    """Make the admin ``member`` names a member who is no admin (an admin's change; never
    the team's last admin)."""
    return _set_role(policy, identity, member, home, admin=False)


def _set_role(
    policy: Policy, identity: Identity, member: str, home: Path | None, *, admin: bool
) -> RosterMember:
    """Promote (``admin``) or demote ``member``: signed, or on the table of a team whose
    roster is not signed."""
    if policy.roster_root is None:
        verb = "promote" if admin else "demote"
        changed, policy = _on_table(policy, identity, home, _legacy_role(member, verb))
        if changed is not None:
            return changed
    make = chain.promote if admin else chain.demote
    return signed.change_member(
        policy,
        identity,
        home,
        member,
        lambda state, target: make(state, identity, key=target.key),
        no_change=AlreadyAdmin if admin else NoAdminToDemote,
    )[0]


def _legacy_role(member: str, verb: str) -> Callable[[Client], RosterMember]:
    """Promote or demote on the coordinator's table (a team whose roster is not signed)."""
    return lambda client: client.post(
        f"/v1/members/{verb}", MemberAdmin(member=member), RosterMember
    )


def rename(
    policy: Policy, identity: Identity, member: str, name: str, *, home: Path | None = None
) -> RosterMember:
    """Rename ``member`` (a name, public key or member id) to ``name`` (an admin's change, on
    a signed roster only: the chain keeps every name a key had, so that output can tell a
    renamed member apart). :class:`Conflict` for a team whose roster is not signed."""
    if policy.roster_root is None and home is not None:
        policy = _pinned(policy, identity, home)
    if policy.roster_root is None:
        raise Conflict(
            f"team {policy.team!r}'s roster is not signed, and members are renamed only on a "
            "signed roster: an admin signs it first (mem team members sign)"
        )
    return signed.change_member(
        policy,
        identity,
        home,
        member,
        lambda state, target: chain.rename(state, identity, key=target.key, name=name),
    )[0]
