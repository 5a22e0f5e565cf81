"""The signed roster as a member believes it: read from the coordinator, verified against the
root the member pinned at join, and kept in the member's home.

A member whose team.yaml pins the team's root (``roster_root``, the first admin's member id,
which ``mem team join`` takes from the join code) never takes the coordinator's list of members
on its word. It reads the chain of statements the team's admins signed
(``POST /v1/roster/chain``, only the part it does not hold), checks every statement from the
root on (:func:`~memmesh.registry.roster_chain.verify_chain`), and derives the roster from that
alone: who is a member, who is revoked, and each member's name, with the short member id beside
a name that another key has or had, or that changed (:func:`~memmesh.registry.roster_chain.
display_names`). The coordinator's operator can therefore neither add a key nor relabel an
author: at worst it withholds the newest statements.

The verified chain is kept in ``HOME/roster-chain.json`` (:data:`CHAIN_FILENAME`), and its head
is what every later chain must extend: one that is shorter (a rollback) or differs at that
place (a fork) is refused as :class:`~memmesh.team.errors.RosterNotTrusted`, as is a chain
that breaks any rule, and a coordinator that says the roster is not signed at all. The
coordinator's roster carries the head it was derived from, so that a member whose head is the
same reads nothing more.

A member whose team.yaml pins no root (a team from before the roster was signed) takes the
coordinator's roster as it is (:func:`trusted_roster` returns it unchanged).
"""

import threading
from pathlib import Path

import msgspec

from memmesh._files import FILE_MODE, write_atomically
from memmesh.coordinator.protocol import (
    INVITE_PROOF_CONTEXT,
    ChainRequest,
    ChainResponse,
    InviteProof,
)
from memmesh.net.client import Client
from memmesh.net.errors import BadResponse
from memmesh.net.presence import Roster, RosterMember
from memmesh.policy import Policy
from memmesh.registry.errors import RosterChainBroken
from memmesh.registry.identity import Identity
from memmesh.registry.roster_chain import (
    ChainHead,
    ChainMember,
    RosterState,
    SignedStatement,
    display_names,
    verify_chain,
)
from memmesh.team.errors import RosterNotTrusted

__all__ = [
    "CHAIN_FILENAME",
    "fetch_chain",
    "invite_proof",
    "keep_chain",
    "kept_chain",
    "roster_of",
    "trusted_roster",
    "verified_state",
]

CHAIN_FILENAME = "roster-chain.json"
# Pages read at most in one fetch: far more statements than a team makes in years.
_MAX_PAGES = 100


