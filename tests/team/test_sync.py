"""`sync`: what reaches the coordinator, in which batches, and what a kill -9 on either side
leaves behind once sync has run again (real coordinator, real store and registry)."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
import httpx
import pytest
from starlette.types import Receive, Scope, Send

from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.coordinator.protocol import (
    ChangesRequest,
    ChangesResponse,
    PublishRequest,
    RetractRequest,
)
from memmesh.local.store import Store
from memmesh.net.client import Client
from memmesh.net.errors import Refused
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.server import free_port
from memmesh.net.signing import coordinator_audience
from memmesh.policy.config import Policy, load_policy
from memmesh.registry import Identity, Registry, create_identity, load_identity, publish, retract
from memmesh.registry.envelopes import Envelope, open_envelope
from memmesh.team.sync import SyncReport, sync
from tests._servers import CoordinatorProcess, running
from tests._signed import NOBODY, signed_client
from tests._traces import all_needles, found_anywhere, secret_items, traces
from tests.cli._output import json_error
from tests.registry._helpers import TEAM, make_policy

TOKEN = "t"
T = TypeVar("T")
# item id -> (kind, version, envelope): an item's one current state on the coordinator (a
# hidden change, which this one member never sees, would carry no envelope).
State = dict[str, tuple[str, int, Envelope | None]]
Posted = tuple[str, list[tuple[str, int]]]


class _RecordingClient(Client):
    """The real client, noting which envelopes each request carried."""

    def __init__(self, url: str, identity: Identity) -> None:
        super().__init__(url, token=TOKEN, identity=identity, audience=coordinator_audience(TEAM))
        self.posted: list[Posted] = []

    def post(self, path: str, body: Any, response: type[T]) -> T:
        if isinstance(body, PublishRequest):
            envelopes = [item.envelope for item in body.items]
        elif isinstance(body, RetractRequest):
            envelopes = list(body.envelopes)
        else:
            envelopes = []
        opened = [open_envelope(e) for e in envelopes]
        self.posted.append((path, [(b.item_id, b.version) for b in opened]))
        return super().post(path, body, response)


@pytest.fixture
def identity(home: Path) -> Identity:
    return create_identity(home)


@pytest.fixture
def registry(store: Store, identity: Identity) -> Registry:
    return Registry(store, identity, TEAM)


@pytest.fixture
def policy() -> Policy:
    return make_policy()


@pytest.fixture
def coordinator(tmp_path: Path) -> Iterator[Coordinator]:
    opened = Coordinator(tmp_path / "coordinator", team=TEAM)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def client(coordinator: Coordinator, identity: Identity) -> Iterator[_RecordingClient]:
    with running(coordinator_app(coordinator, token=TOKEN)) as url:
        recording = _RecordingClient(url, identity)
        try:
            yield recording
        finally:
            recording.close()


def _remember(store: Store, text: str, kind: str = "fact") -> str:
    item, status = store.remember(text, kind=kind, project="billing")
    assert status == "created"
    return item.id


def _texts(count: int, start: int = 0) -> list[str]:
    return [
        f"Billing note {n}: the invoice job number {n} must run after export batch {n * 7}"
        for n in range(start, start + count)
    ]


def _acked(store: Store) -> list[tuple[int, str, str, bool]]:
    with store.read() as conn:
        rows = conn.execute("SELECT seq, kind, item_id, acked FROM registry ORDER BY seq")
        return [(seq, kind, item, bool(acked)) for seq, kind, item, acked in rows]


def _feed(coordinator: Coordinator) -> State:
    changes = coordinator.changes(ChangesRequest(limit=500)).changes
    state: State = {c.item_id: (c.kind, c.version, c.envelope) for c in changes}
    assert len(state) == len(changes), "an item appears twice in the feed"
    return state


def _search_ids(coordinator: Coordinator, query: str) -> list[str]:
    request = SearchRequest(query=query, project="billing", k=50)
    hits = coordinator.search(NOBODY, request).hits
    return [open_envelope(hit.envelope).item_id for hit in hits]


# -- what is sent ----------------------------------------------------------------------------


def test_sync_pushes_exactly_the_unacked_entries_in_bounded_batches(
    store: Store,
    registry: Registry,
    policy: Policy,
    coordinator: Coordinator,
    client: _RecordingClient,
) -> None:
    early = [_remember(store, text) for text in _texts(2)]
    publish(registry, policy, early)
    first = sync(registry, policy, client, batch_size=2)
    assert (first.sent, first.batches, first.accepted) == (2, 1, 2)
    later = [_remember(store, text) for text in _texts(5, start=2)]
    publish(registry, policy, later)
    client.posted.clear()

    report = sync(registry, policy, client, batch_size=2)

    assert report == SyncReport(sent=5, accepted=5, batches=3)
    assert client.posted == [
        ("/v1/publish", [(later[0], 1), (later[1], 1)]),
        ("/v1/publish", [(later[2], 1), (later[3], 1)]),
        ("/v1/publish", [(later[4], 1)]),
    ]
    assert all(acked for *_, acked in _acked(store))
    with store.read() as conn:
        live = registry.live(conn)
    assert _feed(coordinator) == {
        item: ("publication", 1, live[item].envelope) for item in early + later
    }
    # The vector travelled beside each envelope and is the member's own.
    with store.read() as conn:
        mine = dict(conn.execute("SELECT id, vector FROM items"))
    with coordinator.store.read() as conn:
        cached = dict(
            conn.execute(
                "SELECT e.item_id, i.vector FROM items AS i "
                "JOIN coord_envelopes AS e ON e.copy_id = i.id"
            )
        )
    assert cached == mine


def test_second_sync_sends_nothing(
    store: Store, registry: Registry, policy: Policy, client: _RecordingClient
) -> None:
    publish(registry, policy, [_remember(store, text) for text in _texts(3)])
    sync(registry, policy, client)
    client.posted.clear()

    report = sync(registry, policy, client)

    assert report == SyncReport()
    assert client.posted == []


def test_retraction_after_sync_removes_the_item_from_search(
    store: Store,
    registry: Registry,
    policy: Policy,
    coordinator: Coordinator,
    client: _RecordingClient,
) -> None:
    keep, drop = (_remember(store, text) for text in _texts(2))
    publish(registry, policy, [keep, drop])
    sync(registry, policy, client)
    assert sorted(_search_ids(coordinator, "invoice job export batch")) == sorted([keep, drop])
    (tombstone,) = retract(registry, [drop])
    client.posted.clear()

    report = sync(registry, policy, client)

    assert report == SyncReport(sent=1, accepted=1, batches=1, receipts=1)
    assert client.posted == [("/v1/retract", [(drop, 1)])]
    assert _search_ids(coordinator, "invoice job export batch") == [keep]
    assert _feed(coordinator)[drop] == ("retraction", 1, tombstone.envelope)


def test_a_retraction_synced_leaves_none_of_the_item_s_text_in_the_coordinator_s_folder(
    store: Store, registry: Registry, policy: Policy, tmp_path: Path, client: _RecordingClient
) -> None:
    secrets, kept = secret_items(6), secret_items(2, seed=8, long_one=False)
    ids = [
        store.remember(item.text, kind="fact", project="billing", tags=[item.tag])[0].id
        for item in secrets + kept
    ]
    publish(registry, policy, ids)
    sync(registry, policy, client)
    folder = tmp_path / "coordinator"
    assert found_anywhere(folder, secrets) == all_needles(secrets)
    retract(registry, ids[: len(secrets)])

    assert sync(registry, policy, client).accepted == len(secrets)

    assert traces(folder, secrets) == {}
    assert found_anywhere(folder, kept) == all_needles(kept)


def test_publication_no_longer_live_is_not_sent(
    store: Store,
    registry: Registry,
    policy: Policy,
    coordinator: Coordinator,
    client: _RecordingClient,
) -> None:
    again, gone = (_remember(store, text) for text in _texts(2))
    publish(registry, policy, [again, gone])
    retract(registry, [again, gone])
    republished = publish(registry, policy, [again], again=True)[0]
    assert republished.version == 2

    report = sync(registry, policy, client)

    assert report == SyncReport(sent=3, accepted=3, skipped=2, batches=2, receipts=2)
    assert client.posted == [
        ("/v1/retract", [(again, 1), (gone, 1)]),
        ("/v1/publish", [(again, 2)]),
    ]
    feed = _feed(coordinator)
    assert {item: (kind, version) for item, (kind, version, _) in feed.items()} == {
        gone: ("retraction", 1),
        again: ("publication", 2),
    }
    assert all(acked for *_, acked in _acked(store))


def test_a_publication_the_policy_now_refuses_is_retracted_sent_or_not_and_stays_so(
    store: Store,
    registry: Registry,
    policy: Policy,
    coordinator: Coordinator,
    client: _RecordingClient,
) -> None:
    fact = _remember(store, _texts(1)[0], kind="fact")
    decision = _remember(store, "We decided the quokka exporter writes Parquet", kind="decision")
    publish(registry, policy, [fact, decision])
    narrower = make_policy(("decision",))

    report = sync(registry, narrower, client)
    again = sync(registry, narrower, client)

    # Never sent, yet a peer may have served it: it is taken back like any other.
    withdrawn = [(fact, "share.kinds: fact is not shared")]
    assert report == SyncReport(
        sent=2, accepted=2, skipped=1, batches=2, receipts=1, withdrawn=withdrawn
    )
    assert again == SyncReport()
    assert client.posted == [("/v1/publish", [(decision, 1)]), ("/v1/retract", [(fact, 1)])]
    assert all(acked for *_, acked in _acked(store))
    assert _feed(coordinator)[fact][0] == "retraction"
    assert fact not in _search_ids(coordinator, "invoice job export batch")

    # A policy that allows it again brings nothing back: publishing it again is the user's act.
    assert sync(registry, policy, client) == SyncReport()
    assert fact not in _search_ids(coordinator, "invoice job export batch")


def test_another_teams_coordinator_refuses_the_request_and_nothing_is_acked(
    tmp_path: Path, store: Store, registry: Registry, policy: Policy
) -> None:
    item = _remember(store, _texts(1)[0])
    publish(registry, policy, [item])
    other_team = Coordinator(tmp_path / "other-team", team="elsewhere")
    try:
        with (
            running(coordinator_app(other_team, token=TOKEN)) as url,
            signed_client(url, registry.identity, team=TEAM, token=TOKEN) as client,
            pytest.raises(Refused) as refused,
        ):
            # Signed for this member's team, the request is worthless to another team's host.
            sync(registry, policy, client)
        assert refused.value.http_status == 401
        assert _acked(store)[0][3] is False
        assert other_team.info().published == 0
    finally:
        other_team.close()


# -- kill -9 on either side, then sync again -------------------------------------------------


class _Severed(Exception):
    """Raised after the response head: uvicorn then drops the connection mid-answer."""


Hook = Callable[[], None]


class _Proxy:
    """Forwards requests to ``upstream``; around the n-th POST it can run a hook (a kill).

    ``on_arrival[n]`` runs before the n-th POST would be forwarded, which it then is not;
    ``on_answer[n]`` runs once the upstream has answered it, and that answer is lost. In both
    cases the client's connection is dropped, as if the coordinator had died under it.
    """

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.posts = 0
        self.on_arrival: dict[int, Hook] = {}
        self.on_answer: dict[int, Hook] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        number = 0
        if scope["method"] == "POST":
            self.posts += 1
            number = self.posts
        if number in self.on_arrival:
            await anyio.to_thread.run_sync(self.on_arrival.pop(number))
            await self._sever(send)
        headers = {
            name.decode(): value.decode()
            for name, value in scope["headers"]
            if name in (b"authorization", b"content-type") or name.startswith(b"x-memmesh-")
        }
        async with httpx.AsyncClient(base_url=self.upstream) as upstream:
            answer = await upstream.request(
                scope["method"], scope["path"], content=body, headers=headers
            )
        if number in self.on_answer:
            await anyio.to_thread.run_sync(self.on_answer.pop(number))
            await self._sever(send)
        await send(
            {
                "type": "http.response.start",
                "status": answer.status_code,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(answer.content)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": answer.content})

    async def _sever(self, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", b"4096")],
            }
        )
        raise _Severed("the connection dies mid-answer")


ROUNDS = 3


class _Member:
    """A member's home, its log prepared in-process, synced by the real `mem team sync`."""

    PER_ROUND = 13
    RETRACTED_PER_ROUND = 2

    def __init__(self, home: Path, coordinator_url: str, *, rounds: int = ROUNDS) -> None:
        self.home = home
        self.sync_process: subprocess.Popen[str] | None = None
        identity = create_identity(home)
        (home / "team.yaml").write_text(
            f"version: 1\nteam: {TEAM}\ncoordinator: {coordinator_url}\nshare:\n  kinds: [fact]\n",
            encoding="utf-8",
        )
        policy = load_policy(home)
        with Store(home, author="tester") as store:
            registry = Registry(store, identity, policy.team)
            texts = _texts(rounds * self.PER_ROUND)
            for round_ in range(rounds):
                chunk = texts[round_ * self.PER_ROUND : (round_ + 1) * self.PER_ROUND]
                ids = [_remember(store, text) for text in chunk]
                publish(registry, policy, ids)
                retract(registry, ids[: self.RETRACTED_PER_ROUND])

    def sync(self) -> subprocess.CompletedProcess[str]:
        """Run `mem team sync --json` to the end (or until a hook kills it)."""
        command = [sys.executable, "-m", "memmesh", "--home", str(self.home), "--json"]
        process = subprocess.Popen(
            [*command, "team", "sync"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "MEM_TEAM_TOKEN": TOKEN},
        )
        self.sync_process = process
        try:
            stdout, stderr = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)

    def kill_sync(self) -> None:
        assert self.sync_process is not None
        self.sync_process.send_signal(signal.SIGKILL)

    def acked(self) -> int:
        with closing(sqlite3.connect(self.home / "memory.db")) as conn:
            (count,) = conn.execute("SELECT count(*) FROM registry WHERE acked = 1").fetchone()
        return int(count)

    def expected(self) -> State:
        """What the coordinator must hold: each live item's publication, else its tombstone."""
        identity = load_identity(self.home)
        with Store(self.home, author="tester") as store:
            registry = Registry(store, identity, TEAM)
            entries = registry.entries()
            with store.read() as conn:
                live = registry.live(conn)
        state: State = {}
        for entry in entries:
            if entry.kind == "retraction" and entry.item_id not in live:
                state[entry.item_id] = ("retraction", entry.version, entry.envelope)
        for item_id, current in live.items():
            state[item_id] = ("publication", current.publication.version, current.envelope)
        return state

    def unsent_now(self) -> SyncReport:
        """Sync once more in-process: nothing may be left to send."""
        identity = load_identity(self.home)
        policy = load_policy(self.home)
        assert policy.coordinator is not None
        with (
            Store(self.home, author="tester") as store,
            signed_client(policy.coordinator, identity, team=TEAM, token=TOKEN) as c,
        ):
            return sync(Registry(store, identity, policy.team), policy, c)

    def unreceipted(self) -> list[str]:
        """The retractions in the log that hold no receipt from the coordinator."""
        identity = load_identity(self.home)
        with Store(self.home, author="tester") as store:
            return [e.item_id for e in Registry(store, identity, TEAM).unreceipted()]


