"""The coordinator's HTTP routes on the shared harness, and its OpenAPI document.

Every route but ``/healthz`` needs a request signed for this very coordinator
(:func:`~memmesh.net.signing.coordinator_audience` of its team, bound to one of its names: see
:func:`coordinator_names`); every route but ``/healthz``, ``/v1/join`` and ``/v1/roster/chain``
is for the members the coordinator admits (:meth:`Coordinator.admit`), and the admins' routes
check the admin flag besides. The chain's route admits its callers itself: members, and a
joiner who proves it holds an open invite on the chain, which it reads before it is a member.
Once the roster is signed, the routes by which an admin asked the coordinator to change it answer
409 ``roster_signed``. The nonces of the members' requests are kept for every process and across
restarts: in the database on PostgreSQL (``coord_nonces``), else in the data folder
(:class:`~memmesh.local.nonces.NonceFile`).
"""

import contextlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from starlette.types import ASGIApp

from memmesh.coordinator import protocol as p
from memmesh.coordinator._tallies import TALLIES_BODY_LIMIT
from memmesh.coordinator.service import Coordinator
from memmesh.local.nonces import NonceFile
from memmesh.net.app import DEFAULT_WORKERS, Endpoint, create_app, health_endpoint
from memmesh.net.audience import origin_of
from memmesh.net.limits import PUBLISH_BODY_LIMIT, QUERY_BODY_LIMIT, BodyLimit
from memmesh.net.openapi import openapi_document
from memmesh.net.presence import PresenceRequest, PresenceResponse
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.signing import RequestVerifier, coordinator_audience
from memmesh.net.tls import CERT_FILENAME, pin_of

__all__ = ["coordinator_app", "coordinator_names", "endpoints", "openapi"]


def endpoints(coordinator: Coordinator) -> list[Endpoint]:
    """Every route the coordinator serves; each handler but the health check's runs under
    the coordinator's :class:`~memmesh.coordinator._space.Space` (it follows a reindex)."""
    space = coordinator.space
    return [
        health_endpoint("Liveness; the only route open to anyone."),
        *(replace(route, handler=space.guarded(route.handler)) for route in _routes(coordinator)),
    ]


