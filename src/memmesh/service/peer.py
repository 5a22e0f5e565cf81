"""Before the peer service is installed: the home has a team, and the URL teammates will
reach the daemon at, found as `mem team serve` finds it (so that what `mem service` shows
is what the daemon will tell teammates, and an address it would refuse is refused now)."""

import os
from pathlib import Path
from urllib.parse import urlsplit

import msgspec

from memmesh.peer.reach import ReachProblem, lan_address, reach_problem, reached_at
from memmesh.service.errors import NoTeam

__all__ = ["PeerAddress", "peer_address"]


class PeerAddress(msgspec.Struct, frozen=True, kw_only=True):
    """Where teammates will reach the peer daemon (``url``: with ``--host 0.0.0.0`` and no
    ``--advertise``, this machine's address facing the coordinator now, found again at each
    start) and how that was chosen (``chosen``); why they would not (``unreachable``); and
    ``token_env``, the variable of the team token when it is set in this shell, which a
    service does not see."""

    url: str
    chosen: str
    unreachable: ReachProblem | None = None
    token_env: str | None = None


def peer_address(home: Path, *, host: str, port: int, advertise: str | None) -> PeerAddress:
    """Check that the peer daemon of ``home`` could start, listening on ``host:port`` and
    telling teammates ``advertise`` (or its own address), and say where they will reach it.

    Raises :class:`NoTeam` when ``home`` has no team.yaml, what loading it or the member's
    key raises (an invalid policy, no key), and :class:`~memmesh.net.errors.BadUrl` for an
    address the daemon would refuse (plain http while it serves https).
    """
    from memmesh.policy import PolicyMissing, load_policy
    from memmesh.registry import load_identity

    try:
        policy = load_policy(home)
    except PolicyMissing:
        raise NoTeam(str(home)) from None
    load_identity(home)
    address = lan_address(host, toward=urlsplit(policy.coordinator or "").hostname)
    url = reached_at(host, address, port, advertise, False)
    if advertise:
        chosen = "given by --advertise"
    elif address != host:  # listening on every interface: the address was looked for
        chosen = (
            "this machine's address facing the coordinator, found again at each start; "
            "--advertise names another"
        )
    else:
        chosen = "its listening address"
    return PeerAddress(
        url=url,
        chosen=chosen,
        unreachable=reach_problem(host, port, url, policy.coordinator),
        token_env=policy.token_env if os.environ.get(policy.token_env) else None,
    )