# Sendable batches in log order, per round: 11 live publications, then 2 retractions (the
# 2 retracted items' publications are no longer live and never sent); 45 entries in all.
TOTAL_ENTRIES = 45
SKIPPED = 6


def _coordinator_state(url: str, identity: Identity, known_as: str | None = None) -> State:
    """The coordinator's whole feed, read page by page over HTTP (signed for the coordinator
    members know at ``known_as``, when that is not ``url``)."""
    state: State = {}
    cursor = 0
    with signed_client(url, identity, team=TEAM, token=TOKEN, known_as=known_as) as client:
        while True:
            page = client.post(
                "/v1/changes", ChangesRequest(cursor=cursor, limit=7), ChangesResponse
            )
            for change in page.changes:
                assert change.item_id not in state, f"{change.item_id} is in the feed twice"
                state[change.item_id] = (change.kind, change.version, change.envelope)
            cursor = page.next_cursor
            if not page.more:
                return state


def _assert_converged(
    member: _Member, url: str, final: subprocess.CompletedProcess[str], known_as: str | None = None
) -> None:
    assert final.returncode == 0, final.stderr
    report = json.loads(final.stdout)
    # Receipts come back for the retractions this sync sent: some were sent before the kill.
    assert 1 <= report.pop("receipts") <= 6
    assert report == {
        "sent": 26,
        "accepted": 15,
        "already_known": 11,
        "stale": 0,
        "skipped": 0,
        "withheld": [],
        "withdrawn": [],
        "rejected": [],
        "batches": 4,
        "bad_receipts": [],
        "tallies": {"supported": True, "sent": 0, "rejected": [], "folded": 0, "dropped": {}},
    }
    expected = member.expected()
    assert len(expected) == 39
    assert sum(kind == "retraction" for kind, _, _ in expected.values()) == 6
    identity = load_identity(member.home)
    assert _coordinator_state(url, identity, known_as) == expected
    assert member.acked() == TOTAL_ENTRIES
    assert member.unsent_now() == SyncReport()
    assert member.unreceipted() == []  # every retraction's purge is vouched for
    with signed_client(url, identity, team=TEAM, token=TOKEN, known_as=known_as) as client:
        hits = client.post(
            "/v1/search",
            SearchRequest(query="invoice job export batch", project="billing", k=100),
            SearchResponse,
        ).hits
    found = {open_envelope(hit.envelope).item_id for hit in hits}
    assert found <= {item for item, (kind, _, _) in expected.items() if kind == "publication"}
    assert found


