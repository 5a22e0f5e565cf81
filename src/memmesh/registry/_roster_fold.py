"""The signed roster's rules: folding one checked statement after another into the state.

:class:`_Fold` holds the state while statements are applied; every statement is checked in
full (place in the chain, time, signatures, then the rule of its op) before it changes
anything, and the first that breaks a rule raises :class:`RosterChainBroken`.
"""

import re

import msgspec

from memmesh.registry._roster_wire import (
    ROSTER_FORMAT,
    Add,
    Demote,
    Genesis,
    Grant,
    Group,
    Invite,
    Join,
    Promote,
    Rename,
    Revoke,
    Role,
    SignedStatement,
    Statement,
    decode_body,
)
from memmesh.registry.envelopes import Audience
from memmesh.registry.errors import BadSignature, RosterChainBroken
from memmesh.registry.identity import key_id, public_key_from_text, verify_signature

__all__ = [
    "EVERYONE",
    "MAX_INVITE_TTL",
    "ChainHead",
    "ChainInvite",
    "ChainMember",
    "ProjectGrant",
    "RosterState",
]

# The longest an invite may last from its own time: a code leaked in a chat log stops
# joining anyone within a month.
MAX_INVITE_TTL = 30 * 24 * 3600.0
# What an audience says for the whole team: never a group's name.
EVERYONE = "everyone"
# The member name rule of the store and the coordinator: 1-64 letters, digits, '.', '-', '_'.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class ChainMember(msgspec.Struct, frozen=True, kw_only=True):
    """A key the chain put on the roster: its name now, every name it had (oldest first),
    whether it is an admin (``False`` once revoked), and whether it is a reader (who asks the
    team but publishes nothing; never an admin)."""

    key_id: str
    key: str
    name: str
    admin: bool
    added_at: float
    revoked_at: float | None = None
    names: tuple[str, ...] = ()
    reader: bool = False

    @property
    def active(self) -> bool:
        """Whether the key is a member now (not revoked)."""
        return self.revoked_at is None

    @property
    def role(self) -> str:
        """``admin``, ``member`` or ``reader``."""
        return "admin" if self.admin else "reader" if self.reader else "member"


class ProjectGrant(msgspec.Struct, frozen=True, kw_only=True):
    """Who may read and who may publish one project's items (``None``: every member)."""

    read: Audience | None = None
    publish: Audience | None = None


class ChainInvite(msgspec.Struct, frozen=True, kw_only=True):
    """An invite on the chain: for ``name``, by the admin ``invited_by`` (a key id), used by
    the key id ``used_by`` or ``cancelled`` by a revoke, or still open."""

    invite_key_id: str
    invite_key: str
    name: str
    admin: bool
    expires_at: float
    invited_by: str
    used_by: str | None = None
    cancelled: bool = False


class ChainHead(msgspec.Struct, frozen=True, kw_only=True):
    """Where a verified chain ends: the last statement's seq, hash and time. A member keeps it
    and accepts later only chains that :func:`~memmesh.registry.roster_chain.extends` it."""

    seq: int
    hash: str
    at: float


class RosterState(msgspec.Struct, frozen=True, kw_only=True):
    """What a verified chain says: the team's members by key id (revoked ones stay, with the
    time), its invites by invite key id, its groups (each a sorted tuple of member ids), the
    projects whose readers or publishers an admin named, and its head."""

    team: str
    root_key_id: str
    head: ChainHead
    members: dict[str, ChainMember]
    invites: dict[str, ChainInvite]
    groups: dict[str, tuple[str, ...]] = msgspec.field(default_factory=dict)
    grants: dict[str, ProjectGrant] = msgspec.field(default_factory=dict)

    def active_admins(self) -> list[ChainMember]:
        """The members that are admins now."""
        return _admins(self.members)


