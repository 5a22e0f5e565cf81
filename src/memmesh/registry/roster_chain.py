"""The signed roster: a team's membership as a chain of statements its admins sign.

Every change to the roster - add, revoke, promote, demote, rename, invite, join, a member's
role, a group's members, a project's grants - is a
statement signed by an admin's key (a join by the joining key and the invite's key), that
names its place (``seq``) and the hash of the statement before it (``prev``). Statement 0,
the genesis, names the team and its root key, the first admin; a member pins the root's key
id from the join code and accepts only a chain that starts there and keeps every rule
(:func:`verify_chain`), and, once it has seen a head, only chains that extend it
(:func:`extends`). Whoever stores and serves the chain - the coordinator - can withhold its
newest statements from a member that saw none of them, but cannot forge, alter, reorder or
fork it, nor name anyone a member.

The rules, format and reason codes are in docs/architecture.md ("Signed roster (chain)").
"""

import base64
import time
from collections.abc import Sequence
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

from memmesh.registry._roster_fold import (
    EVERYONE,
    MAX_INVITE_TTL,
    ChainHead,
    ChainInvite,
    ChainMember,
    ProjectGrant,
    RosterState,
    _Fold,
)
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
    sign_statement,
)
from memmesh.registry.envelopes import Audience
from memmesh.registry.errors import RosterChainBroken
from memmesh.registry.identity import Identity

__all__ = [
    "EVERYONE",
    "MAX_INVITE_TTL",
    "ROSTER_FORMAT",
    "ChainHead",
    "ChainInvite",
    "ChainMember",
    "ProjectGrant",
    "RosterState",
    "SignedStatement",
    "Statement",
    "add",
    "demote",
    "display_names",
    "extend",
    "extends",
    "genesis",
    "grant",
    "group",
    "invite",
    "invite_identity",
    "join",
    "promote",
    "rename",
    "revoke",
    "set_role",
    "sign_statement",
    "verify_chain",
]

# The fewest characters of a member id shown beside a name that could mislead.
SHORT_ID = 6


def verify_chain(
    statements: Sequence[SignedStatement],
    *,
    root_key_id: str,
    team: str,
    cached: ChainHead | None = None,
) -> RosterState:
    """The roster that ``statements`` say, for ``team`` whose root key has id ``root_key_id``.

    Checks each statement's place (seq 0, 1, 2, ... each naming the hash of the one before),
    time (never before the one before), every signature and the rule of its op. With
    ``cached``, the head this member saw before, the chain must also extend it.

    Raises :class:`RosterChainBroken` (with the seq and a reason code) at the first break.
    """
    fold = _Fold(team, root_key_id)
    for signed in statements:
        fold.apply(signed)
    state = fold.state()
    if cached is not None and not extends(cached, statements):
        shorter = len(statements) <= cached.seq
        raise RosterChainBroken(
            None if shorter else cached.seq,
            "rollback" if shorter else "fork",
            f"it does not extend statement {cached.seq} this member saw before"
            + (f"; it ends at statement {state.head.seq}" if shorter else ""),
        )
    return state


def extend(state: RosterState, signed: SignedStatement) -> RosterState:
    """The roster after ``signed``, checked as the next statement of the verified ``state``
    (which is not changed); raises :class:`RosterChainBroken` if it breaks a rule."""
    fold = _Fold(state.team, state.root_key_id, state)
    fold.apply(signed)
    return fold.state()


def extends(head: ChainHead, statements: Sequence[SignedStatement]) -> bool:
    """Whether a chain (one :func:`verify_chain` accepts) extends ``head``, a head seen before:
    its statement ``head.seq`` has ``head.hash``. A shorter chain is a rollback, another hash
    at that place a fork; both are refused."""
    return len(statements) > head.seq and statements[head.seq].hash == head.hash


def display_names(state: RosterState) -> dict[str, str]:
    """How output names each member (by key id): the name alone, or ``"ada (k3f9a2)"`` with
    the member id's shortest unique prefix (at least 6 characters) when the name could pass
    one member off as another: another key, active or revoked, has or had the same name
    (letter case aside), or this key's name changed on the chain."""
    holders: dict[str, set[str]] = {}
    for member in state.members.values():
        for name in member.names:
            holders.setdefault(name.lower(), set()).add(member.key_id)
    shown = _short_ids(list(state.members))
    names = {}
    for member_id, member in state.members.items():
        clash = any(len(holders[name.lower()]) > 1 for name in member.names)
        plain = not clash and len(member.names) == 1
        names[member_id] = member.name if plain else f"{member.name} ({shown[member_id]})"
    return names


def genesis(root: Identity, team: str, *, name: str, at: float | None = None) -> SignedStatement:
    """Statement 0 of ``team``'s chain: ``root`` (named ``name``) is its root and first admin."""
    body = Genesis(
        format=ROSTER_FORMAT, team=team, seq=0, prev="", at=time.time() if at is None else at,
        signer=root.public_key_text, key=root.public_key_text, name=name,
    )  # fmt: skip
    signed = sign_statement(body, root)
    _Fold(team, root.key_id).apply(signed)  # a bad name is refused here, not by the readers
    return signed


def add(
    state: RosterState,
    signer: Identity,
    *,
    key: str,
    name: str,
    admin: bool = False,
    at: float | None = None,
) -> SignedStatement:
    """The admin ``signer`` adds the public key ``key`` (its text) as ``name``."""
    return _checked(state, signer, Add, key=key, name=name, admin=admin, at=at)


def revoke(
    state: RosterState, signer: Identity, *, key: str, at: float | None = None
) -> SignedStatement:
    """The admin ``signer`` revokes the member ``key`` for good (or cancels an open invite
    whose key that is)."""
    return _checked(state, signer, Revoke, key=key, at=at)