def _assert_interrupted(result: subprocess.CompletedProcess[str]) -> None:
    """The killed coordinator is reported as unreachable, in one JSON object (the command ran
    with --json), without a traceback."""
    assert result.returncode == 4, result.stderr
    error = json_error(result)
    assert error["code"] == "unreachable"
    assert "unreachable" in error["error"]


def test_kill_9_of_the_coordinator_at_several_points_then_sync_again_converges(
    tmp_path: Path,
) -> None:
    # Members reach the coordinator through the proxy, which is therefore its --url.
    proxy_port = free_port()
    proxied = f"http://127.0.0.1:{proxy_port}"
    process = CoordinatorProcess(
        tmp_path / "coordinator-data", team=TEAM, token=TOKEN, args=("--url", proxied)
    )
    proxy = _Proxy(process.url)
    try:
        process.start()
        with running(proxy, port=proxy_port) as url:
            member = _Member(tmp_path / "member", url)

            # 1. Killed after the first batch was acknowledged and recorded, as batch 2 arrives.
            proxy.on_arrival[2] = process.kill
            _assert_interrupted(member.sync())
            assert member.acked() == SKIPPED + 11
            process.start()
            identity = load_identity(member.home)
            assert len(_coordinator_state(process.url, identity, url)) == 11

            # 2. Killed after committing a batch, before its answer reached the member.
            proxy.on_answer[4] = process.kill
            _assert_interrupted(member.sync())
            assert member.acked() == SKIPPED + 11 + 2
            process.start()
            state = _coordinator_state(process.url, identity, url)
            assert len(state) == 24
            assert sum(kind == "retraction" for kind, _, _ in state.values()) == 2

            _assert_converged(member, process.url, member.sync(), url)
    finally:
        process.kill()


