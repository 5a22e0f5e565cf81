"""Running a member's peer daemon (`mem team serve`): the app, heartbeats and LAN announcing.

:func:`peer_daemon` checks everything that can be wrong (the policy, the key, listening beyond
loopback without a token, the URL teammates reach it at, the published items) before anything
starts, starts the presence heartbeats and the zeroconf announcement the policy asks for, and
stops them again.

A peer that listens or is reached beyond loopback, or is asked to (``tls``), serves https with a
certificate of its own (:func:`~memmesh.net.tls.ensure_certificate` in ``home/tls``, made once
and kept), whose pin goes into its signed presence: teammates pin it from there.

Listening on every interface (``--host 0.0.0.0``), it tells teammates the address of this
machine that faces the coordinator (:func:`~memmesh.peer.reach.lan_address`). Once the
coordinator refuses its heartbeat because this member's key was revoked, :meth:`PeerDaemon.run`
stops answering and returns, with :attr:`PeerDaemon.revoked` saying so.
"""

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from starlette.types import ASGIApp

from memmesh.local.store import Store
from memmesh.net.connect import coordinator_client, team_token
from memmesh.net.errors import Refused
from memmesh.net.server import Server, check_bind, listen
from memmesh.net.settings import ServeSettings
from memmesh.net.tls import Certificate, ensure_certificate
from memmesh.peer.app import peer_app
from memmesh.peer.discovery import Advertiser
from memmesh.peer.heartbeat import HEARTBEAT_INTERVAL, Heartbeat
from memmesh.peer.reach import ReachProblem, lan_address, reach_problem, reached_at
from memmesh.peer.service import Peer
from memmesh.policy import load_policy
from memmesh.registry import load_identity

__all__ = ["TLS_FOLDER", "PeerDaemon", "peer_daemon"]

# Where in the member's home the peer keeps its certificate and key.
TLS_FOLDER = "tls"


class PeerDaemon:
    """A peer daemon ready to listen, its heartbeats and announcement already running.

    * ``url`` - where teammates reach it (in its signed presence).
    * ``coordinator`` - where its heartbeats go, or ``None`` when team.yaml names none.
    * ``heartbeat``, ``advertiser`` - what runs beside it, or ``None`` when not asked for.
    * ``certificate`` - what it serves https with, or ``None`` for plain http (loopback only).
    """

    def __init__(
        self,
        peer: Peer,
        *,
        settings: ServeSettings,
        token: str | None,
        coordinator: str | None,
        heartbeat: Heartbeat | None,
        advertiser: Advertiser | None,
        certificate: Certificate | None = None,
    ) -> None:
        self.peer = peer
        self.settings = settings
        self.token = token
        self.coordinator = coordinator
        self.heartbeat = heartbeat
        self.advertiser = advertiser
        self.certificate = certificate
        self.app: ASGIApp = peer_app(peer)
        self._server: Server | None = None
        self._halted = threading.Event()
        if heartbeat is not None:
            heartbeat.on_revoked = self.halt

    @property
    def key_id(self) -> str:
        """The member's key id, which the daemon signs its presence with."""
        return self.peer.identity.key_id

    @property
    def url(self) -> str:
        """Where teammates reach the daemon."""
        return self.peer.url

    @property
    def revoked(self) -> Refused | None:
        """The coordinator's refusal of this member's revoked key, once it said so."""
        return self.heartbeat.revoked if self.heartbeat is not None else None

    @property
    def reach_problem(self) -> ReachProblem | None:
        """Why teammates on other machines cannot reach it, and what fixes it (``None``: they
        can, or the team is on this machine)."""
        return reach_problem(self.settings.host, self.settings.port, self.url, self.coordinator)

    def run(self, sock: socket.socket | None = None) -> None:
        """Answer teammates in this process, on ``sock`` (from :func:`listen`) or a socket
        bound here, until interrupted or :meth:`halt`-ed (the coordinator revoked this member:
        see :attr:`revoked`). The socket is closed after."""
        check_bind(self.settings.host, self.token, tls=self.settings.tls_cert is not None)
        with closing(sock or listen(self.settings)) as listening:
            self._server = Server(self.app, self.settings)
            if self._halted.is_set():  # revoked before it could start
                return
            self._server.run(sockets=[listening])

    def halt(self) -> None:
        """Stop answering (from any thread); :meth:`run` returns."""
        self._halted.set()
        if self._server is not None:
            self._server.should_exit = True


