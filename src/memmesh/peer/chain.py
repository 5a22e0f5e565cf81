"""The signed roster as this member's memmesh believes it: read from the coordinator, verified
against the root team.yaml pins, and kept in the member's home.

A member (or its peer daemon) whose team.yaml pins the team's root (``roster_root``, the first
admin's member id) never takes the coordinator's list of members on its word. It reads the chain
of statements the team's admins signed (``POST /v1/roster/chain``, only the part it does not
hold), checks every statement from the root on
(:func:`~memmesh.registry.roster_chain.verify_chain`), and derives the roster from that alone:
who is a member, who is revoked, and each member's name, with the short member id beside a name
that another key has or had, or that changed
(:func:`~memmesh.registry.roster_chain.display_names`). The coordinator's operator can therefore
neither add a key nor relabel an author: at worst it withholds the newest statements.

Who may read and publish what (groups, roles, grants) is the verified chain's word too:
:func:`roster_access` gives the rules of the chain a roster was derived from.

The verified chain is kept in ``HOME/roster-chain.json`` (:data:`CHAIN_FILENAME`), and its head
is what every later chain must extend: one that is shorter (a rollback) or differs at that
place (a fork) is refused, as is a chain that breaks any rule, and a coordinator that says the
roster is not signed at all; each as :class:`~memmesh.registry.errors.RosterChainBroken`
(``reason`` ``rollback``, ``fork``, ``unsigned``, or the chain's own). The coordinator's roster
carries the head it was derived from, so that a member whose head is the same reads nothing.

A member whose team.yaml pins no root (it joined before the roster was signed) trusts on first
use: once the coordinator's roster says it is signed, the genesis signer is pinned in team.yaml
(:func:`pin_root`, said once in the log) and the chain verified from there on. A home that
kept a verified chain decides by its root (:func:`kept_root`) even where team.yaml could not
take the pin: the coordinator can then neither say the roster is not signed nor have another
root pinned. Without a home to pin in, and while the roster is not signed, the coordinator's
roster is taken as it is.

This lives below :mod:`memmesh.team` so that the peer daemon decides by it too;
:mod:`memmesh.team.chain` gives it to the member's commands, as their errors.
"""

import logging
import threading
from collections.abc import Callable
from pathlib import Path

import msgspec

from memmesh._files import FILE_MODE, write_atomically
from memmesh.net.client import Client
from memmesh.net.errors import BadResponse
from memmesh.net.presence import Roster, RosterMember
from memmesh.net.wire import Request
from memmesh.policy import POLICY_FILENAME, Policy, PolicyError, load_policy, update_policy
from memmesh.policy.config import read_policy_source, write_policy_source
from memmesh.registry.access import Access
from memmesh.registry.errors import BadSignature, RosterChainBroken
from memmesh.registry.identity import key_id, public_key_from_text
from memmesh.registry.roster_chain import (
    ChainHead,
    ChainMember,
    RosterState,
    SignedStatement,
    Statement,
    display_names,
    verify_chain,
)

__all__ = [
    "CHAIN_FILENAME",
    "Connect",
    "fetch_chain",
    "keep_chain",
    "kept_access",
    "kept_chain",
    "kept_root",
    "pin_root",
    "roster_access",
    "roster_of",
    "trusted_roster",
    "verified_state",
]

CHAIN_FILENAME = "roster-chain.json"
# Pages read at most in one fetch: far more statements than a team makes in years.
_MAX_PAGES = 100
_log = logging.getLogger("memmesh.roster")

# A client, or what makes one the first time it is needed (and is then closed here).
Connect = Client | Callable[[], Client]


