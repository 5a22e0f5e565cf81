"""The signed roster's statements as they are signed, stored and sent.

A statement's body is one of the tagged structs below (``op`` names it), encoded as canonical
msgspec JSON; a :class:`SignedStatement` carries those exact bytes and the signatures over
them. A statement's hash is the SHA-256 of its body bytes: the signatures are checked, but
are not part of the link, so the chain is what the signers wrote, whatever bytes a signature
happens to be sent in.
"""

import hashlib
from typing import Annotated, Literal

import msgspec

from memmesh.registry.envelopes import Audience, Counter, Timestamp
from memmesh.registry.identity import Identity

__all__ = [
    "MAX_STATEMENT_BYTES",
    "ROSTER_FORMAT",
    "Add",
    "Demote",
    "Genesis",
    "Grant",
    "Group",
    "Invite",
    "Join",
    "Promote",
    "Rename",
    "Revoke",
    "Role",
    "SignedStatement",
    "Statement",
    "decode_body",
    "sign_statement",
]

ROSTER_FORMAT = 1
# A body holds a few keys and names: far below this, which only bounds what is decoded.
MAX_STATEMENT_BYTES = 4096
# The text of a public key (43 characters of URL-safe base64) or "" where there is none.
_Key = Annotated[str, msgspec.Meta(max_length=64)]
_Name = Annotated[str, msgspec.Meta(max_length=128)]
_Signature = Annotated[bytes, msgspec.Meta(min_length=64, max_length=64)]


class _Body(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="op"):
    """What every statement carries: its place in the team's chain, its time and its signer."""

    format: int
    team: _Name
    seq: Counter
    prev: Annotated[str, msgspec.Meta(max_length=64)]  # hash of the statement before; "" at 0
    at: Timestamp
    signer: _Key


class Genesis(_Body, frozen=True, kw_only=True, forbid_unknown_fields=True, tag="genesis"):
    """Statement 0: the team and its root key (the first admin, the signer), with its name."""

    key: _Key
    name: _Name


class Add(_Body, frozen=True, kw_only=True, forbid_unknown_fields=True, tag="add"):
    """An active admin puts ``key`` on the roster as ``name``, an admin if ``admin``."""

    key: _Key
    name: _Name
    admin: bool


class Revoke(_Body, frozen=True, kw_only=True, forbid_unknown_fields=True, tag="revoke"):
    """An active admin revokes a member's ``key`` for good, or cancels an open invite's key."""

    key: _Key


class Promote(_Body, frozen=True, kw_only=True, forbid_unknown_fields=True, tag="promote"):
    """An active admin makes the active member ``key`` an admin."""

    key: _Key


class Demote(_Body, frozen=True, kw_only=True, forbid_unknown_fields=True, tag="demote"):
    """An active admin makes the admin ``key`` a plain member."""

    key: _Key


class Rename(_Body, frozen=True, kw_only=True, forbid_unknown_fields=True, tag="rename"):
    """An active admin gives the active member ``key`` the name ``name``."""

    key: _Key
    name: _Name


class Invite(_Body, frozen=True, kw_only=True, forbid_unknown_fields=True, tag="invite"):
    """An active admin lets whoever holds the private half of ``invite_key`` (a key made for
    this invite alone, carried by the join code) join once as ``name`` until ``expires_at``."""

    invite_key: _Key
    name: _Name
    admin: bool
    expires_at: Timestamp


class Join(_Body, frozen=True, kw_only=True, forbid_unknown_fields=True, tag="join"):
    """A new member's ``key`` (the signer) joins as ``name`` by the invite of ``invite_key``;
    signed by both keys."""

    key: _Key
    name: _Name
    invite_key: _Key


class Role(_Body, frozen=True, kw_only=True, forbid_unknown_fields=True, tag="role"):
    """An active admin makes the active member ``key`` (not an admin) a ``reader``, who asks
    the team but publishes nothing, or a plain ``member`` again."""

    key: _Key
    role: Literal["member", "reader"]


class Group(_Body, frozen=True, kw_only=True, forbid_unknown_fields=True, tag="group"):
    """An active admin puts the active members ``add`` (member ids) into the group ``group``
    and takes ``remove`` out of it; the group exists from its first member on, and stays
    (empty, perhaps) so that what names it keeps its meaning."""

    group: _Name
    add: Annotated[tuple[_Name, ...], msgspec.Meta(max_length=256)] = ()
    remove: Annotated[tuple[_Name, ...], msgspec.Meta(max_length=256)] = ()


class Grant(_Body, frozen=True, kw_only=True, forbid_unknown_fields=True, tag="grant"):
    """An active admin says who may read (``read``) and who may publish (``publish``) the
    items of ``project``, in place of what was said before; ``None`` leaves that open to every
    member (a reader still publishes nothing)."""

    project: _Name
    read: Audience | None
    publish: Audience | None


Statement = (
    Genesis | Add | Revoke | Promote | Demote | Rename | Invite | Join | Role | Group | Grant
)


class SignedStatement(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A statement's exact body bytes and its signatures (bytes are base64 in JSON): the
    signer's first, then, for a join only, the invite key's."""

    body: Annotated[bytes, msgspec.Meta(min_length=2, max_length=MAX_STATEMENT_BYTES)]
    signatures: Annotated[tuple[_Signature, ...], msgspec.Meta(min_length=1, max_length=2)]

    @property
    def hash(self) -> str:
        """The SHA-256 of the body bytes, hex: what the next statement's ``prev`` names."""
        return hashlib.sha256(self.body).hexdigest()


_decoder = msgspec.json.Decoder(Statement, strict=True)


def decode_body(body: bytes) -> Statement | str:
    """The statement in ``body``, or why it is none (a sentence): bytes that do not decode
    strictly, or that are not the one canonical encoding of what they decode to (so that no
    two byte strings, and no two readers, ever see one statement differently)."""
    try:
        statement = _decoder.decode(body)
    except msgspec.DecodeError as exc:
        return f"the statement is malformed: {exc}"
    if msgspec.json.encode(statement) != body:
        return "the statement is not in its canonical encoding"
    return statement


def sign_statement(
    statement: Statement, signer: Identity, invite: Identity | None = None
) -> SignedStatement:
    """``statement`` signed by ``signer`` (and, for a join, by the ``invite`` key too).

    This signs whatever it is given; :func:`memmesh.registry.roster_chain.extend` says
    whether the chain accepts it.
    """
    body = msgspec.json.encode(statement)
    signatures = (signer.sign(body),) if invite is None else (signer.sign(body), invite.sign(body))
    return SignedStatement(body=body, signatures=signatures)