@contextmanager
def peer_daemon(
    home: Path,
    open_store: Callable[[], Store],
    *,
    host: str,
    port: int,
    advertise: str | None = None,
    interfaces: list[str] | None = None,
    heartbeat: float = HEARTBEAT_INTERVAL,
    tls: bool = False,
) -> Iterator[PeerDaemon]:
    """The peer daemon of the member whose home is ``home``, to listen on ``host:port``.

    * ``open_store`` - opens the member's store; called only once the policy, the key and the
      listening address have passed (and again after a reindex switches its embedder), and
      the store is closed on leaving.
    * ``advertise`` - the URL teammates reach it at (default: the listen address and port).
    * ``interfaces`` - addresses to announce on with zeroconf, when the policy enables
      discovery (default: the listen address).
    * ``heartbeat`` - seconds between presence heartbeats to the policy's coordinator.
    * ``tls`` - serve https even on loopback (it always does beyond loopback).

    Raises :class:`PolicyError` while team.yaml is invalid, :class:`IdentityMissing` without a
    key, :class:`NetError` for plain http beyond loopback without a team token,
    :class:`BadUrl` (a ``NetError``) when the URL teammates would reach it at is unsound, or is
    plain http while it serves https, and :class:`CertificateUnusable` when the certificate in
    ``home/tls`` cannot be used.
    """
    policy = load_policy(home)  # invalid: nothing starts
    identity = load_identity(home)
    token = team_token(policy)
    # A sound URL before anything starts: it goes into the signed presence teammates contact.
    # Listening on every interface, the address of this machine that faces the coordinator.
    address = lan_address(host, toward=urlsplit(policy.coordinator or "").hostname)
    url = reached_at(host, address, port, advertise, tls)
    check_bind(host, token, tls=url.startswith("https:"))
    certificate = None
    if url.startswith("https:"):
        names = [urlsplit(url).hostname or "", address]
        certificate = ensure_certificate(home / TLS_FOLDER, [n for n in names if n])
    store = open_store()
    beats = None
    advertiser = None
    peer: Peer | None = None
    try:
        # Migrates the registry and the disclosure log: may fail too.
        peer = Peer(
            home, store, identity, url=url, tls_pin=certificate.pin if certificate else "",
            reopen=open_store,
        )  # fmt: skip
        peer.shareable()  # fail now, not on the first request, if anything is wrong
        store.warm()
        if policy.coordinator:
            connect = lambda: coordinator_client(policy, identity, timeout=5.0)  # noqa: E731
            beats = Heartbeat(peer, connect, interval=heartbeat).start()
        if policy.discovery:
            name = policy.identity.name if policy.identity else store.author
            advertiser = Advertiser(
                interfaces=interfaces or [address],
                name=name,
                key_id=identity.key_id,
                port=port,
                scheme="https" if certificate else "http",
            ).start()
        settings = ServeSettings(
            host=host,
            port=port,
            tls_cert=certificate.cert_path if certificate else None,
            tls_key=certificate.key_path if certificate else None,
        )
        yield PeerDaemon(
            peer,
            settings=settings,
            token=token,
            coordinator=policy.coordinator,
            heartbeat=beats,
            advertiser=advertiser,
            certificate=certificate,
        )
    finally:
        if advertiser is not None:
            advertiser.stop()
        if beats is not None:
            beats.stop()
        if peer is not None:
            peer.close()  # its store, and any it opened again after a reindex
        else:
            store.close()
