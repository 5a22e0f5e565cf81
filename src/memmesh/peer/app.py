"""The peer daemon's HTTP routes on the shared harness.

Recall and confirm answer only requests signed for this very peer
(:func:`~memmesh.net.signing.peer_audience` of its owner's member id) by an active member of
the roster it holds (:meth:`~memmesh.peer.service.Peer.admit`); the team token plays no part
(it is never sent to a peer). Health and the signed presence are open to anyone.

The nonces of the requests it answered are kept in its owner's home
(:class:`~memmesh.local.nonces.NonceFile`): a request answered before the peer restarted is
refused after it, as within one run.
"""

from starlette.types import ASGIApp

from memmesh.local.nonces import NonceFile
from memmesh.net.app import DEFAULT_WORKERS, Endpoint, create_app, health_endpoint
from memmesh.net.limits import BodyLimit
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.signing import RequestVerifier, peer_audience
from memmesh.peer.protocol import ConfirmRequest, ConfirmResponse, PeerPresence
from memmesh.peer.service import Peer

__all__ = ["peer_app", "peer_endpoints"]


def peer_endpoints(peer: Peer) -> list[Endpoint]:
    """Every route a peer serves."""
    small = BodyLimit()
    return [
        health_endpoint("Liveness (anyone)."),
        Endpoint(
            path="/v1/presence",
            handler=peer.presence_document,
            response=PeerPresence,
            access="anyone",
            summary="This peer's signed presence (anyone), to verify before asking it.",
        ),
        Endpoint(
            path="/v1/recall",
            handler=peer.recall,
            request=SearchRequest,
            response=SearchResponse,
            cpu_bound=True,
            caller=True,
            summary="Recall from the owner's currently published, policy-passing items "
            "(members only).",
        ),
        Endpoint(
            path="/v1/confirm",
            handler=peer.confirm,
            request=ConfirmRequest,
            response=ConfirmResponse,
            limit=small,
            caller=True,
            summary="Whether the owner still publishes the given items (members only).",
        ),
    ]


def peer_app(peer: Peer, *, workers: int = DEFAULT_WORKERS) -> ASGIApp:
    """The ASGI app for ``peer``: signed requests for its own audience, admitted by its
    roster, each answered once (its nonce kept in the peer's home)."""
    return create_app(
        peer_endpoints(peer),
        token=None,
        workers=workers,
        verifier=RequestVerifier(peer_audience(peer.identity.key_id), nonces=NonceFile(peer.home)),
        admit=peer.admit,
    )
