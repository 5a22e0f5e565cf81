"""A team on loopback for end-to-end tests: member homes, a coordinator URL, real peer daemons.

Members are built through the Python API (identity, team.yaml, remember, publish, retract,
sync); peer daemons are real `mem team serve` processes. :meth:`Team.close` stops every
process the team started.
"""

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.coordinator.protocol import (
    Outcome,
    PresenceList,
    RetractRequest,
    RetractResponse,
    Roster,
    RosterMember,
)
from memmesh.embed import get_embedder
from memmesh.local.store import Store
from memmesh.net.client import Client
from memmesh.net.connect import coordinator_client
from memmesh.net.errors import Refused
from memmesh.net.presence import PresenceResponse
from memmesh.net.search import SearchHit, SearchRequest, SearchResponse
from memmesh.net.server import free_port
from memmesh.net.signing import peer_audience
from memmesh.net.tls import ensure_certificate
from memmesh.net.wire import encode
from memmesh.peer.app import peer_app
from memmesh.peer.protocol import Confirmation, ConfirmResponse, PeerPresence
from memmesh.peer.service import Peer
from memmesh.policy.config import Policy, load_policy
from memmesh.registry import Envelope, Identity, Registry, create_identity, publish, retract
from memmesh.registry.envelopes import (
    FORMAT_VERSION,
    Presence,
    Publication,
    open_envelope,
    seal,
    text_hash,
)
from memmesh.team.recall import TeamAnswer, recall_team
from memmesh.team.sync import SyncReport, sync
from tests._servers import running
from tests._signed import add_member, make_admin, signed_client

TOKEN = "loopback-team-token"
FINGERPRINT = get_embedder().fingerprint  # what members' stores use: the default embedder
TEAM = "acme"
SHARED_KINDS = ["decision", "convention", "gotcha", "command", "incident"]
# The team's one well-known decision, and a question it answers.
LOCKS = "We chose Postgres advisory locks over Redis for the job scheduler"
LOCKS_QUERY = "which locks does the job scheduler use"
# One fact in two members' words (a restatement recall-team merges), a fact on its topic that
# it does not, and a question about them.
PARKED = (
    "Webhook deliveries that fail BILL-204 validation are retried with exponential backoff "
    "for up to one hour, then parked in the dead-letter table"
)
PARKED_AGAIN = (
    "After an hour of exponential backoff, a webhook delivery still failing BILL-204 "
    "validation is parked in the dead-letter table instead of being retried"
)
SIGNED = "Webhook deliveries from the billing service are signed with HMAC-SHA256"
PARKED_QUERY = "what happens to webhook deliveries that keep failing"
# Nothing listens on the discard port: a coordinator URL that is set (so publishing is allowed)
# but never answers.
NOWHERE = "http://127.0.0.1:9"