def test_kill_9_of_the_syncing_client_then_sync_again_converges(tmp_path: Path) -> None:
    coordinator = Coordinator(tmp_path / "coordinator-data", team=TEAM)
    proxy_port = free_port()  # members reach it through the proxy, which is its --url
    proxied = f"http://127.0.0.1:{proxy_port}"
    try:
        with running(coordinator_app(coordinator, token=TOKEN, url=proxied)) as upstream:
            proxy = _Proxy(upstream)
            with running(proxy, port=proxy_port) as url:
                member = _Member(tmp_path / "member", url)

                # 1. The client dies after batch 1 was acked, as batch 2 leaves it.
                proxy.on_arrival[2] = member.kill_sync
                killed = member.sync()
                assert killed.returncode == -signal.SIGKILL
                assert member.acked() == SKIPPED + 11
                assert len(_feed(coordinator)) == 11

                # 2. The client dies after the coordinator committed a batch, before the answer.
                proxy.on_answer[4] = member.kill_sync
                killed = member.sync()
                assert killed.returncode == -signal.SIGKILL
                assert member.acked() == SKIPPED + 11 + 2
                assert len(_feed(coordinator)) == 24

                _assert_converged(member, upstream, member.sync(), url)
    finally:
        coordinator.close()


def test_a_withdrawal_killed_before_its_push_stays_queued_and_the_next_sync_sends_it(
    tmp_path: Path,
) -> None:
    coordinator = Coordinator(tmp_path / "coordinator-data", team=TEAM)
    proxy_port = free_port()  # members reach it through the proxy, which is its --url
    proxied = f"http://127.0.0.1:{proxy_port}"
    try:
        with running(coordinator_app(coordinator, token=TOKEN, url=proxied)) as upstream:
            proxy = _Proxy(upstream)
            with running(proxy, port=proxy_port) as url:
                member = _Member(tmp_path / "member", url, rounds=1)
                assert member.sync().returncode == 0
                served = _search_ids(coordinator, "invoice job export batch")
                assert len(served) == 11
                # Facts are no longer shared; the client dies as the retractions leave it.
                policy = member.home / "team.yaml"
                policy.write_text(
                    policy.read_text(encoding="utf-8").replace("[fact]", "[decision]"),
                    encoding="utf-8",
                )
                proxy.on_arrival[proxy.posts + 1] = member.kill_sync

                assert member.sync().returncode == -signal.SIGKILL
                # The 11 retractions it recorded wait, unsent; the coordinator still serves.
                assert member.acked() == 15
                still = _search_ids(coordinator, "invoice job export batch")
                assert sorted(still) == sorted(served)

                final = member.sync()

                assert final.returncode == 0, final.stderr
                report = json.loads(final.stdout)
                assert (report["sent"], report["accepted"], report["withdrawn"]) == (11, 11, [])
                assert _search_ids(coordinator, "invoice job export batch") == []
                assert {_feed(coordinator)[item][0] for item in served} == {"retraction"}
                assert member.acked() == 26
                assert member.unsent_now() == SyncReport()
    finally:
        coordinator.close()