class _PageRequest(Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The coordinator's ``ChainRequest`` as a member reads its own chain (the layer order
    keeps the peer from the coordinator's protocol module)."""

    start: int


class _Page(msgspec.Struct, frozen=True, kw_only=True):
    """The coordinator's ``ChainResponse``: statements from ``start`` on, and the head's seq
    (-1: the roster is not signed)."""

    statements: list[SignedStatement]
    head_seq: int
    more: bool = False


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


def kept_root(home: Path, team: str) -> str | None:
    """The root of the chain kept in ``home`` for ``team`` (``None``: none is kept). A member
    that kept a verified chain decides by that root, pinned in team.yaml or not: the
    coordinator can neither say the roster is not signed nor have another root pinned."""
    try:
        kept = _decoder.decode((home / CHAIN_FILENAME).read_bytes())
    except (OSError, msgspec.DecodeError):
        return None
    if kept.format != _FORMAT or kept.team != team or not kept.statements:
        return None
    return kept.root


def keep_chain(home: Path, team: str, root: str, statements: list[SignedStatement]) -> None:
    """Write ``statements`` (a verified chain) to ``home`` unless what is there is as long
    already: another process may have kept a newer head meanwhile."""
    if len(kept_chain(home, team=team, root=root)) >= len(statements):
        return
    _write(home, team, root, statements)


def _write(home: Path, team: str, root: str, statements: list[SignedStatement]) -> None:
    """Write ``statements`` (a verified chain) to ``home``, replacing what is there."""
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


def fetch_chain(
    client: Client, *, start: int = 0, request: Callable[[int], object] | None = None
) -> tuple[list[SignedStatement], int]:
    """The coordinator's statements from ``start`` on, every page, and its head's seq (-1: the
    roster is not signed); ``request`` makes each page's request body from its start (a
    joiner's carries its invite). :class:`BadResponse` for pages that do not come to an end."""
    make = request or (lambda at: _PageRequest(start=at))
    statements: list[SignedStatement] = []
    head_seq = -1
    for _ in range(_MAX_PAGES):
        page = client.post("/v1/roster/chain", make(start + len(statements)), _Page)
        statements += page.statements
        head_seq = page.head_seq
        if not page.more:
            return statements, head_seq
        if not page.statements:
            break
    raise BadResponse("the coordinator's signed roster does not come to an end")


class _Lazy:
    """The client of a :data:`Connect`: made at first use, and closed here if made here."""

    def __init__(self, connect: Connect) -> None:
        self._connect = connect
        self._made: Client | None = None

    def __call__(self) -> Client:
        if isinstance(self._connect, Client):
            return self._connect
        if self._made is None:
            self._made = self._connect()
        return self._made

    def close(self) -> None:
        if self._made is not None:
            self._made.close()
            self._made = None


def verified_state(
    client: Connect, home: Path | None, policy: Policy, *, seen: Roster | None = None
) -> RosterState:
    """The roster the team's signed chain says, for a member pinning ``policy.roster_root``.

    The chain kept in ``home`` is extended by what the coordinator holds beyond it (nothing is
    read, and no client made, when ``seen``, a roster the coordinator sent, names the kept
    head), verified from the root, required to extend the kept head, and kept. Raises
    :class:`RosterChainBroken`, and what the client raises.
    """
    lazy = _Lazy(client)
    try:
        return _verified_state(lazy, home, policy, seen)
    finally:
        lazy.close()


def _verified_state(
    client: Callable[[], Client], home: Path | None, policy: Policy, seen: Roster | None
) -> RosterState:
    root = policy.roster_root
    assert root is not None, "only a member pinning a root verifies the chain"
    team = policy.team
    kept = kept_chain(home, team=team, root=root) if home is not None else []
    cached: ChainHead | None = None
    damaged = False
    if kept:
        try:
            state = _verify(kept, team, root)
        except RosterChainBroken:
            kept, damaged = [], True  # damaged on disk: read the whole chain again
        else:
            cached = state.head
            if seen is not None and (seen.head_seq, seen.head_hash) == (cached.seq, cached.hash):
                return state
    # From the kept head on: the coordinator's statement there must be the one kept, or it
    # serves another chain (a fork), even one no longer than the kept one.
    tail, head_seq = fetch_chain(client(), start=max(len(kept) - 1, 0))
    if head_seq < 0:
        raise RosterChainBroken(None, "unsigned", "the coordinator says the roster is not signed")
    if cached is not None:
        if head_seq < cached.seq or not tail:
            raise RosterChainBroken(
                None,
                "rollback",
                f"the coordinator's roster ends at statement {min(head_seq, cached.seq - 1)}, "
                f"before statement {cached.seq} this member verified",
            )
        if tail[0].hash != cached.hash:
            raise RosterChainBroken(
                cached.seq,
                "fork",
                f"the coordinator's statement {cached.seq} is not the one this member verified",
            )
        tail = tail[1:]
    statements = kept + tail
    if not statements:
        raise RosterChainBroken(None, "empty", "the coordinator's signed roster has no statement")
    state = _verify(statements, team, root)
    if home is not None and damaged:
        _write(home, team, root, statements)  # however long the damaged one was
    elif home is not None and tail:
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
        name=name,
        key=member.key,
        key_id=member.key_id,
        admin=member.admin,
        added_at=member.added_at,
        revoked_at=member.revoked_at,
        reader=member.reader,
    )


