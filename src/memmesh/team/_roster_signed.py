"""An admin's changes to a signed roster, and a join with an invite from one.

Every change is a statement this admin signs here, after the chain as this member verified it
(:func:`~memmesh.team.chain.verified_state`), and sends to the coordinator
(``POST /v1/roster/statements``), which stores it only if it extends the head it holds. When
another admin's change landed first, the coordinator answers ``409 stale_roster_head``: the
chain is read again, the change checked again on the new head, and signed again (at most
:data:`TRIES` times). The checks the chain's readers make are made first, here
(:mod:`memmesh.registry.roster_chain`), so that a refused change is said in the roster's own
words (:class:`~memmesh.coordinator.errors.LastAdmin`, ...) and nothing is sent.
"""

import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from memmesh.coordinator.errors import (
    BadJoinCode,
    LastAdmin,
    MemberRevoked,
    NoSuchMember,
    NotAnAdmin,
)
from memmesh.coordinator.invites import JoinCode
from memmesh.coordinator.membership import when
from memmesh.coordinator.protocol import (
    JoinRequest,
    JoinResponse,
    StatementsRequest,
    StatementsResponse,
)
from memmesh.errors import MemmeshError
from memmesh.net.client import Client
from memmesh.net.connect import coordinator_client
from memmesh.net.errors import Conflict, Refused
from memmesh.net.presence import RosterMember
from memmesh.net.urls import peer_url
from memmesh.policy import Policy
from memmesh.registry import Identity
from memmesh.registry import roster_chain as chain
from memmesh.registry.errors import RosterChainBroken
from memmesh.registry.roster_chain import ChainMember, RosterState, SignedStatement
from memmesh.team.chain import (
    fetch_chain,
    invite_proof,
    keep_chain,
    kept_chain,
    roster_of,
    verified_state,
)
from memmesh.team.errors import KeyRevoked, RosterNotTrusted

__all__ = [
    "STALE_HEAD",
    "TRIES",
    "Change",
    "Invited",
    "change",
    "change_member",
    "find",
    "invite",
    "join_with_invite",
    "member_of",
    "refusal",
    "revoked_name",
]

# How often a change is signed again on a head that moved meanwhile (another admin's change).
TRIES = 3
# The coordinator's code for a statement that does not follow its head any more.
STALE_HEAD = "stale_roster_head"
# Why a join statement cannot be made with a code: the invite is no longer open.
_UNUSABLE_INVITE = {
    "unknown_invite",
    "invite_used",
    "invite_cancelled",
    "invite_expired",
    "inviter_gone",
    "name_mismatch",
    "name_taken",
    "bad_invite_secret",
}


class Invited(msgspec.Struct, frozen=True, kw_only=True):
    """An invite and its join code (a secret), on the signed chain or the coordinator's table.

    ``revoked_at`` is when a member of that name was revoked (``None`` if none was): their key
    stays refused, so the code admits only a new key, made in a new home."""

    code: str
    name: str
    team: str
    expires_at: float
    admin: bool
    revoked_at: float | None = None


# Signs the statements of one change after a verified roster (and may refuse it).
Change = Callable[[RosterState], list[SignedStatement]]


def find(state: RosterState, member: str) -> ChainMember:
    """The member ``member`` names in ``state``: its member id or public key, else its name
    (letter case aside): the active member of that name, else the one revoked last.
    :class:`NoSuchMember` when none is."""
    members = list(state.members.values())
    for each in members:
        if member in (each.key_id, each.key):
            return each
    named = [m for m in members if m.name.lower() == member.lower()]
    for each in named:
        if each.active:
            return each
    if named:
        return max(named, key=lambda m: m.revoked_at or 0.0)
    raise NoSuchMember(state.team, member)


def revoked_name(state: RosterState, name: str) -> float | None:
    """When the last member named ``name`` was revoked, if none of that name is active."""
    named = [m for m in state.members.values() if m.name.lower() == name.lower()]
    if not named or any(m.active for m in named):
        return None
    return max(m.revoked_at or 0.0 for m in named)