def _routes(coordinator: Coordinator) -> list[Endpoint]:
    batch = BodyLimit(max_bytes=PUBLISH_BODY_LIMIT)
    small = BodyLimit(max_bytes=QUERY_BODY_LIMIT)
    members = coordinator.membership
    return [
        Endpoint(
            path="/v1/info",
            handler=coordinator.info,
            response=p.Info,
            caller=True,
            summary="What this coordinator is: team, embedder, counts (of what the caller may "
            "see), its key, whether the roster is enforced.",
        ),
        Endpoint(
            path="/v1/publish",
            handler=coordinator.publish,
            request=p.PublishRequest,
            response=p.PublishResponse,
            limit=batch,
            caller=True,
            summary="Store the caller's own signed publications (and their vectors), "
            "idempotently; one the signed roster refuses is rejected with a code (reader, "
            "not_granted, unknown_audience).",
        ),
        Endpoint(
            path="/v1/retract",
            handler=coordinator.retract,
            request=p.RetractRequest,
            response=p.RetractResponse,
            limit=batch,
            caller=True,
            summary="Apply the caller's own signed retractions: purge text and vector, keep the "
            "tombstone, answer with a receipt signed by the coordinator.",
        ),
        Endpoint(
            path="/v1/search",
            handler=coordinator.search,
            request=SearchRequest,
            response=SearchResponse,
            cpu_bound=True,
            caller=True,
            summary="Hybrid search over the live publications the caller may read (ranked "
            "among those alone); answers with signed envelopes and notes which member was "
            "served which item (never the query).",
        ),
        Endpoint(
            path="/v1/presence",
            handler=coordinator.heartbeat,
            request=PresenceRequest,
            response=PresenceResponse,
            limit=small,
            caller=True,
            summary="The caller's signed heartbeat (one naming an unsound peer URL is rejected); "
            "answers with the roster.",
        ),
        Endpoint(
            path="/v1/presence/list",
            handler=coordinator.presence,
            response=p.PresenceList,
            summary="Every unexpired heartbeat of a member not revoked, and the roster.",
        ),
        Endpoint(
            path="/v1/changes",
            handler=lambda caller, request: coordinator.changes(request, caller),
            request=p.ChangesRequest,
            response=p.ChangesResponse,
            limit=small,
            caller=True,
            summary="A paged feed of each item's current state since a cursor, as the caller "
            "may see it (items it may no longer read: hidden); its publications are noted in "
            "the disclosure log.",
        ),
        Endpoint(
            path="/v1/members",
            handler=members.roster,
            response=p.Roster,
            summary="The roster: every member, revoked ones with their time, and the signed "
            "roster's head it was derived from.",
        ),
        Endpoint(
            path="/v1/roster/chain",
            handler=members.signed.chain,
            request=p.ChainRequest,
            response=p.ChainResponse,
            limit=small,
            access="signed",
            caller=True,
            summary="The signed roster's statements from a seq on, paged (head_seq -1: not "
            "signed); for members, and for a joiner proving it holds an open invite.",
        ),
        Endpoint(
            path="/v1/roster/statements",
            handler=members.signed.statements,
            request=p.StatementsRequest,
            response=p.StatementsResponse,
            limit=batch,
            caller=True,
            summary="Append admins' signed statements to the roster, all or none; 409 "
            "stale_roster_head when they do not follow the head, 400/403 roster_refused when "
            "one breaks a rule; with purge, revoked members' items are erased.",
        ),
        Endpoint(
            path="/v1/members/add",
            handler=members.add,
            request=p.MemberAdd,
            response=p.RosterMember,
            limit=small,
            caller=True,
            summary="(An admin, unsigned roster) put a key on the roster; 409 if the key or an "
            "active name is taken.",
        ),
        Endpoint(
            path="/v1/members/revoke",
            handler=members.revoke,
            request=p.MemberRevoke,
            response=p.RevokeResponse,
            limit=small,
            caller=True,
            summary="(An admin, unsigned roster) refuse a member's key from now on; with "
            "purge, erase its live publications; 409 last_admin for the last admin.",
        ),
        Endpoint(
            path="/v1/members/promote",
            handler=members.promote,
            request=p.MemberAdmin,
            response=p.RosterMember,
            limit=small,
            caller=True,
            summary="(An admin, unsigned roster) make a member an admin; 404 no_such_member, "
            "409 already_admin or member_revoked.",
        ),
        Endpoint(
            path="/v1/members/demote",
            handler=members.demote,
            request=p.MemberAdmin,
            response=p.RosterMember,
            limit=small,
            caller=True,
            summary="(An admin, unsigned roster) make an admin a member who is no admin; 404 "
            "no_such_member, 409 no_admin_to_demote, member_revoked or last_admin (never the "
            "last admin).",
        ),
        Endpoint(
            path="/v1/invites",
            handler=members.invite,
            request=p.InviteRequest,
            response=p.Invite,
            limit=small,
            caller=True,
            summary="(An admin, unsigned roster) a single-use invite: the SHA-256 of its "
            "secret, a name, an expiry; says when a revoked member of that name was revoked "
            "(their key stays refused).",
        ),
        Endpoint(
            path="/v1/join",
            handler=members.join,
            request=p.JoinRequest,
            response=p.JoinResponse,
            limit=small,
            access="signed",
            caller=True,
            summary="(Any signer, no token) join: the first admin's code with a genesis "
            "(starts the signed roster), a join statement of an invite on the chain, or an "
            "unsigned team's invite secret; 403 for a used, expired or unknown invite.",
        ),
        Endpoint(
            path="/v1/disclosures",
            handler=coordinator.disclosures,
            request=p.DisclosuresRequest,
            response=p.DisclosuresResponse,
            limit=small,
            caller=True,
            summary="Which members were served the caller's own items, and when (newest first).",
        ),
        Endpoint(
            path="/v1/tallies",
            handler=coordinator.tally,
            request=p.TalliesRequest,
            response=p.TalliesResponse,
            limit=BodyLimit(max_bytes=TALLIES_BODY_LIMIT),
            caller=True,
            summary="Keep the caller's own signed tallies (worked/failed/partial counts, never "
            "text) on other members' live items it may read, the newest per reporter and item.",
        ),
        Endpoint(
            path="/v1/tallies/mine",
            handler=coordinator.tallies_about,
            request=p.MyTalliesRequest,
            response=p.MyTalliesResponse,
            limit=small,
            caller=True,
            summary="A paged feed of the tallies teammates signed on the caller's own live items.",
        ),
    ]


def openapi(routes: Sequence[Endpoint]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``routes``."""
    return openapi_document("memmesh coordinator", routes)


def coordinator_names(
    coordinator: Coordinator, *, url: str | None = None, pin: str | None = None
) -> list[str]:
    """The names members bind their requests to this coordinator by (see
    :mod:`memmesh.net.audience`): ``pin``, the pin of the certificate it serves; the pin of
    the one its data folder keeps (``tls/``, made when it served https itself: only it holds
    that key); and the origin of ``url``, the address members reach it at (its ``--url``)."""
    names = [pin] if pin else []
    kept = coordinator.store.home / "tls" / CERT_FILENAME
    # None made (or unreadable): it is named by its --url or its address alone.
    with contextlib.suppress(OSError, ValueError):
        names.append(pin_of(kept.read_bytes()))
    if url:
        names.append(origin_of(url))
    return list(dict.fromkeys(names))


def coordinator_app(
    coordinator: Coordinator,
    *,
    token: str | None,
    workers: int = DEFAULT_WORKERS,
    url: str | None = None,
    pin: str | None = None,
) -> ASGIApp:
    """The ASGI app for ``coordinator`` (also serving ``GET /v1/openapi.json``): requests
    signed for this coordinator (named by ``url``, its ``--url``, and by ``pin``, that of the
    certificate it serves: :func:`coordinator_names`), callers admitted by its roster, and
    ``token`` (if given) as an outer gate on the members' routes."""
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
    return create_app(
        routes,
        token=token,
        workers=workers,
        verifier=RequestVerifier(
            coordinator_audience(coordinator.team),
            names=coordinator_names(coordinator, url=url, pin=pin),
            nonces=coordinator.store.nonces() or NonceFile(coordinator.store.home),
        ),
        admit=coordinator.admit,
    )