def pin_root(client: Client, home: Path, policy: Policy) -> Policy:
    """Trust on first use: pin the root of the chain the coordinator serves now (its genesis
    signer's member id) in ``home``'s team.yaml, once it verifies from there; returns the
    policy with it. A team.yaml that cannot take it is left as it is (said in the log), and
    the chain is verified from that root this time all the same.

    Raises :class:`RosterChainBroken` (``unsigned``, or the chain's own reason)."""
    statements, head_seq = fetch_chain(client)
    if head_seq < 0 or not statements:
        raise RosterChainBroken(None, "unsigned", "the coordinator says the roster is not signed")
    try:
        genesis = msgspec.json.decode(statements[0].body, type=Statement)
        root = key_id(public_key_from_text(genesis.signer))
    except (msgspec.DecodeError, BadSignature):
        raise RosterChainBroken(0, "malformed", "statement 0 names no signing key") from None
    _verify(statements, policy.team, root)
    keep_chain(home, policy.team, root, statements)
    try:
        current = load_policy(home)
        if current.roster_root is not None:  # pinned meanwhile, by another process
            return msgspec.structs.replace(policy, roster_root=current.roster_root)
        text = update_policy(
            read_policy_source(home), {"roster_root": root}, str(home / POLICY_FILENAME)
        )
        write_policy_source(home, text)
    except PolicyError as exc:
        _log.warning("the team's signed roster (root %s) is not pinned: %s", root, exc.message)
    else:
        _log.warning("pinned the team's signed roster: root %s", root)
    return msgspec.structs.replace(policy, roster_root=root)


def trusted_roster(
    client: Connect, home: Path | None, policy: Policy, given: Roster | None
) -> Roster | None:
    """The roster to decide by, where the coordinator sent ``given``: for a member pinning the
    team's root, the verified chain's (:func:`verified_state`), whatever ``given`` lists; for
    one pinning none, ``given`` itself, unless it says the roster is signed and there is a
    ``home`` to pin its root in (:func:`pin_root`). ``client`` may be what makes the client:
    it is made only when the chain must be read. Raises :class:`RosterChainBroken`."""
    lazy = _Lazy(client)
    try:
        if policy.roster_root is None and home is not None:
            policy = msgspec.structs.replace(policy, roster_root=kept_root(home, policy.team))
        if policy.roster_root is None:
            if home is None or given is None or given.head_seq < 0:
                return given
            policy = pin_root(lazy(), home, policy)
        return roster_of(_verified_state(lazy, home, policy, given))
    finally:
        lazy.close()


def roster_access(home: Path | None, policy: Policy, roster: Roster | None) -> Access:
    """The read and publish rules of the signed chain ``roster`` was derived from (a roster
    :func:`trusted_roster` gave): the chain kept in ``home``, verified up to the roster's head
    (once per process for a given head). ``Access(None)``, which admits nobody but its author
    to an item with an audience, where the roster is not signed, or the home keeps no chain
    verified up to that head."""
    if home is None or roster is None or roster.head_seq < 0:
        return Access(None)
    return kept_access(home, policy, upto=roster) or Access(None)


def kept_access(home: Path, policy: Policy, *, upto: Roster | None = None) -> Access | None:
    """The read and publish rules of the chain kept in ``home`` (up to ``upto``'s head, when
    given: another process may have kept a newer one meanwhile), verified; ``None`` when none
    is kept, it does not reach that head, or it does not verify."""
    root = policy.roster_root or kept_root(home, policy.team)
    if root is None:
        return None
    kept = kept_chain(home, team=policy.team, root=root)
    if upto is not None:
        if len(kept) <= upto.head_seq or kept[upto.head_seq].hash != upto.head_hash:
            return None
        kept = kept[: upto.head_seq + 1]
    if not kept:
        return None
    try:
        return Access(_verify(kept, policy.team, root))
    except RosterChainBroken:
        return None