def member_of(state: RosterState, key_id: str) -> RosterMember:
    """The member ``key_id`` as the roster lists it (named as output shows them)."""
    (found,) = [m for m in roster_of(state).members if m.key_id == key_id]
    return found


def refusal(
    exc: RosterChainBroken,
    state: RosterState,
    target: ChainMember | None = None,
    no_change: Callable[[str, str], MemmeshError] | None = None,
) -> MemmeshError:
    """What a change this admin's memmesh refused to sign means, in the roster's words
    (``no_change``: the error for a change that changes nothing); the chain's own error for
    a name or key the chain holds already (``name_taken``, ``key_known``, ``bad_name``)."""
    team, name = state.team, target.name if target is not None else ""
    if exc.reason in ("not_admin", "signer_revoked"):
        return NotAnAdmin(team)
    if exc.reason == "last_admin":
        return LastAdmin(team, name)
    if exc.reason == "unknown_member":
        return NoSuchMember(team, name)
    if exc.reason == "member_revoked" and target is not None and target.revoked_at is not None:
        return MemberRevoked(team, name, target.revoked_at, when(target.revoked_at))
    if exc.reason == "no_change" and no_change is not None:
        return no_change(team, name)
    return exc


def change(
    policy: Policy,
    identity: Identity,
    home: Path | None,
    make: Change,
    *,
    purge: bool = False,
) -> tuple[RosterState, int]:
    """Sign the statements ``make`` builds after the verified roster and have the coordinator
    store them; read, check and sign again on a head that moved (at most :data:`TRIES`
    times). Returns the roster after them, and how many published items were purged.

    Raises what ``make`` raises (nothing is sent then), :class:`RosterNotTrusted`, and the
    client's errors (:class:`Refused` ``stale_roster_head`` once every try was stale)."""
    assert policy.roster_root is not None, "only a member pinning the root signs changes"
    with coordinator_client(policy, identity) as client:
        for attempt in range(TRIES):
            state = verified_state(client, home, policy)
            statements = make(state)
            request = StatementsRequest(statements=statements, purge=purge)
            try:
                answer = client.post("/v1/roster/statements", request, StatementsResponse)
            except Refused as refused:
                if refused.error_code == STALE_HEAD and attempt < TRIES - 1:
                    continue
                raise
            after = state
            for statement in statements:
                after = chain.extend(after, statement)
            if home is not None:
                _keep(home, policy.team, policy.roster_root, state, statements)
            return after, answer.purged
    raise AssertionError("unreachable: the last try returns or raises")


def _keep(
    home: Path, team: str, root: str, before: RosterState, statements: list[SignedStatement]
) -> None:
    """Keep the chain with ``statements`` (accepted after ``before``'s head) appended, when
    the kept one ends at that head."""
    kept = kept_chain(home, team=team, root=root)
    if len(kept) == before.head.seq + 1:
        keep_chain(home, team, root, kept + statements)


def join_with_invite(
    client: Client, code: JoinCode, identity: Identity
) -> tuple[JoinResponse, list[SignedStatement]]:
    """Join with ``code``, an invite on the signed chain: read the chain (proving the invite
    is held), verify it from the code's root, sign the join with this key and the invite's,
    and send it; on a head that moved meanwhile, again (at most :data:`TRIES` times).

    Returns the coordinator's answer and the chain with the join. Raises
    :class:`RosterNotTrusted` for a chain that does not verify from the code's root (nothing
    is sent), :class:`BadJoinCode` for an invite that is no longer open, :class:`KeyRevoked`
    for a key the chain revoked, :class:`Conflict` for one that is a member already."""
    assert code.root is not None
    try:
        invite = chain.invite_identity(code.secret)
    except RosterChainBroken as exc:
        raise BadJoinCode(exc.detail) from None
    proof = invite_proof(code.team, invite, identity)
    for attempt in range(TRIES):
        statements, head_seq = fetch_chain(client, invite=proof)
        state = _verified(statements, head_seq, code)
        statement = _join_statement(state, code, identity)
        try:
            answer = client.post("/v1/join", JoinRequest(statement=statement), JoinResponse)
        except Refused as refused:
            if refused.error_code == STALE_HEAD and attempt < TRIES - 1:
                continue
            raise
        return answer, [*statements, statement]
    raise AssertionError("unreachable: the last try returns or raises")