class Member:
    """One member's home: an identity key, a team.yaml, a private store and a registry."""

    def __init__(self, name: str, home: Path, *, team: str, coordinator: str | None) -> None:
        self.name = name
        self.home = home
        self.team = team
        self.coordinator = coordinator
        self.identity: Identity = create_identity(home)
        # Teammates listed under ``members:`` (a Team lists every member in everyone's file).
        self.trusts: list[Member] = []
        self.overrides: dict[str, Any] = {}
        self.write_policy()

    @property
    def key_id(self) -> str:
        return self.identity.key_id

    def write_policy(self, **overrides: Any) -> None:
        """Write team.yaml: this member's team, coordinator, shared kinds and the members they
        trust (:attr:`trusts`), plus ``overrides`` (kept for later rewrites).

        A top-level key given as ``None`` is left out of the file.
        """
        self.overrides = overrides
        data: dict[str, Any] = {
            "version": 1,
            "team": self.team,
            "identity": {"name": self.name},
            "coordinator": self.coordinator,
            "share": {"kinds": SHARED_KINDS},
            "members": roster(*self.trusts) or None,
        }
        data.update(overrides)
        text = yaml.safe_dump({k: v for k, v in data.items() if v is not None}, sort_keys=False)
        (self.home / "team.yaml").write_text(text, encoding="utf-8")

    def policy(self) -> Policy:
        return load_policy(self.home)

    def trust(self, *members: "Member") -> None:
        """List ``members`` under ``members:`` in this member's team.yaml (kept on rewrites)."""
        self.trusts = list(members)
        self.write_policy(**self.overrides)

    @contextmanager
    def registry(self) -> Iterator[Registry]:
        with Store(self.home, author=self.name) as store:
            yield Registry(store, self.identity, self.team)

    def remember(
        self,
        text: str,
        *,
        kind: str = "decision",
        project: str = "global",
        tags: tuple[str, ...] = (),
    ) -> str:
        """A new private item (never a reinforcement of an existing one)."""
        with Store(self.home, author=self.name) as store:
            item, status = store.remember(text, kind=kind, project=project, tags=tags)
        assert status == "created", f"{text!r} merged into {item.id}"
        return item.id

    def publish(self, *item_ids: str, again: bool = False) -> None:
        with self.registry() as registry:
            publish(registry, self.policy(), list(item_ids), again=again)

    def retract(self, *item_ids: str) -> None:
        with self.registry() as registry:
            retract(registry, list(item_ids))

    def sync(self) -> SyncReport:
        policy = self.policy()
        with self.registry() as registry, coordinator_client(policy, self.identity) as client:
            report = sync(registry, policy, client)
        assert not report.rejected, report.rejected
        return report

    def share(self, text: str, **item: Any) -> str:
        """Remember, publish and sync one item."""
        item_id = self.remember(text, **item)
        self.publish(item_id)
        self.sync()
        return item_id

    def envelope(self, item_id: str) -> Envelope:
        """The item's live publication envelope, as this member signed it."""
        with self.registry() as registry, registry.store.read() as conn:
            return registry.live(conn)[item_id].envelope


def roster(*members: Member) -> list[dict[str, str]]:
    """``members`` as team.yaml lists them under ``members:`` (name and public key)."""
    return [{"name": m.name, "key": m.identity.public_key_text} for m in members]


def coordinator_roster(*members: Member, revoked: tuple[Member, ...] = ()) -> Roster:
    """The roster a coordinator would hold: ``members`` active, ``revoked`` revoked."""
    entries = [
        RosterMember(
            name=m.name, key=m.identity.public_key_text, key_id=m.key_id, admin=False,
            added_at=1.0, revoked_at=2.0 if m in revoked else None,
        )
        for m in (*members, *revoked)
    ]  # fmt: skip
    return Roster(members=entries, enforced=True)


def ask(member: Member, query: str = LOCKS_QUERY, **options: Any) -> TeamAnswer:
    """recall-team as ``member`` (a ten-second deadline unless ``options`` say otherwise)."""
    options.setdefault("deadline", 10)
    with Store(member.home, author=member.name) as store:
        return recall_team(store, member.policy(), query, identity=member.identity, **options)


def presence_for(
    identity: Identity,
    url: str,
    *,
    team: str,
    name: str,
    expires_in: float = 60.0,
    expires_at: float | None = None,
    tls_pin: str = "",
) -> Envelope:
    """A presence for ``url`` (pinned with ``tls_pin``) signed by ``identity``, valid for
    ``expires_in`` seconds from now (or until ``expires_at``)."""
    body = Presence(
        format=FORMAT_VERSION,
        team=team,
        item_id="",
        version=1,
        author_key=identity.public_key_text,
        key_id=identity.key_id,
        seq=1,
        name=name,
        peer_url=url,
        embedder=FINGERPRINT,
        expires_at=time.time() + expires_in if expires_at is None else expires_at,
        tls_pin=tls_pin,
    )
    return seal(body, identity)


