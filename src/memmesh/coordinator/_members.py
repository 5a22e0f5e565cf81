"""The team's roster in the coordinator's store file: its members and the invites to join it.

``coord_members`` holds one row per key ever admitted: its member id, the name it goes by, whether
it is an admin, when it was added and, once revoked, when. A revoked key keeps its row (members
learn from it to drop that key's items) and its name is free again; two active members never
share a name. ``coord_invites`` holds each invite by the SHA-256 of its secret (the secret itself
never reaches the coordinator), whom it is for, until when, who made it and when it was used.
Every function runs on the transaction or read the caller holds. Once the team's roster is
signed, ``coord_members`` is kept as what the chain says (:func:`put_member`).
"""

from typing import Any, NamedTuple

from memmesh.coordinator.storage import Tables, Tx
from memmesh.net.presence import RosterMember

__all__ = [
    "BOOTSTRAP",
    "ROSTER_SCHEMA",
    "InviteRow",
    "active_admins",
    "active_named",
    "add_invite",
    "add_member",
    "drop_unused_invites",
    "enforced",
    "find",
    "invite",
    "member",
    "members",
    "open_invites",
    "put_member",
    "revoke",
    "revoked_named",
    "set_admin",
    "use_invite",
]

_V1 = """
CREATE TABLE coord_members (
    key         TEXT PRIMARY KEY,
    key_id      TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    admin       INTEGER NOT NULL CHECK (admin IN (0, 1)),
    added_at    REAL NOT NULL,
    revoked_at  REAL
);
CREATE UNIQUE INDEX coord_members_active_name ON coord_members (name) WHERE revoked_at IS NULL;
CREATE TABLE coord_invites (
    digest      TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    admin       INTEGER NOT NULL CHECK (admin IN (0, 1)),
    expires_at  REAL NOT NULL,
    created_by  TEXT NOT NULL,
    used_at     REAL
);
"""

# Version 2 keeps the signed roster's statements (:mod:`memmesh.coordinator._chain`), in order;
# ``coord_members`` is from then on what they say (:mod:`memmesh.coordinator.signed_roster`).
_V2 = """
CREATE TABLE coord_roster_chain (
    seq         INTEGER PRIMARY KEY,
    hash        TEXT NOT NULL UNIQUE,
    body        BLOB NOT NULL,
    signatures  BLOB NOT NULL
);
"""

# ``rowid`` keeps the order members were added in, as SQLite's own does.
_PG_V1 = """
CREATE TABLE coord_members (
    key         text PRIMARY KEY,
    key_id      text NOT NULL UNIQUE,
    name        text NOT NULL,
    admin       integer NOT NULL CHECK (admin IN (0, 1)),
    added_at    double precision NOT NULL,
    revoked_at  double precision,
    rowid       bigint GENERATED ALWAYS AS IDENTITY
);
CREATE UNIQUE INDEX coord_members_active_name ON coord_members (name) WHERE revoked_at IS NULL;
CREATE TABLE coord_invites (
    digest      text PRIMARY KEY,
    name        text NOT NULL,
    admin       integer NOT NULL CHECK (admin IN (0, 1)),
    expires_at  double precision NOT NULL,
    created_by  text NOT NULL,
    used_at     double precision
);
CREATE TABLE coord_roster_chain (
    seq         bigint PRIMARY KEY,
    hash        text NOT NULL UNIQUE,
    body        bytea NOT NULL,
    signatures  bytea NOT NULL
);
"""

ROSTER_SCHEMA = Tables(owner="roster", sqlite=(_V1, _V2), postgresql=(_PG_V1,))

# ``created_by`` of the invite the coordinator makes for its first admin.
BOOTSTRAP = "bootstrap"

_MEMBER = "SELECT name, key, key_id, admin, added_at, revoked_at FROM coord_members"


class InviteRow(NamedTuple):
    """One invite as stored."""

    digest: str
    name: str
    admin: bool
    expires_at: float
    created_by: str
    used_at: float | None


def _member(row: tuple[Any, ...]) -> RosterMember:
    name, key, key_id, admin, added_at, revoked_at = row
    return RosterMember(
        name=name,
        key=key,
        key_id=key_id,
        admin=bool(admin),
        added_at=float(added_at),
        revoked_at=None if revoked_at is None else float(revoked_at),
    )


def enforced(tx: Tx) -> bool:
    """Whether the roster has any member (before the first one, it is not enforced)."""
    (exists,) = tx.execute("SELECT EXISTS (SELECT 1 FROM coord_members)").fetchone()
    return bool(exists)


def member(tx: Tx, key: str) -> RosterMember | None:
    """The roster's entry for ``key`` (revoked or not), if it has one."""
    row = tx.execute(f"{_MEMBER} WHERE key = ?", (key,)).fetchone()
    return None if row is None else _member(row)


def members(tx: Tx) -> list[RosterMember]:
    """Every member ever admitted, revoked ones included, in the order they were added."""
    rows = tx.execute(f"{_MEMBER} ORDER BY added_at, rowid").fetchall()
    return [_member(row) for row in rows]


