"""Whether teammates on other machines can reach a member's peer daemon.

A daemon listening on loopback (the default) answers only its own laptop: right for a team
on one machine, useless to teammates on theirs. ``--host 0.0.0.0`` listens on every interface
(over https, with a certificate of its own) and tells teammates the address of this machine
that faces the coordinator (:func:`lan_address`), never a loopback one; ``--advertise`` names
another (a DNS name, a VPN address, a reverse proxy).

:func:`reach_problem` says, at start, why teammates would not reach it; :func:`peer_reach`
says, for `mem doctor`, whether it runs and whether the URL it gives teammates answers.
"""

import contextlib
import socket
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import msgspec

from memmesh.errors import MemmeshError
from memmesh.net.connect import peer_client
from memmesh.net.errors import BadUrl
from memmesh.net.urls import is_loopback, peer_url, serves_tls
from memmesh.net.wire import Health
from memmesh.peer.lock import PeerRecord, running_peer
from memmesh.policy.config import Policy

__all__ = [
    "LAN_HOST",
    "PeerReach",
    "ReachProblem",
    "ReachState",
    "lan_address",
    "peer_reach",
    "reach_problem",
    "reached_at",
]

# What `--host` takes to listen on every interface: the one flag that makes a peer reachable.
LAN_HOST = "0.0.0.0"  # noqa: S104 (named here; only a user's --host binds it)
# Addresses of documentation networks (RFC 5737, RFC 3849): a UDP socket "connected" to one
# yields the address of the interface the default route leaves by, and sends nothing.
_ROUTE_PROBE = {socket.AF_INET: "192.0.2.1", socket.AF_INET6: "2001:db8::1"}
# Seconds `mem doctor` waits for the daemon's URL to answer.
PROBE_TIMEOUT = 3.0

ReachState = Literal["not_running", "loopback_only", "answers", "silent", "not_asked"]


def lan_address(host: str, *, toward: str | None = None) -> str:
    """The address a daemon listening on every interface (``host`` ``0.0.0.0`` or ``::``)
    tells teammates: the one of the interface traffic to ``toward`` (the coordinator's host)
    leaves by, else the one of the default route, else what the machine's name resolves to;
    loopback only when nothing else is found. Any other ``host`` is returned as it is."""
    if host not in (LAN_HOST, "::", ""):
        return host
    family = socket.AF_INET6 if host == "::" else socket.AF_INET
    for target in ([toward] if toward and not is_loopback(toward) else []) + [_ROUTE_PROBE[family]]:
        found = _route_source(family, target)
        if found and not is_loopback(found):
            return found
    with contextlib.suppress(OSError):
        named = socket.gethostbyname(socket.gethostname())
        if not is_loopback(named):
            return named
    return "::1" if family == socket.AF_INET6 else "127.0.0.1"


def reached_at(host: str, address: str, port: int, advertise: str | None, tls: bool) -> str:
    """The sound URL teammates reach the daemon at: https whenever it serves TLS, which it
    does when asked, when told to be reached at https, or beyond loopback."""
    advertised = peer_url(advertise) if advertise else None
    secure = serves_tls(host, tls=tls)
    if advertised is not None:
        reached = urlsplit(advertised).hostname or ""
        secure = secure or advertised.startswith("https:") or serves_tls(reached)
    if advertised is None:
        shown = f"[{address}]" if ":" in address else address
        return peer_url(f"{'https' if secure else 'http'}://{shown}:{port}")
    if secure and not advertised.startswith("https:"):
        raise BadUrl(advertised, "this peer serves https, so teammates must reach it at https")
    return advertised


def _route_source(family: socket.AddressFamily, target: str) -> str:
    """The local address the kernel would send from to ``target`` (``""`` when none)."""
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect((target, 9))  # UDP: nothing is sent
            return str(probe.getsockname()[0])
    except (OSError, UnicodeError):
        return ""


def _beyond_loopback(url: str | None) -> bool:
    host = urlsplit(url).hostname if url else None
    return host is not None and not is_loopback(host)


class ReachProblem(msgspec.Struct, frozen=True, kw_only=True):
    """Why teammates on other machines cannot reach a peer daemon (``why``), and what to run
    instead (``fix``)."""

    why: str
    fix: str

    @property
    def line(self) -> str:
        """Both, as the one line `mem team serve` warns with."""
        return f"{self.why}; {self.fix}"


def reach_problem(host: str, port: int, url: str, coordinator: str | None) -> ReachProblem | None:
    """Why teammates on other machines cannot reach a daemon listening on ``host:port`` that
    tells them ``url``; ``None`` when they can, or when the team's ``coordinator`` is on this
    machine too (or there is none): a team on one machine. A daemon on loopback that tells
    them a URL beyond it is reached through a proxy or tunnel its user set up."""
    if not _beyond_loopback(coordinator) or _beyond_loopback(url):
        return None
    why = "teammates on other machines cannot reach this peer daemon: "
    if is_loopback(host):
        return ReachProblem(
            why=f"{why}it listens on {host} only",
            fix=f"`mem team serve --host {LAN_HOST}` listens on every interface (over https) "
            "and tells them this machine's address",
        )
    return ReachProblem(
        why=f"{why}it tells them {url}, this machine's own loopback address",
        fix="give the address they reach it at: "
        f"`mem team serve --host {host} --advertise https://NAME:{port}`",
    )


class PeerReach(msgspec.Struct, frozen=True, kw_only=True):
    """Whether this member's peer daemon runs and teammates can reach it.

    * ``state`` - ``not_running``; ``loopback_only`` (``unreachable`` says why, see
      :func:`reach_problem`); ``answers`` or ``silent`` (its URL was asked, and ``problem``
      says why it did not answer); ``not_asked`` (offline).
    * ``record`` - what the running daemon says of itself (pid, URL, ...).
    """

    state: ReachState
    record: PeerRecord | None = None
    unreachable: ReachProblem | None = None
    problem: str = ""


def peer_reach(home: Path, policy: Policy, *, offline: bool) -> PeerReach:
    """How the peer daemon of the member whose home is ``home`` stands: whether it runs
    (:func:`~memmesh.peer.lock.running_peer`), and, unless ``offline``, whether the URL it
    gives teammates answers ``/healthz`` (pinned to its certificate when it serves https)."""
    home_record = running_peer(home)
    if home_record is None:
        return PeerReach(state="not_running")
    unreachable = reach_problem(
        home_record.host, home_record.port, home_record.url, policy.coordinator
    )
    if unreachable is not None:
        return PeerReach(state="loopback_only", record=home_record, unreachable=unreachable)
    if offline or not home_record.url:
        return PeerReach(state="not_asked", record=home_record)
    try:
        url = peer_url(home_record.url)
        client = peer_client(
            url, key_id="", pin=home_record.pin, identity=None, policy=policy,
            timeout=PROBE_TIMEOUT,
        )  # fmt: skip
        with client:
            client.get("/healthz", Health)
    except MemmeshError as exc:
        return PeerReach(state="silent", record=home_record, problem=exc.message)
    return PeerReach(state="answers", record=home_record)