@contextmanager
def peer_in_thread(member: Member, *, tls: bool = False) -> Iterator[str]:
    """``member``'s real :class:`Peer` app, served by uvicorn in this process (over https with
    a certificate of its own, pinned in its presence, with ``tls``); yields its URL."""
    certificate = ensure_certificate(member.home / "tls", ["127.0.0.1"]) if tls else None
    with Store(member.home, author=member.name) as store:
        peer = Peer(
            member.home, store, member.identity, url="http://unknown.invalid",
            tls_pin=certificate.pin if certificate else "",
        )  # fmt: skip
        with running(peer_app(peer), tls=certificate) as url:
            peer.url = url  # its presence names where it really listens
            yield url


class PeerDaemon:
    """`mem team serve` for one member, in a real process."""

    def __init__(self, member: Member, *, port: int | None = None, heartbeat: float = 0.5) -> None:
        self.member = member
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.heartbeat = heartbeat
        self.log = member.home / f"serve-{self.port}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def launch(self) -> None:
        """Start the process; :meth:`wait_ready` waits for it to answer."""
        command = [
            sys.executable, "-m", "memmesh", "--home", str(self.member.home), "team", "serve",
            "--port", str(self.port), "--heartbeat", str(self.heartbeat),
        ]  # fmt: skip
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                command, env={**os.environ}, stdout=subprocess.DEVNULL, stderr=log
            )

    def wait_ready(self, timeout: float = 30.0) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"{self.member.name}'s peer exited with {self.process.returncode}: "
                    + self.log.read_text(encoding="utf-8", errors="replace")
                )
            try:
                if httpx.get(f"{self.url}/healthz", timeout=0.5).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"{self.member.name}'s peer did not answer within {timeout} s")

    def stop(self) -> None:
        """SIGTERM and wait (SIGKILL if it hangs)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL, as in a crash."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


class Team:
    """Members of one team sharing a coordinator URL, and the peer daemons started for them."""

    def __init__(self, root: Path, coordinator: str | None, *, team: str = TEAM) -> None:
        self.root = root
        self.coordinator = coordinator
        self.team = team
        self.members: dict[str, Member] = {}
        self.daemons: list[PeerDaemon] = []
        # The coordinator itself, when the test serves it in this process.
        self.host: Coordinator | None = None

    def add(self, name: str, **policy: Any) -> Member:
        """A new member with ``policy`` overrides; every member's team.yaml lists them all."""
        member = Member(name, self.root / name, team=self.team, coordinator=self.coordinator)
        member.overrides = policy
        self.members[name] = member
        everyone = list(self.members.values())
        for each in everyone:
            each.trust(*everyone)
        return member

    def serve(self, *members: Member, ports: dict[str, int] | None = None) -> list[PeerDaemon]:
        """Start the members' peer daemons at once, and wait until each answers."""
        daemons = [PeerDaemon(m, port=(ports or {}).get(m.name)) for m in members]
        self.daemons += daemons
        for daemon in daemons:
            daemon.launch()
        for daemon in daemons:
            daemon.wait_ready()
        return daemons

    def online(self, asker: Member) -> set[str]:
        """Key ids whose presence the coordinator lists now, as ``asker`` is told."""
        assert self.coordinator is not None
        with signed_client(self.coordinator, asker.identity, team=self.team, token=TOKEN) as client:
            listing = client.get("/v1/presence/list", PresenceList)
        return {body.key_id for body in map(open_envelope, listing.members)}

    def wait_for_presence(self, *members: Member, timeout: float = 15.0) -> None:
        """Until the coordinator lists every one of ``members`` as online."""
        wanted = {m.key_id for m in members}
        deadline = time.monotonic() + timeout
        while not wanted <= self.online(members[0]):
            if time.monotonic() > deadline:
                raise RuntimeError(f"no presence from {wanted - self.online(members[0])}")
            time.sleep(0.1)

    def enrol(self, admin: Member, *members: Member) -> None:
        """Put ``admin`` on the served coordinator's roster as its first admin, then
        ``members`` as members it added."""
        assert self.host is not None, "only a coordinator served in this process"
        make_admin(self.host, admin.identity, admin.name)
        for member in members:
            add_member(self.host, admin.identity, member.identity, member.name)

    def close(self) -> None:
        for daemon in self.daemons:
            daemon.stop()


