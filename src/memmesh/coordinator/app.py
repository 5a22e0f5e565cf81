"""The coordinator's HTTP routes on the shared harness, and its OpenAPI document."""

from collections.abc import Sequence
from typing import Any

from starlette.types import ASGIApp

from memmesh.coordinator import protocol as p
from memmesh.coordinator.service import Coordinator
from memmesh.net.app import (
    DEFAULT_WORKERS,
    Endpoint,
    create_app,
    health_endpoint,
    search_endpoint,
)
from memmesh.net.limits import PUBLISH_BODY_LIMIT, QUERY_BODY_LIMIT, BodyLimit
from memmesh.net.openapi import openapi_document
from memmesh.net.presence import PresenceRequest, PresenceResponse

__all__ = ["coordinator_app", "endpoints", "openapi"]


def endpoints(coordinator: Coordinator) -> list[Endpoint]:
    """Every route the coordinator serves."""
    batch = BodyLimit(max_bytes=PUBLISH_BODY_LIMIT)
    small = BodyLimit(max_bytes=QUERY_BODY_LIMIT)
    return [
        health_endpoint("Liveness; the only route without a token."),
        Endpoint(
            path="/v1/info",
            handler=coordinator.info,
            response=p.Info,
            summary="What this coordinator is: team, embedder, counts.",
        ),
        Endpoint(
            path="/v1/publish",
            handler=coordinator.publish,
            request=p.PublishRequest,
            response=p.PublishResponse,
            limit=batch,
            summary="Store signed publications (and their vectors), idempotently.",
        ),
        Endpoint(
            path="/v1/retract",
            handler=coordinator.retract,
            request=p.RetractRequest,
            response=p.RetractResponse,
            limit=batch,
            summary="Apply signed retractions: purge text and vector, keep the tombstone.",
        ),
        search_endpoint(
            "/v1/search",
            coordinator.search,
            "Hybrid search over live publications; answers with signed envelopes.",
        ),
        Endpoint(
            path="/v1/presence",
            handler=coordinator.heartbeat,
            request=PresenceRequest,
            response=PresenceResponse,
            limit=small,
            summary="A member's signed heartbeat; one naming an unsound peer URL is rejected.",
        ),
        Endpoint(
            path="/v1/presence/list",
            handler=coordinator.presence,
            response=p.PresenceList,
            summary="Every unexpired heartbeat.",
        ),
        Endpoint(
            path="/v1/changes",
            handler=coordinator.changes,
            request=p.ChangesRequest,
            response=p.ChangesResponse,
            limit=small,
            summary="A paged feed of each item's current state since a cursor.",
        ),
    ]


def openapi(routes: Sequence[Endpoint]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``routes``."""
    return openapi_document("memmesh coordinator", routes)


def coordinator_app(
    coordinator: Coordinator, *, token: str | None, workers: int = DEFAULT_WORKERS
) -> ASGIApp:
    """The ASGI app for ``coordinator`` (also serving ``GET /v1/openapi.json``)."""
    routes = endpoints(coordinator)
    document = openapi(routes)
    routes.append(
        Endpoint(
            path="/v1/openapi.json",
            handler=lambda: document,
            response=dict,
            summary="This API's OpenAPI document.",
        )
    )
    return create_app(routes, token=token, workers=workers)