class _Fold:
    """A roster state being built, one verified statement at a time."""

    def __init__(self, team: str, root_key_id: str, state: RosterState | None = None) -> None:
        self.team = team
        self.root_key_id = root_key_id
        self.head = state.head if state else None
        self.members = dict(state.members) if state else {}
        self.invites = dict(state.invites) if state else {}
        self.groups = dict(state.groups) if state else {}
        self.grants = dict(state.grants) if state else {}

    def state(self) -> RosterState:
        """The state so far; raises for a chain with no statement at all."""
        if self.head is None:
            raise RosterChainBroken(None, "empty", "the chain has no statement")
        return RosterState(
            team=self.team, root_key_id=self.root_key_id, head=self.head,
            members=dict(self.members), invites=dict(self.invites), groups=dict(self.groups),
            grants=dict(self.grants),
        )  # fmt: skip

    def apply(self, signed: SignedStatement) -> None:
        """Check ``signed`` as the next statement and fold it in; raises
        :class:`RosterChainBroken` (and changes nothing) if it breaks a rule."""
        seq = 0 if self.head is None else self.head.seq + 1
        statement = decode_body(signed.body)
        if isinstance(statement, str):
            raise RosterChainBroken(seq, "malformed", statement)
        self._place(seq, statement, signed)
        self._signed(statement, signed)
        self._rule(statement)
        self.head = ChainHead(seq=seq, hash=signed.hash, at=statement.at)

    def _place(self, seq: int, statement: Statement, signed: SignedStatement) -> None:
        """The statement's format, team, position, link and time."""
        broken = _Broken(statement.seq)
        if statement.format != ROSTER_FORMAT:
            raise broken("bad_format", f"unsupported roster format {statement.format}")
        if statement.team != self.team:
            raise broken("other_team", f"it is for team {statement.team!r}, not {self.team!r}")
        if statement.seq != seq:
            raise RosterChainBroken(
                seq, "out_of_order", f"statement {statement.seq} is where {seq} belongs"
            )
        prev = "" if self.head is None else self.head.hash
        if statement.prev != prev:
            raise broken("prev_mismatch", "it does not follow the statement before it")
        if self.head is not None and statement.at < self.head.at:
            raise broken("time_went_back", "it is dated before the statement before it")
        wanted = 2 if isinstance(statement, Join) else 1
        if len(signed.signatures) != wanted:
            raise broken("bad_signature", f"a {_op(statement)} carries {wanted} signature(s)")
        for field in ("signer", "key", "invite_key"):
            try:
                public_key_from_text(getattr(statement, field, statement.signer))
            except BadSignature as exc:
                raise broken("bad_key", f"{field}: {exc.reason}") from None

    def _signed(self, statement: Statement, signed: SignedStatement) -> None:
        """Every signature holds for the key it belongs to."""
        keys = [statement.signer]
        if isinstance(statement, Join):
            keys.append(statement.invite_key)
        for key, signature in zip(keys, signed.signatures, strict=True):
            try:
                verify_signature(public_key_from_text(key), signature, signed.body)
            except BadSignature:
                raise _Broken(statement.seq)(
                    "bad_signature", f"a signature does not verify for key {_id(key)}"
                ) from None

    def _rule(self, statement: Statement) -> None:
        """The rule of the statement's op, then its effect."""
        if isinstance(statement, Genesis):
            self._genesis(statement)
        elif self.head is None:
            raise _Broken(statement.seq)("no_genesis", "the chain must start with a genesis")
        elif isinstance(statement, Join):
            self._join(statement)  # signed by the joiner and the invite's key, not an admin
        else:
            self._admin(statement)
            if isinstance(statement, Add):
                self._add(statement)
            elif isinstance(statement, Revoke):
                self._revoke(statement)
            elif isinstance(statement, Promote | Demote):
                self._role(statement)
            elif isinstance(statement, Rename):
                self._rename(statement)
            elif isinstance(statement, Role):
                self._reader(statement)
            elif isinstance(statement, Group):
                self._group(statement)
            elif isinstance(statement, Grant):
                self._grant(statement)
            else:
                self._invite(statement)

    def _genesis(self, statement: Genesis) -> None:
        broken = _Broken(statement.seq)
        if self.head is not None:
            raise broken("genesis_again", "only statement 0 may be a genesis")
        if statement.key != statement.signer:
            raise broken("not_root", "a genesis is signed by the key it makes the first admin")
        if _id(statement.key) != self.root_key_id:
            raise broken("not_root", f"the root key is {self.root_key_id}, not this one")
        self._check_name(statement.seq, statement.name, None)
        self._put(statement.key, statement.name, admin=True, at=statement.at)

    def _admin(self, statement: Statement) -> None:
        """The signer is an active admin."""
        signer = self.members.get(_id(statement.signer))
        if signer is not None and not signer.active:
            raise _Broken(statement.seq)("signer_revoked", f"{signer.key_id} was revoked")
        if signer is None or not signer.admin:
            raise _Broken(statement.seq)(
                "not_admin", f"{_id(statement.signer)} is not an admin of the team"
            )

    def _add(self, statement: Add) -> None:
        self._check_new_key(statement.seq, statement.key)
        self._check_name(statement.seq, statement.name, None)
        self._put(statement.key, statement.name, admin=statement.admin, at=statement.at)

    def _revoke(self, statement: Revoke) -> None:
        broken = _Broken(statement.seq)
        wanted = _id(statement.key)
        invite = self.invites.get(wanted)
        if invite is not None and invite.used_by is None and not invite.cancelled:
            self.invites[wanted] = msgspec.structs.replace(invite, cancelled=True)
            return
        member = self._active(statement.seq, wanted)
        if member.admin and len(self._admins()) == 1:
            raise broken("last_admin", "the last admin cannot be revoked")
        self.members[wanted] = msgspec.structs.replace(member, admin=False, revoked_at=statement.at)
        # A revoked key is in no group: a group's members are active members.
        self.groups = {g: tuple(k for k in ids if k != wanted) for g, ids in self.groups.items()}

    def _role(self, statement: Promote | Demote) -> None:
        broken = _Broken(statement.seq)
        member = self._active(statement.seq, _id(statement.key))
        admin = isinstance(statement, Promote)
        if member.admin == admin:
            raise broken("no_change", f"{member.key_id} is {'already' if admin else 'not'} admin")
        if not admin and len(self._admins()) == 1:
            raise broken("last_admin", "the last admin cannot be demoted")
        self.members[member.key_id] = msgspec.structs.replace(member, admin=admin, reader=False)

    def _rename(self, statement: Rename) -> None:
        member = self._active(statement.seq, _id(statement.key))
        if statement.name == member.name:
            raise _Broken(statement.seq)("no_change", f"{member.key_id} is named that already")
        self._check_name(statement.seq, statement.name, member.key_id)
        self.members[member.key_id] = msgspec.structs.replace(
            member, name=statement.name, names=(*member.names, statement.name)
        )

    def _reader(self, statement: Role) -> None:
        broken = _Broken(statement.seq)
        member = self._active(statement.seq, _id(statement.key))
        if member.admin:
            raise broken("is_admin", f"{member.key_id} is an admin: demote them first")
        reader = statement.role == "reader"
        if member.reader == reader:
            raise broken("no_change", f"{member.key_id} is a {member.role} already")
        self.members[member.key_id] = msgspec.structs.replace(member, reader=reader)

    def _group(self, statement: Group) -> None:
        broken = _Broken(statement.seq)
        if statement.group.lower() == EVERYONE:
            raise broken("reserved_name", f"{EVERYONE!r} names the whole team, never a group")
        self._check_name(statement.seq, statement.group, None, group=statement.group)
        held = set(self.groups.get(statement.group, ()))
        if not statement.add and not statement.remove:
            raise broken("no_change", "a group statement adds or removes someone")
        if set(statement.add) & set(statement.remove):
            raise broken("no_change", "a group statement adds and removes one member")
        for member_id in statement.add:
            self._active(statement.seq, member_id)
            if member_id in held:
                raise broken("no_change", f"{member_id} is in {statement.group!r} already")
        for member_id in statement.remove:
            if member_id not in held:
                raise broken("not_in_group", f"{member_id} is not in {statement.group!r}")
        if statement.group not in self.groups and statement.remove:
            raise broken("unknown_group", f"there is no group {statement.group!r}")
        self.groups[statement.group] = tuple(
            sorted((held | set(statement.add)) - set(statement.remove))
        )

    def _grant(self, statement: Grant) -> None:
        broken = _Broken(statement.seq)
        if not _NAME.fullmatch(statement.project):
            raise broken("bad_name", f"{statement.project!r} is no project name")
        for audience in (statement.read, statement.publish):
            for group in audience.groups if audience else ():
                if group not in self.groups:
                    raise broken("unknown_group", f"there is no group {group!r}")
            for member_id in audience.members if audience else ():
                self._active(statement.seq, member_id)
        grant = ProjectGrant(read=statement.read, publish=statement.publish)
        if self.grants.get(statement.project, ProjectGrant()) == grant:
            raise broken("no_change", f"project {statement.project!r} is granted so already")
        if grant == ProjectGrant():
            self.grants.pop(statement.project, None)
        else:
            self.grants[statement.project] = grant

    def _invite(self, statement: Invite) -> None:
        broken = _Broken(statement.seq)
        self._check_new_key(statement.seq, statement.invite_key)
        self._check_name(statement.seq, statement.name, None)
        if not statement.at < statement.expires_at <= statement.at + MAX_INVITE_TTL:
            raise broken("bad_expiry", "an invite expires within 30 days of its own time")
        invite_id = _id(statement.invite_key)
        self.invites[invite_id] = ChainInvite(
            invite_key_id=invite_id, invite_key=statement.invite_key, name=statement.name,
            admin=statement.admin, expires_at=statement.expires_at,
            invited_by=_id(statement.signer),
        )  # fmt: skip

    def _join(self, statement: Join) -> None:
        broken = _Broken(statement.seq)
        if statement.key != statement.signer:
            raise broken("not_joiner", "a join is signed first by the key that joins")
        invite = self.invites.get(_id(statement.invite_key))
        if invite is None or invite.invite_key != statement.invite_key:
            raise broken("unknown_invite", "no invite on the chain has that key")
        if invite.used_by is not None:
            raise broken("invite_used", f"the invite was used by {invite.used_by}")
        if invite.cancelled:
            raise broken("invite_cancelled", "the invite was cancelled")
        if statement.at > invite.expires_at:
            raise broken("invite_expired", "the join is dated after the invite expired")
        inviter = self.members[invite.invited_by]
        # An invite speaks for its admin: one revoked or demoted since can no longer add anyone.
        if not (inviter.active and inviter.admin):
            raise broken("inviter_gone", f"{inviter.key_id}, who invited, is no longer an admin")
        if statement.name != invite.name:
            raise broken("name_mismatch", f"the invite is for {invite.name!r}")
        self._check_new_key(statement.seq, statement.key)
        self._check_name(statement.seq, statement.name, None)
        self._put(statement.key, statement.name, admin=invite.admin, at=statement.at)
        self.invites[invite.invite_key_id] = msgspec.structs.replace(
            invite, used_by=_id(statement.key)
        )

    def _put(self, key: str, name: str, *, admin: bool, at: float) -> None:
        member_id = _id(key)
        self.members[member_id] = ChainMember(
            key_id=member_id, key=key, name=name, admin=admin, added_at=at, names=(name,)
        )

    def _admins(self) -> list[ChainMember]:
        return _admins(self.members)

    def _active(self, seq: int, member_id: str) -> ChainMember:
        """The active member with key id ``member_id``."""
        member = self.members.get(member_id)
        if member is None:
            raise _Broken(seq)("unknown_member", f"{member_id} is not on the roster")
        if not member.active:
            raise _Broken(seq)("member_revoked", f"{member_id} was revoked")
        return member

    def _check_new_key(self, seq: int, key: str) -> None:
        """A key the chain has never named, as a member or as an invite's key."""
        new_id = _id(key)
        if new_id in self.members or new_id in self.invites:
            # Revoked is for good: a key that came back would carry its old standing.
            raise _Broken(seq)("key_known", f"{new_id} is already on the chain")

    def _check_name(self, seq: int, name: str, owner: str | None, group: str = "") -> None:
        """A valid name no other active member and no other group has (letter case aside:
        ``Ada`` is ``ada``): an audience names either, and must mean one thing. ``group`` is
        the group being named (its own name is no clash)."""
        if not _NAME.fullmatch(name):
            raise _Broken(seq)("bad_name", f"{name!r} is not 1-64 letters, digits, '.', '-' or '_'")
        for member in self.members.values():
            if member.active and member.key_id != owner and member.name.lower() == name.lower():
                raise _Broken(seq)("name_taken", f"{member.key_id} is named {member.name!r}")
        for other in self.groups:
            if other != group and other.lower() == name.lower():
                raise _Broken(seq)("name_taken", f"a group is named {other!r}")


class _Broken:
    """Makes the error for one statement: ``_Broken(seq)(reason, detail)``."""

    def __init__(self, seq: int) -> None:
        self.seq = seq

    def __call__(self, reason: str, detail: str) -> RosterChainBroken:
        return RosterChainBroken(self.seq, reason, detail)


def _admins(members: dict[str, ChainMember]) -> list[ChainMember]:
    """The members that are admins now."""
    return [m for m in members.values() if m.active and m.admin]


def _op(statement: Statement) -> str:
    return type(statement).__name__.lower()


def _id(key: str) -> str:
    """The key id of a public key text that :meth:`_Fold._place` checked."""
    return key_id(public_key_from_text(key))