@contextmanager
def team_on_loopback(root: Path, *, team: str = TEAM) -> Iterator[Team]:
    """A coordinator for ``team`` served on 127.0.0.1 (in a thread) and a :class:`Team` using it.

    The caller puts :data:`TOKEN` into the environment first (members and daemons read it).
    """
    coordinator = Coordinator(root / "coordinator", team=team)
    try:
        with running(coordinator_app(coordinator, token=TOKEN)) as url:
            members = Team(root, url, team=team)
            members.host = coordinator
            try:
                yield members
            finally:
                members.close()
    finally:
        coordinator.close()


def signed_by(signer: Member, envelope: Envelope, **changes: Any) -> Envelope:
    """``envelope``'s publication with ``changes``, as ``signer``'s own: their key, name and
    signature (any item id or version they like, a valid content hash for a new text)."""
    body = open_envelope(envelope)
    assert isinstance(body, Publication)
    if "text" in changes:
        changes["content_hash"] = text_hash(changes["text"])
    mine = msgspec.structs.replace(
        body,
        author_key=signer.identity.public_key_text,
        key_id=signer.key_id,
        author=signer.name,
        **changes,
    )
    return seal(mine, signer.identity)


def claim(member: Member, text: str, **changes: Any) -> Envelope:
    """``member``'s published ``text``, re-signed by them with ``changes`` (another member's
    item id, say): it verifies, since it is their own signature."""
    item_id = member.remember(text)
    member.publish(item_id)
    return signed_by(member, member.envelope(item_id), **changes)


def answer(*envelopes: Envelope, cosine: float = 0.9) -> SearchResponse:
    """A search or recall answer carrying ``envelopes`` as hits."""
    hits = [SearchHit(envelope=e, score=cosine, cosine=cosine, lexical=1.0) for e in envelopes]
    return SearchResponse(hits=hits, abstained=not hits, lexical_only=False, embedder=FINGERPRINT)


class Heard(msgspec.Struct, frozen=True, kw_only=True):
    """One request a fake received: everything a listener could keep and replay."""

    method: str
    path: str
    headers: list[tuple[bytes, bytes]]
    body: bytes

    def header(self, name: str) -> str | None:
        found = [v.decode("latin-1") for k, v in self.headers if k.decode("latin-1") == name]
        return found[0] if found else None

    @property
    def credentials(self) -> dict[str, str]:
        """Its Authorization and signature headers: what it could use to pass for the sender."""
        return {
            k.decode("latin-1"): v.decode("latin-1")
            for k, v in self.headers
            if k == b"authorization" or k.startswith(b"x-memmesh-")
        }