class _Kept(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What ``roster-chain.json`` holds: whose chain it is, and its statements."""

    format: int
    team: str
    root: str
    statements: list[SignedStatement]


_FORMAT = 1
_decoder = msgspec.json.Decoder(_Kept)
# Verified states by (team, root, head hash): a process that reads the same chain again (a peer
# daemon, a warm server) checks its signatures once.
_verified: dict[tuple[str, str, str], RosterState] = {}
_verified_lock = threading.Lock()


def kept_chain(home: Path, *, team: str, root: str) -> list[SignedStatement]:
    """The chain kept in ``home`` for ``team`` with root ``root`` (empty when there is none,
    or the file is unreadable or another team's)."""
    try:
        kept = _decoder.decode((home / CHAIN_FILENAME).read_bytes())
    except (OSError, msgspec.DecodeError):
        return []
    if kept.format != _FORMAT or kept.team != team or kept.root != root:
        return []
    return kept.statements


def keep_chain(home: Path, team: str, root: str, statements: list[SignedStatement]) -> None:
    """Write ``statements`` (a verified chain) to ``home`` unless what is there is as long
    already: another process may have kept a newer head meanwhile."""
    if len(kept_chain(home, team=team, root=root)) >= len(statements):
        return
    kept = _Kept(format=_FORMAT, team=team, root=root, statements=statements)
    write_atomically(home / CHAIN_FILENAME, msgspec.json.encode(kept).decode(), FILE_MODE)


def _verify(statements: list[SignedStatement], team: str, root: str) -> RosterState:
    """``statements`` verified from the root (once per process for a given head)."""
    key = (team, root, statements[-1].hash)
    with _verified_lock:
        known = _verified.get(key)
    if known is not None and known.head.seq == len(statements) - 1:
        return known
    state = verify_chain(statements, root_key_id=root, team=team)
    with _verified_lock:
        _verified[key] = state
    return state


def invite_proof(team: str, invite: Identity, caller: Identity) -> InviteProof:
    """What lets ``caller``, holding the private half of an invite (``invite``), read the chain
    before it is a member."""
    message = INVITE_PROOF_CONTEXT + team.encode() + b"\x00" + caller.public_key_text.encode()
    return InviteProof(invite_key=invite.public_key_text, signature=invite.sign(message))


def fetch_chain(
    client: Client, *, start: int = 0, invite: InviteProof | None = None
) -> tuple[list[SignedStatement], int]:
    """The coordinator's statements from ``start`` on, every page, and its head's seq (-1: the
    roster is not signed). :class:`BadResponse` for pages that do not follow on."""
    statements: list[SignedStatement] = []
    head_seq = -1
    for _ in range(_MAX_PAGES):
        page = client.post(
            "/v1/roster/chain",
            ChainRequest(start=start + len(statements), invite=invite),
            ChainResponse,
        )
        statements += page.statements
        head_seq = page.head_seq
        if not page.more:
            return statements, head_seq
        if not page.statements:
            break
    raise BadResponse("the coordinator's signed roster does not come to an end")


def verified_state(
    client: Client, home: Path | None, policy: Policy, *, seen: Roster | None = None
) -> RosterState:
    """The roster the team's signed chain says, for a member pinning ``policy.roster_root``.

    The chain kept in ``home`` is extended by what the coordinator holds beyond it (nothing is
    read when ``seen``, a roster the coordinator sent, names the kept head), verified from the
    root, required to extend the kept head, and kept. Raises :class:`RosterNotTrusted`.
    """
    root = policy.roster_root
    assert root is not None, "only a member pinning a root verifies the chain"
    team = policy.team
    kept = kept_chain(home, team=team, root=root) if home is not None else []
    cached: ChainHead | None = None
    if kept:
        try:
            state = _verify(kept, team, root)
        except RosterChainBroken:
            kept = []  # damaged on disk: read the whole chain again
        else:
            cached = state.head
            if seen is not None and (seen.head_seq, seen.head_hash) == (
                state.head.seq,
                state.head.hash,
            ):
                return state
    tail, head_seq = fetch_chain(client, start=len(kept))
    if head_seq < 0:
        raise RosterNotTrusted(
            team, "unsigned", None, "the coordinator says the team's roster is not signed"
        )
    if cached is not None and head_seq < cached.seq:
        raise RosterNotTrusted(
            team, "rollback", None,
            f"the coordinator's roster ends at statement {head_seq}, before statement "
            f"{cached.seq} this member verified",
        )  # fmt: skip
    # Read from the kept head on, a chain that forks before it breaks at its first new
    # statement (prev_mismatch).
    statements = kept + tail
    try:
        state = _verify(statements, team, root)
    except RosterChainBroken as exc:
        raise RosterNotTrusted(team, exc.reason, exc.seq, exc.detail) from None
    if home is not None and tail:
        keep_chain(home, team, root, statements)
    return state


def roster_of(state: RosterState) -> Roster:
    """The roster a verified ``state`` says, each member named as output must show them."""
    names = display_names(state)
    members = sorted(state.members.values(), key=lambda m: (m.added_at, m.key_id))
    return Roster(
        members=[_member(m, names[m.key_id]) for m in members],
        enforced=True,
        head_seq=state.head.seq,
        head_hash=state.head.hash,
    )


def _member(member: ChainMember, name: str) -> RosterMember:
    """One member of the chain as the roster lists it, under the name output shows."""
    return RosterMember(
        name=name, key=member.key, key_id=member.key_id, admin=member.admin,
        added_at=member.added_at, revoked_at=member.revoked_at,
    )  # fmt: skip


def trusted_roster(
    client: Client, home: Path | None, policy: Policy, given: Roster | None
) -> Roster | None:
    """The roster to decide by, where the coordinator sent ``given``: for a member pinning
    the team's root, the verified chain's (:func:`verified_state`), whatever ``given`` lists;
    for one pinning none, ``given`` itself."""
    if policy.roster_root is None:
        return given
    return roster_of(verified_state(client, home, policy, seen=given))
