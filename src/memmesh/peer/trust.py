"""The roster a member trusts: the coordinator's, merged with team.yaml's ``members``.

Both a member asking the team and a peer daemon answering it decide by this roster: a member
asks only the peers of active members and keeps only their items; a peer answers only active
members. Everyone is known by member id (the fingerprint of the key, which every signature
check ties to the key itself).

* The coordinator's roster counts once it is enforced (a team that has one) or names anyone
  revoked; a member it revokes is revoked whatever team.yaml says. Where the team's roster is
  signed, the roster given here is the one its admins signed, verified
  (:func:`memmesh.peer.chain.trusted_roster`), never the coordinator's list.
* team.yaml's ``members`` (name and public key, or member id) add members of the member's own
  choosing, and their names win over the coordinator's.
* With neither, there is no roster at all (:attr:`TrustedRoster.known` is false): a legacy team,
  whose members ask no peer and whose peers answer nobody.
* A revocation the coordinator has told of is remembered in the member's home
  (:data:`REVOKED_FILENAME`, :func:`note_revoked`): a revoked key never comes back, so it stays
  revoked while the coordinator cannot be reached (down, or kept away by the revoked member)
  and after a restart, whatever team.yaml lists.
"""

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

import msgspec

from memmesh.net.presence import Roster
from memmesh.policy.config import Member
from memmesh.registry.errors import BadSignature
from memmesh.registry.identity import key_id, public_key_from_text

__all__ = [
    "REVOKED_FILENAME",
    "Trusted",
    "TrustedRoster",
    "member_id_of",
    "note_revoked",
    "revoked_seen",
]

# The member ids the coordinator has said are revoked, one per line, in the member's home.
REVOKED_FILENAME = "revoked-members"


class Trusted(msgspec.Struct, frozen=True, kw_only=True):
    """One member of the roster: their name, member id, and whether they were revoked."""

    name: str
    key_id: str
    revoked: bool = False


def member_id_of(key: str) -> str:
    """The member id a team.yaml key stands for: the fingerprint of a public key, or the text
    itself when it is not one (it is then meant as a member id)."""
    try:
        return key_id(public_key_from_text(key))
    except BadSignature:
        return key


class TrustedRoster:
    """The coordinator's ``roster`` (``None``: it gave none) merged with team.yaml's
    ``members``; the member ids in ``revocations`` (told of before) are revoked whatever
    either says."""

    def __init__(
        self, roster: Roster | None, members: Iterable[Member], revocations: Iterable[str] = ()
    ) -> None:
        self._by_id: dict[str, Trusted] = {}
        held = roster.members if roster is not None else []
        self.known = bool(roster and roster.enforced)
        for entry in held:
            if roster is not None and (roster.enforced or entry.revoked_at is not None):
                revoked = entry.revoked_at is not None
                self._by_id[entry.key_id] = Trusted(
                    name=entry.name, key_id=entry.key_id, revoked=revoked
                )
        for member in members:
            self.known = True
            member_id = member_id_of(member.key)
            listed = self._by_id.get(member_id)
            revoked = listed is not None and listed.revoked
            self._by_id[member_id] = Trusted(name=member.name, key_id=member_id, revoked=revoked)
        for member_id in revocations:
            listed = self._by_id.get(member_id)
            if listed is not None:
                self._by_id[member_id] = msgspec.structs.replace(listed, revoked=True)

    def entry(self, member_id: str) -> Trusted | None:
        """The roster's entry for ``member_id`` (revoked or not), if it has one."""
        return self._by_id.get(member_id)

    def refusal(self, member_id: str) -> str | None:
        """Why ``member_id`` is not an active member (``no_roster``, ``outside_roster``,
        ``revoked``), or ``None`` when it is one."""
        if not self.known:
            return "no_roster"
        entry = self._by_id.get(member_id)
        if entry is None:
            return "outside_roster"
        return "revoked" if entry.revoked else None

    def name_of(self, member_id: str) -> str:
        """The roster's name for ``member_id``, or the member id itself when it has none."""
        entry = self._by_id.get(member_id)
        return entry.name if entry is not None else member_id

    def __repr__(self) -> str:
        return f"TrustedRoster(known={self.known}, members={len(self._by_id)})"


def revoked_seen(home: Path) -> frozenset[str]:
    """The member ids the coordinator has said are revoked, as remembered in ``home``."""
    try:
        text = (home / REVOKED_FILENAME).read_text(encoding="ascii")
    except (OSError, UnicodeError):
        return frozenset()
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def note_revoked(home: Path, roster: Roster | None) -> frozenset[str]:
    """Remember in ``home`` the members ``roster`` says are revoked, beside those remembered
    before; returns them all."""
    seen = revoked_seen(home)
    told = {m.key_id for m in roster.members if m.revoked_at is not None} if roster else set()
    if told <= seen:
        return seen
    every = seen | told
    handle, temporary = tempfile.mkstemp(prefix=f".{REVOKED_FILENAME}.", dir=home)
    try:
        with os.fdopen(handle, "w", encoding="ascii") as out:
            out.write("".join(f"{member_id}\n" for member_id in sorted(every)))
        Path(temporary).replace(home / REVOKED_FILENAME)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(temporary).unlink()
        raise
    return every