class FakeSource:
    """A tiny stand-in for a peer or a coordinator: canned answers, every request recorded.

    * ``presence`` - the body of ``GET /v1/presence`` (set it once the URL is known).
    * ``presences`` and ``roster`` - what ``GET /v1/presence/list`` lists; ``roster`` is also
      what ``POST /v1/presence`` (a heartbeat) answers with.
    * ``hits`` - what ``POST /v1/recall`` and ``POST /v1/search`` answer.
    * ``stall`` - recall and search hold their answer until :meth:`release` (at most 20 s).
    * ``confirmations`` - what ``POST /v1/confirm`` answers, whatever was asked (nothing by
      default).
    * ``on_retract`` - answers ``POST /v1/retract`` (each retraction ``accepted`` by default).
    """

    def __init__(self) -> None:
        self.presence: bytes = b"{}"
        self.hits = answer()
        self.presences: list[Envelope] = []
        self.roster: Roster | None = None
        self.confirmations: list[Confirmation] = []
        self.on_retract: Callable[[RetractRequest], RetractResponse] = _accept_all
        self.stall = False
        self.heard: list[Heard] = []
        self._released = threading.Event()

    @property
    def requests(self) -> list[tuple[str, str | None]]:
        """Each request's path and Authorization header."""
        return [(h.path, h.header("authorization")) for h in self.heard]

    def set_presence(self, envelope: Envelope) -> None:
        self.presence = encode(PeerPresence(envelope=envelope))

    def present_as(self, member: Member, url: str) -> None:
        """Answer at ``url`` as ``member``'s peer: a presence they signed, which verifies."""
        self.set_presence(presence_for(member.identity, url, team=member.team, name=member.name))

    def release(self) -> None:
        self._released.set()

    def authorized(self, path: str) -> list[str | None]:
        """The Authorization header of each request to ``path``."""
        return [auth for asked, auth in self.requests if asked == path]

    def audiences(self, path: str) -> list[str | None]:
        """The audience each request to ``path`` was signed for (``None``: unsigned)."""
        return [h.header("x-memmesh-audience") for h in self.heard if h.path == path]

    def app(self) -> Starlette:
        async def presence(request: Request) -> Response:
            await self._record(request)
            return Response(self.presence, media_type="application/json")

        async def listing(request: Request) -> Response:
            await self._record(request)
            document = PresenceList(members=self.presences, roster=self.roster)
            return Response(encode(document), media_type="application/json")

        async def heartbeat(request: Request) -> Response:
            await self._record(request)
            beat = PresenceResponse(
                status="accepted", expires_at=time.time() + 90, roster=self.roster
            )
            return Response(encode(beat), media_type="application/json")

        async def search(request: Request) -> Response:
            await self._record(request)
            for _ in range(400):
                if not self.stall or self._released.is_set():
                    break
                await anyio.sleep(0.05)
            return Response(encode(self.hits), media_type="application/json")

        async def confirm(request: Request) -> Response:
            await self._record(request)
            return Response(
                encode(ConfirmResponse(items=self.confirmations)), media_type="application/json"
            )

        async def retract(request: Request) -> Response:
            body = await self._record(request)
            answered = self.on_retract(msgspec.json.decode(body, type=RetractRequest))
            return Response(encode(answered), media_type="application/json")

        async def health(request: Request) -> Response:
            return Response(b'{"status":"ok"}', media_type="application/json")

        return Starlette(
            routes=[
                Route("/healthz", health),
                Route("/v1/presence", presence, methods=["GET"]),
                Route("/v1/presence", heartbeat, methods=["POST"]),
                Route("/v1/presence/list", listing),
                Route("/v1/recall", search, methods=["POST"]),
                Route("/v1/search", search, methods=["POST"]),
                Route("/v1/confirm", confirm, methods=["POST"]),
                Route("/v1/retract", retract, methods=["POST"]),
            ]
        )

    async def _record(self, request: Request) -> bytes:
        body = await request.body()
        self.heard.append(
            Heard(
                method=request.method, path=request.url.path,
                headers=list(request.scope["headers"]), body=body,
            )
        )  # fmt: skip
        return body


def _accept_all(request: RetractRequest) -> RetractResponse:
    opened = [open_envelope(e) for e in request.envelopes]
    return RetractResponse(
        results=[Outcome(item_id=b.item_id, version=b.version, status="accepted") for b in opened]
    )


@contextmanager
def serving(fake: FakeSource) -> Iterator[str]:
    """``fake`` on 127.0.0.1; whatever it still holds back is released before it stops."""
    with running(fake.app()) as url:
        try:
            yield url
        finally:
            fake.release()


def peer_status(asker: Member, peer: Member, url: str) -> int:
    """The HTTP status of ``asker``'s recall at ``peer``'s daemon at ``url`` (200: answered)."""
    audience = peer_audience(peer.key_id)
    try:
        with Client(url, token=None, identity=asker.identity, audience=audience) as client:
            client.post("/v1/recall", SearchRequest(query=LOCKS_QUERY, k=3), SearchResponse)
    except Refused as refused:
        return refused.http_status
    return 200
