"""A stand-in for the coordinator's roster routes, served by the real harness.

It answers ``/v1/members`` (list, add, revoke), ``/v1/invites``, ``/v1/join``,
``/v1/disclosures`` and ``/v1/info`` with the documented shapes of
:mod:`memmesh.coordinator.protocol`, behind the real signing check and admission
(:func:`memmesh.net.app.create_app` with a :class:`RequestVerifier`), so that invites, joining
and the roster commands run end to end against a real uvicorn server. Like the coordinator, it
prints no code itself: :meth:`StandIn.admin_code` is what its first start would print.
"""

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import uvicorn
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from starlette.types import ASGIApp

from memmesh.coordinator import protocol as p
from memmesh.coordinator.invites import JoinCode, new_secret, secret_digest
from memmesh.net.app import Access, Endpoint, create_app
from memmesh.net.errors import Conflict, Forbidden, NotFound
from memmesh.net.server import free_port
from memmesh.net.signing import Caller, RequestVerifier, coordinator_audience
from memmesh.net.tls import Certificate, ensure_certificate
from memmesh.registry import Identity
from memmesh.registry.identity import key_id, public_key_from_text
from memmesh.team.roster import join


class StandIn:
    """The roster, invites and disclosure log of one team's coordinator, in memory."""

    def __init__(self, team: str = "acme") -> None:
        self.team = team
        self.key = Identity(Ed25519PrivateKey.generate())
        self.url = ""
        self.pin: str | None = None
        self.roster: dict[str, p.RosterMember] = {}  # by public key
        self.invites: dict[str, p.Invite] = {}  # by the secret's digest
        self.disclosed: list[tuple[str, p.Disclosure]] = []  # (author's key, disclosure)
        self.published: dict[str, int] = {}  # author's key -> items a purge would remove
        self.joins = 0  # join requests that reached it
        self.embedder = ""  # the embedder a join answer names (none, like an older coordinator)
        self.invite_requests: list[p.InviteRequest] = []
        self._lock = threading.Lock()

    # -- what the routes do ------------------------------------------------------------------

    def admit(self, caller: Caller) -> None:
        member = self.roster.get(caller.key)
        if self.roster and (member is None or member.revoked_at is not None):
            raise Forbidden(f"this key is not a member of team {self.team}")

    def _admin(self, caller: Caller) -> None:
        member = self.roster.get(caller.key)
        if member is None or not member.admin or member.revoked_at is not None:
            raise Forbidden("only an admin may change the roster")

    def members(self, caller: Caller) -> p.Roster:
        return p.Roster(members=list(self.roster.values()), enforced=bool(self.roster))

    def add(self, caller: Caller, request: p.MemberAdd) -> p.RosterMember:
        self._admin(caller)
        with self._lock:
            if request.key in self.roster:
                raise Conflict(f"{request.key} is on the roster already")
            return self._put(request.name, request.key, request.admin)

    def _put(self, name: str, key: str, admin: bool) -> p.RosterMember:
        member = p.RosterMember(
            name=name,
            key=key,
            key_id=key_id(public_key_from_text(key)),
            admin=admin,
            added_at=time.time(),
        )
        self.roster[key] = member
        return member

    def revoke(self, caller: Caller, request: p.MemberRevoke) -> p.RevokeResponse:
        self._admin(caller)
        with self._lock:
            for key, member in self.roster.items():
                if request.member in (member.name, member.key, member.key_id):
                    revoked = msgspec.structs.replace(member, revoked_at=time.time())
                    self.roster[key] = revoked
                    purged = self.published.pop(key, 0) if request.purge else 0
                    return p.RevokeResponse(member=revoked, purged=purged)
        raise NotFound(f"no member {request.member!r} on the roster")

    def invite(self, caller: Caller, request: p.InviteRequest) -> p.Invite:
        self._admin(caller)
        self.invite_requests.append(request)
        return self._register(request.name, request.digest, request.expires_at, request.admin)

    def _register(self, name: str, digest: str, expires_at: float, admin: bool) -> p.Invite:
        invited = p.Invite(name=name, expires_at=expires_at, admin=admin)
        with self._lock:
            self.invites[digest] = invited
        return invited

    def join(self, caller: Caller, request: p.JoinRequest) -> p.JoinResponse:
        with self._lock:
            self.joins += 1
            invited = self.invites.pop(secret_digest(request.secret), None)
            if invited is None or invited.expires_at <= time.time():
                raise Forbidden("no such invite: used already, expired, or never made")
            member = self._put(invited.name, caller.key, invited.admin)
        return p.JoinResponse(
            member=member,
            team=self.team,
            coordinator_key=self.key.public_key_text,
            embedder=self.embedder,
        )

    def disclosures(self, caller: Caller, request: p.DisclosuresRequest) -> p.DisclosuresResponse:
        mine = [
            entry
            for author, entry in self.disclosed
            if author == caller.key and request.item_id in (None, entry.item_id)
        ]
        mine.sort(key=lambda entry: entry.served_at, reverse=True)
        if request.per_asker is not None:  # each asker's newest, as the coordinator cuts
            taken: dict[str, int] = {}
            for entry in list(mine):
                taken[entry.asker_key_id] = taken.get(entry.asker_key_id, 0) + 1
                if taken[entry.asker_key_id] > request.per_asker:
                    mine.remove(entry)
        return p.DisclosuresResponse(entries=mine[: request.limit])

    def info(self, caller: Caller) -> p.Info:
        return p.Info(
            service="memmesh-coordinator", protocol="1", version="stand-in", team=self.team,
            embedder="hashing-v1-d384", published=0, tombstones=0, online=0,
            coordinator_key=self.key.public_key_text, roster=bool(self.roster),
        )  # fmt: skip

    # -- for tests ---------------------------------------------------------------------------

    def join_admin(self, home: Path) -> Path:
        """``home`` joined as the team's first admin, with :meth:`admin_code`."""
        join(home, self.admin_code())
        return home

    def admin_code(self, *, ttl: float = 3600.0) -> str:
        """The admin join code a coordinator prints on its first start."""
        return self.code("admin", admin=True, ttl=ttl)

    def code(self, name: str, *, admin: bool = False, ttl: float = 3600.0) -> str:
        """A join code registered here directly (as if an admin had invited ``name``)."""
        secret = new_secret()
        expires_at = time.time() + ttl
        self._register(name, secret_digest(secret), expires_at, admin)
        return JoinCode(
            url=self.url, team=self.team, name=name, secret=secret, expires_at=expires_at,
            pin=self.pin, admin=admin,
        ).encode()  # fmt: skip

    def app(self, names: Sequence[str] = ()) -> ASGIApp:
        """The stand-in's app, answering requests signed for it by ``names`` (its pin)."""

        def route(
            path: str,
            handler: Callable[..., Any],
            response: type,
            request: type | None = None,
            access: Access = "members",
        ) -> Endpoint:
            return Endpoint(
                path=path, handler=handler, response=response, request=request, access=access,
                caller=True,
            )  # fmt: skip

        routes = [
            route("/v1/info", self.info, p.Info),
            route("/v1/members", self.members, p.Roster),
            route("/v1/members/add", self.add, p.RosterMember, p.MemberAdd),
            route("/v1/members/revoke", self.revoke, p.RevokeResponse, p.MemberRevoke),
            route("/v1/invites", self.invite, p.Invite, p.InviteRequest),
            route("/v1/join", self.join, p.JoinResponse, p.JoinRequest, access="signed"),
            route("/v1/disclosures", self.disclosures, p.DisclosuresResponse, p.DisclosuresRequest),
        ]
        verifier = RequestVerifier(coordinator_audience(self.team), names=names)
        return create_app(routes, token=None, verifier=verifier, admit=self.admit)


@contextmanager
def serving(standin: StandIn, *, tls_folder: Path | None = None) -> Iterator[StandIn]:
    """Serve ``standin`` with uvicorn on 127.0.0.1 (https with a pinned certificate made in
    ``tls_folder``, when given) until the block ends; sets its ``url`` and ``pin``."""
    port = free_port()
    certificate: Certificate | None = None
    if tls_folder is not None:
        certificate = ensure_certificate(tls_folder, ["127.0.0.1"])
    config = uvicorn.Config(
        standin.app([certificate.pin] if certificate else []), host="127.0.0.1", port=port,
        log_level="error", access_log=False,
        lifespan="off",
        ssl_certfile=certificate.cert_path if certificate else None,
        ssl_keyfile=certificate.key_path if certificate else None,
    )  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the stand-in did not start")
        time.sleep(0.01)
    standin.url = f"{'https' if certificate else 'http'}://127.0.0.1:{port}"
    standin.pin = certificate.pin if certificate else None
    try:
        yield standin
    finally:
        server.should_exit = True
        thread.join(timeout=10)
