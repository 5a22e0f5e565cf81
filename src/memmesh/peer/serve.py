"""Running a member's peer daemon (`mem team serve`): the app, heartbeats and LAN announcing.

:func:`peer_daemon` checks everything that can be wrong (the policy, the key, listening beyond
loopback without a token, the published items) before anything starts, starts the presence
heartbeats and the zeroconf announcement the policy asks for, and stops them again.
"""

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from starlette.types import ASGIApp

from memmesh.local.store import Store
from memmesh.net.client import Client
from memmesh.net.server import check_bind, serve
from memmesh.net.settings import ServeSettings
from memmesh.net.urls import peer_url
from memmesh.peer.app import peer_app
from memmesh.peer.discovery import Advertiser, local_address
from memmesh.peer.heartbeat import HEARTBEAT_INTERVAL, Heartbeat
from memmesh.peer.service import Peer
from memmesh.policy import load_policy
from memmesh.registry import load_identity

__all__ = ["PeerDaemon", "peer_daemon"]


class PeerDaemon:
    """A peer daemon ready to listen, its heartbeats and announcement already running.

    * ``url`` - where teammates reach it (in its signed presence).
    * ``coordinator`` - where its heartbeats go, or ``None`` when team.yaml names none.
    * ``heartbeat``, ``advertiser`` - what runs beside it, or ``None`` when not asked for.
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
    ) -> None:
        self.peer = peer
        self.settings = settings
        self.token = token
        self.coordinator = coordinator
        self.heartbeat = heartbeat
        self.advertiser = advertiser
        self.app: ASGIApp = peer_app(peer, token=token)

    @property
    def key_id(self) -> str:
        """The member's key id, which the daemon signs its presence with."""
        return self.peer.identity.key_id

    @property
    def url(self) -> str:
        """Where teammates reach the daemon."""
        return self.peer.url

    def run(self) -> None:
        """Answer teammates in this process until interrupted."""
        serve(self.app, self.settings, token=self.token)


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
) -> Iterator[PeerDaemon]:
    """The peer daemon of the member whose home is ``home``, to listen on ``host:port``.

    * ``open_store`` - opens the member's store; called only once the policy, the key and the
      listening address have passed, and the store is closed on leaving.
    * ``advertise`` - the URL teammates reach it at (default: the listen address and port).
    * ``interfaces`` - addresses to announce on with zeroconf, when the policy enables
      discovery (default: the listen address).
    * ``heartbeat`` - seconds between presence heartbeats to the policy's coordinator.

    Raises :class:`PolicyError` while team.yaml is invalid, :class:`IdentityMissing` without a
    key, :class:`NetError` for a listen address beyond loopback without a team token and
    :class:`BadUrl` (a ``NetError``) when the URL teammates would reach it at is unsound.
    """
    policy = load_policy(home)  # invalid: nothing starts
    identity = load_identity(home)
    token = os.environ.get(policy.token_env) or None
    check_bind(host, token)
    address = local_address(host)
    # A sound URL before anything starts: it goes into the signed presence teammates contact.
    url = peer_url(advertise or f"http://{f'[{address}]' if ':' in address else address}:{port}")
    store = open_store()
    beats = None
    advertiser = None
    try:
        peer = Peer(home, store, identity, url=url)  # migrates the registry: may fail too
        peer.shareable()  # fail now, not on the first request, if anything is wrong
        store.warm()
        if policy.coordinator:
            client = Client(policy.coordinator, token=token, timeout=5.0)
            beats = Heartbeat(peer, client, interval=heartbeat).start()
        if policy.discovery:
            name = policy.identity.name if policy.identity else store.author
            advertiser = Advertiser(
                interfaces=interfaces or [local_address(host)],
                name=name,
                key_id=identity.key_id,
                port=port,
            ).start()
        yield PeerDaemon(
            peer,
            settings=ServeSettings(host=host, port=port),
            token=token,
            coordinator=policy.coordinator,
            heartbeat=beats,
            advertiser=advertiser,
        )
    finally:
        if advertiser is not None:
            advertiser.stop()
        if beats is not None:
            beats.stop()
        store.close()