def active_named(tx: Tx, name: str) -> RosterMember | None:
    """The active member called ``name``, if there is one."""
    row = tx.execute(f"{_MEMBER} WHERE name = ? AND revoked_at IS NULL", (name,)).fetchone()
    return None if row is None else _member(row)


def revoked_named(tx: Tx, name: str) -> RosterMember | None:
    """The member called ``name`` who was revoked last, if one was."""
    row = tx.execute(
        f"{_MEMBER} WHERE name = ? AND revoked_at IS NOT NULL ORDER BY revoked_at DESC LIMIT 1",
        (name,),
    ).fetchone()
    return None if row is None else _member(row)


def find(tx: Tx, text: str) -> RosterMember | None:
    """The member ``text`` names: a key, a member id, or a name (the active member of that
    name, else the one of that name revoked last)."""
    row = tx.execute(
        f"{_MEMBER} WHERE key = ? OR key_id = ? OR name = ? "
        "ORDER BY key = ? DESC, key_id = ? DESC, revoked_at IS NULL DESC, revoked_at DESC "
        "LIMIT 1",
        (text, text, text, text, text),
    ).fetchone()
    return None if row is None else _member(row)


def active_admins(tx: Tx) -> int:
    """How many admins are not revoked."""
    (count,) = tx.execute(
        "SELECT count(*) FROM coord_members WHERE admin = 1 AND revoked_at IS NULL"
    ).fetchone()
    return int(count)


def add_member(tx: Tx, entry: RosterMember) -> None:
    """Put ``entry`` on the roster (the caller has checked its key and name are free)."""
    tx.execute(
        "INSERT INTO coord_members (key, key_id, name, admin, added_at, revoked_at) "
        "VALUES (?, ?, ?, ?, ?, NULL)",
        (entry.key, entry.key_id, entry.name, int(entry.admin), entry.added_at),
    )


def revoke(tx: Tx, key: str, at: float) -> None:
    """Mark ``key`` revoked at ``at`` (a key already revoked keeps its first time)."""
    tx.execute(
        "UPDATE coord_members SET revoked_at = ? WHERE key = ? AND revoked_at IS NULL", (at, key)
    )


def put_member(tx: Tx, entry: RosterMember) -> None:
    """Make ``entry``'s key's row say what the signed roster says of it: added if it has none,
    else its name, role and revocation (a key revoked before keeps its first time, and a row
    keeps the time it was added: a team's roster signed after the fact keeps its history)."""
    tx.execute(
        "INSERT INTO coord_members (key, key_id, name, admin, added_at, revoked_at) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET name = excluded.name, "
        "admin = excluded.admin, "
        "revoked_at = coalesce(coord_members.revoked_at, excluded.revoked_at)",
        (
            entry.key,
            entry.key_id,
            entry.name,
            int(entry.admin),
            entry.added_at,
            entry.revoked_at,
        ),
    )


def set_admin(tx: Tx, key: str, admin: bool) -> None:
    """Make ``key``'s member an admin (``admin``) or no longer one."""
    tx.execute("UPDATE coord_members SET admin = ? WHERE key = ?", (int(admin), key))


def invite(tx: Tx, digest: str) -> InviteRow | None:
    """The invite whose secret has SHA-256 ``digest``, if there is one."""
    row = tx.execute(
        "SELECT digest, name, admin, expires_at, created_by, used_at FROM coord_invites "
        "WHERE digest = ?",
        (digest,),
    ).fetchone()
    if row is None:
        return None
    return InviteRow(row[0], row[1], bool(row[2]), float(row[3]), row[4], row[5])


def add_invite(tx: Tx, row: InviteRow) -> None:
    """Store a new invite (the caller has checked its digest is new)."""
    tx.execute(
        "INSERT INTO coord_invites (digest, name, admin, expires_at, created_by, used_at) "
        "VALUES (?, ?, ?, ?, ?, NULL)",
        (row.digest, row.name, int(row.admin), row.expires_at, row.created_by),
    )


def use_invite(tx: Tx, digest: str, at: float) -> None:
    """Mark the invite used at ``at``: it admits nobody else."""
    tx.execute("UPDATE coord_invites SET used_at = ? WHERE digest = ?", (at, digest))


def open_invites(tx: Tx, now: float, created_by: str) -> list[InviteRow]:
    """The unused, unexpired invites ``created_by`` made."""
    rows = tx.execute(
        "SELECT digest, name, admin, expires_at, created_by, used_at FROM coord_invites "
        "WHERE created_by = ? AND used_at IS NULL AND expires_at > ? ORDER BY expires_at",
        (created_by, now),
    ).fetchall()
    return [InviteRow(r[0], r[1], bool(r[2]), float(r[3]), r[4], r[5]) for r in rows]


def drop_unused_invites(tx: Tx, created_by: str) -> None:
    """Delete every unused invite ``created_by`` made: none of them admits anyone any more."""
    tx.execute("DELETE FROM coord_invites WHERE created_by = ? AND used_at IS NULL", (created_by,))
