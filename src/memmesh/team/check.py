"""What a member can reach, asked on purpose (`mem team status --check`, `mem team peers
--check`): whether the coordinator answers and accepts this member, and whether each
teammate's peer answers now.

A peer's presence only says until when it holds (:data:`~memmesh.peer.service.PRESENCE_TTL`
after its last heartbeat), so a stopped daemon stays listed until then: :func:`last_seen`
says how long ago its presence was signed, and :func:`probe_peers` asks each peer for its
presence again (signed by the same key, or it does not count).
"""

import time
from collections import Counter
from pathlib import Path

import anyio
import msgspec

from memmesh.errors import ExitCode, MemmeshError
from memmesh.net.connect import coordinator_client
from memmesh.net.errors import Unreachable
from memmesh.net.presence import Roster
from memmesh.peer.protocol import PeerPresence
from memmesh.peer.service import PRESENCE_TTL
from memmesh.policy.config import Policy
from memmesh.policy.errors import NoCoordinator
from memmesh.registry.identity import Identity
from memmesh.team._calls import Calls, Target, member_clients, run_blocking
from memmesh.team._checks import PeerSeen, verified_presence
from memmesh.team.access import accepted
from memmesh.team.chain import trusted_roster
from memmesh.team.errors import AccessError, RosterNotTrusted

__all__ = ["CHECK_TIMEOUT", "CoordinatorCheck", "check_coordinator", "last_seen", "probe_peers"]

CHECK_TIMEOUT = 3.0


class CoordinatorCheck(msgspec.Struct, frozen=True, kw_only=True):
    """What asking the coordinator gave.

    * ``state`` - ``accepted``, ``refused`` (it answered, but does not accept this member),
      ``untrusted`` (it accepts this member, but serves a signed roster that does not verify),
      ``unreachable`` (nothing answered, or not the pinned certificate), ``failed`` (anything
      else, ``not_set`` when team.yaml names none); ``problem`` says what, in one line.
    * ``name`` - this member's name on the roster (``""`` when the roster does not name it).
    * ``exit_code`` - what `mem` exits with for it: 0 accepted, 3 refused, 4 unreachable.
    * ``code`` - the failure's machine-readable code (``key_revoked``, ``not_on_roster``, …).
    """

    url: str
    state: str
    problem: str = ""
    code: str = ""
    name: str = ""
    roster: bool = False
    exit_code: int = ExitCode.OK


def check_coordinator(
    policy: Policy,
    identity: Identity,
    *,
    timeout: float = CHECK_TIMEOUT,
    home: Path | None = None,
) -> CoordinatorCheck:
    """Ask the coordinator team.yaml names for its roster, as ``identity``: an answer means it
    accepts this member. Where the roster is signed, this member's name is the verified
    chain's (``home`` keeps it; :func:`~memmesh.team.chain.trusted_roster`), and a chain that
    does not verify is ``untrusted`` (code ``roster_not_trusted``, exit 3)."""
    url = policy.coordinator or ""
    try:
        with accepted(policy, identity), coordinator_client(policy, identity, timeout=timeout) as c:
            given = c.get("/v1/members", Roster)
            url = c.address  # of the coordinator's addresses, the one that answered
            roster = trusted_roster(c, home, policy, given) or given
    except NoCoordinator as exc:
        return CoordinatorCheck(url=url, state="not_set", problem=exc.message, exit_code=3)
    except Unreachable as exc:
        return _failed(url, "unreachable", exc)
    except RosterNotTrusted as exc:
        return _failed(url, "untrusted", exc)
    except AccessError as exc:
        return _failed(url, "refused", exc)
    except MemmeshError as exc:
        return _failed(url, "failed", exc)
    names = [m.name for m in roster.members if m.key_id == identity.key_id]
    return CoordinatorCheck(
        url=url, state="accepted", name=names[-1] if names else "", roster=roster.enforced
    )


def _failed(url: str, state: str, exc: MemmeshError) -> CoordinatorCheck:
    return CoordinatorCheck(
        url=url, state=state, problem=exc.message, code=exc.code, exit_code=exc.exit_code
    )


def last_seen(peer: PeerSeen, now: float | None = None) -> float:
    """Seconds since ``peer``'s presence was signed: its expiry less the time a presence holds
    (0 for one fetched from the peer itself just now)."""
    now = time.time() if now is None else now
    return max(0.0, now - (peer.expires_at - PRESENCE_TTL))


def probe_peers(
    policy: Policy, identity: Identity, peers: list[PeerSeen], *, timeout: float = CHECK_TIMEOUT
) -> dict[str, str]:
    """Ask every peer in ``peers`` for its presence at once, each within ``timeout`` seconds;
    returns, by member id, why each that did not answer as itself did not (those that did are
    left out)."""
    calls = Calls(member_clients(policy, identity), timeout=timeout)
    silent: dict[str, str] = {}

    async def probe(peer: PeerSeen) -> None:
        target = Target(kind="peer", url=peer.url, key_id=peer.key_id, pin=peer.tls_pin)
        outcome = await calls.get(target, "/v1/presence", PeerPresence)
        if not isinstance(outcome.value, PeerPresence):
            silent[peer.key_id] = outcome.error or "no answer"
            return
        fresh = verified_presence(outcome.value.envelope, policy, Counter(), "check")
        if fresh is None or fresh.key_id != peer.key_id:
            silent[peer.key_id] = "another daemon answers there"

    async def run() -> None:
        try:
            async with anyio.create_task_group() as group:
                for peer in peers:
                    group.start_soon(probe, peer)
        finally:
            calls.close()

    if peers:
        run_blocking(run)
    return silent