def promote(
    state: RosterState, signer: Identity, *, key: str, at: float | None = None
) -> SignedStatement:
    """The admin ``signer`` makes the member ``key`` an admin."""
    return _checked(state, signer, Promote, key=key, at=at)


def demote(
    state: RosterState, signer: Identity, *, key: str, at: float | None = None
) -> SignedStatement:
    """The admin ``signer`` makes the admin ``key`` a plain member."""
    return _checked(state, signer, Demote, key=key, at=at)


def rename(
    state: RosterState, signer: Identity, *, key: str, name: str, at: float | None = None
) -> SignedStatement:
    """The admin ``signer`` renames the member ``key`` to ``name``."""
    return _checked(state, signer, Rename, key=key, name=name, at=at)


def set_role(
    state: RosterState, signer: Identity, *, key: str, role: str, at: float | None = None
) -> SignedStatement:
    """The admin ``signer`` makes the member ``key`` a ``reader`` or a plain ``member``."""
    return _checked(state, signer, Role, key=key, role=role, at=at)


def group(
    state: RosterState,
    signer: Identity,
    *,
    name: str,
    add: Sequence[str] = (),
    remove: Sequence[str] = (),
    at: float | None = None,
) -> SignedStatement:
    """The admin ``signer`` puts the members ``add`` (member ids) into the group ``name`` and
    takes ``remove`` out of it."""
    added, removed = tuple(sorted(set(add))), tuple(sorted(set(remove)))
    return _checked(state, signer, Group, group=name, add=added, remove=removed, at=at)


def grant(
    state: RosterState,
    signer: Identity,
    *,
    project: str,
    read: Audience | None,
    publish: Audience | None,
    at: float | None = None,
) -> SignedStatement:
    """The admin ``signer`` says who may read and who may publish ``project``'s items
    (``None``: every member)."""
    return _checked(state, signer, Grant, project=project, read=read, publish=publish, at=at)


def invite(
    state: RosterState,
    signer: Identity,
    *,
    name: str,
    expires_at: float,
    admin: bool = False,
    at: float | None = None,
) -> tuple[SignedStatement, str]:
    """The admin ``signer`` invites one member, ``name``, until ``expires_at``: the statement
    and the invite's secret (the private half of a key made for it alone), which the join code
    carries and which nothing else ever holds."""
    key = Ed25519PrivateKey.generate()
    secret = key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    invite_key = Identity(key).public_key_text
    signed = _checked(
        state, signer, Invite, invite_key=invite_key, name=name, admin=admin,
        expires_at=expires_at, at=at,
    )  # fmt: skip
    return signed, base64.urlsafe_b64encode(secret).decode("ascii").rstrip("=")


def join(
    state: RosterState,
    member: Identity,
    *,
    invite_secret: str,
    name: str,
    at: float | None = None,
) -> SignedStatement:
    """``member`` joins as ``name`` with the invite whose secret ``invite_secret`` is (from
    the join code), signing with its own key and the invite's; raises
    :class:`RosterChainBroken` (``bad_invite_secret``) for a secret that is no key."""
    ephemeral = invite_identity(invite_secret)
    body = Join(
        **_place(state, member, at), key=member.public_key_text, name=name,
        invite_key=ephemeral.public_key_text,
    )  # fmt: skip
    signed = sign_statement(body, member, ephemeral)
    extend(state, signed)
    return signed


def invite_identity(secret: str) -> Identity:
    """The invite's key pair from its secret's text (the join code's); raises
    :class:`RosterChainBroken` (``bad_invite_secret``) for a secret that is no key."""
    try:
        raw = base64.urlsafe_b64decode(secret + "=" * (-len(secret) % 4))
        if len(raw) != 32:
            raise ValueError("not 32 bytes")
        return Identity(Ed25519PrivateKey.from_private_bytes(raw))
    except ValueError:
        raise RosterChainBroken(
            None, "bad_invite_secret", "the invite's secret is not 32 bytes of URL-safe base64"
        ) from None


def _place(state: RosterState, signer: Identity, at: float | None) -> dict[str, Any]:
    """The fields that put a new statement after ``state``'s head, signed by ``signer``; its
    time is ``at``, or now but never before the head's (a clock behind would be refused)."""
    return {
        "format": ROSTER_FORMAT,
        "team": state.team,
        "seq": state.head.seq + 1,
        "prev": state.head.hash,
        "at": max(time.time(), state.head.at) if at is None else at,
        "signer": signer.public_key_text,
    }


def _checked(
    state: RosterState,
    signer: Identity,
    op: type[Add | Revoke | Promote | Demote | Rename | Invite | Role | Group | Grant],
    *,
    at: float | None,
    **fields: Any,
) -> SignedStatement:
    """An admin's statement ``op`` after ``state``, signed and checked as the chain would."""
    signed = sign_statement(op(**_place(state, signer, at), **fields), signer)
    extend(state, signed)
    return signed


def _short_ids(member_ids: list[str]) -> dict[str, str]:
    """Each member id's shortest prefix of at least :data:`SHORT_ID` characters that no other
    starts with (ids are 80 bits: a key made to share a short prefix is still told apart)."""
    ordered = sorted(member_ids)
    shown = {}
    for index, member_id in enumerate(ordered):
        length = SHORT_ID
        for other in ordered[max(index - 1, 0) : index] + ordered[index + 1 : index + 2]:
            shared = next(
                (n for n, (a, b) in enumerate(zip(member_id, other, strict=False)) if a != b),
                len(member_id),
            )
            length = max(length, shared + 1)
        shown[member_id] = member_id[:length]
    return shown