def _verified(statements: list[SignedStatement], head_seq: int, code: JoinCode) -> RosterState:
    """The chain a joiner read, verified from the code's root."""
    assert code.root is not None
    if head_seq < 0:
        raise RosterNotTrusted(
            code.team,
            "unsigned",
            None,
            "the join code names a signed roster, and the "
            "coordinator says the team's roster is not signed",
        )
    try:
        return chain.verify_chain(statements, root_key_id=code.root, team=code.team)
    except RosterChainBroken as exc:
        raise RosterNotTrusted(code.team, exc.reason, exc.seq, exc.detail) from None


def _join_statement(state: RosterState, code: JoinCode, identity: Identity) -> SignedStatement:
    """This key's join with ``code``'s invite, after ``state``."""
    mine = state.members.get(identity.key_id)
    if mine is not None and mine.revoked_at is not None:
        raise KeyRevoked(identity.key_id, code.team, when(mine.revoked_at))
    if mine is not None:
        raise Conflict(f"this key ({identity.key_id}) is a member of team {code.team!r} already")
    try:
        return chain.join(state, identity, invite_secret=code.secret, name=code.name)
    except RosterChainBroken as exc:
        if exc.reason in _UNUSABLE_INVITE:
            raise BadJoinCode(
                f"{exc.detail} ({exc.reason}); ask an admin for a new one (mem team invite NAME)"
            ) from None
        raise


def change_member(
    policy: Policy,
    identity: Identity,
    home: Path | None,
    member: str,
    sign: Callable[[RosterState, ChainMember], SignedStatement],
    *,
    no_change: Callable[[str, str], MemmeshError] | None = None,
    purge: bool = False,
) -> tuple[RosterMember, int]:
    """:func:`change` with the statement ``sign`` makes about ``member`` (a name, member id
    or key, found anew on each head): the member as the roster then lists them, and how many
    of their published items were purged."""
    found: list[ChainMember] = []

    def make(state: RosterState) -> list[SignedStatement]:
        target = find(state, member)
        found[:] = [target]
        try:
            return [sign(state, target)]
        except RosterChainBroken as exc:
            raise refusal(exc, state, target, no_change) from None

    after, purged = change(policy, identity, home, make, purge=purge)
    return member_of(after, found[0].key_id), purged


def invite(
    policy: Policy,
    identity: Identity,
    name: str,
    *,
    ttl: float,
    admin: bool,
    now: float | None,
    home: Path | None,
) -> Invited:
    """Put an invite for ``name`` on the signed chain, valid ``ttl`` seconds from now (or
    ``now``, never before the head); its code carries the invite's secret and the root."""
    assert policy.coordinator is not None
    assert policy.roster_root is not None
    made: list[tuple[str, float, float | None]] = []

    def make(state: RosterState) -> list[SignedStatement]:
        at = max(time.time() if now is None else now, state.head.at)
        try:
            statement, secret = chain.invite(
                state, identity, name=name, expires_at=at + ttl, admin=admin, at=at
            )
        except RosterChainBroken as exc:
            raise refusal(exc, state) from None
        made[:] = [(secret, at + ttl, revoked_name(state, name))]
        return [statement]

    change(policy, identity, home, make)
    ((secret, expires_at, revoked_at),) = made
    code = JoinCode(
        url=peer_url(policy.coordinator),
        team=policy.team,
        name=name,
        secret=secret,
        expires_at=expires_at,
        pin=policy.coordinator_pin,
        admin=admin,
        root=policy.roster_root,
    )
    return Invited(
        code=code.encode(),
        name=name,
        team=policy.team,
        expires_at=expires_at,
        admin=admin,
        revoked_at=revoked_at,
    )
