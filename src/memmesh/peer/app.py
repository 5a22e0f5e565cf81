"""The peer daemon's HTTP routes on the shared harness."""

from starlette.types import ASGIApp

from memmesh.net.app import (
    DEFAULT_WORKERS,
    Endpoint,
    create_app,
    health_endpoint,
    search_endpoint,
)
from memmesh.net.limits import BodyLimit
from memmesh.peer.protocol import ConfirmRequest, ConfirmResponse, PeerPresence
from memmesh.peer.service import Peer

__all__ = ["PUBLIC_PATHS", "peer_app", "peer_endpoints"]

PUBLIC_PATHS = ("/healthz", "/v1/presence")


def peer_endpoints(peer: Peer) -> list[Endpoint]:
    """Every route a peer serves."""
    small = BodyLimit()
    return [
        health_endpoint("Liveness (no token)."),
        Endpoint(
            path="/v1/presence",
            handler=peer.presence_document,
            response=PeerPresence,
            summary="This peer's signed presence (no token), to verify before sending one.",
        ),
        search_endpoint(
            "/v1/recall",
            peer.recall,
            "Recall from the owner's currently published, policy-passing items.",
        ),
        Endpoint(
            path="/v1/confirm",
            handler=peer.confirm,
            request=ConfirmRequest,
            response=ConfirmResponse,
            limit=small,
            summary="Whether the owner still publishes the given items.",
        ),
    ]


def peer_app(peer: Peer, *, token: str | None, workers: int = DEFAULT_WORKERS) -> ASGIApp:
    """The ASGI app for ``peer``."""
    return create_app(peer_endpoints(peer), token=token, workers=workers, public_paths=PUBLIC_PATHS)
