"""Three real `mem coordinator serve --database URL` processes on one PostgreSQL database serve
one team as one coordinator, and a member whose team.yaml lists the three addresses reaches
whichever answers: what one process is told, every process serves or refuses at once."""

import json
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from memmesh.coordinator import Coordinator
from memmesh.coordinator.protocol import (
    ChangesRequest,
    ChangesResponse,
    Info,
    MemberRevoke,
    RevokeResponse,
)
from memmesh.local.ids import new_id
from memmesh.local.store import Store
from memmesh.net.audience import client_audience
from memmesh.net.client import Client
from memmesh.net.errors import Refused
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.server import free_port
from memmesh.net.signing import coordinator_audience, sign_request
from memmesh.net.wire import encode
from memmesh.policy.config import load_policy
from memmesh.registry import Identity, Registry, create_identity, publish, retract
from memmesh.registry.envelopes import open_envelope
from memmesh.registry.identity import KEY_FILENAME
from memmesh.team.sync import sync
from tests._servers import CoordinatorProcess
from tests._signed import add_member, make_admin, signed_client

TEAM = "acme"
EMBEDDER = "minilm-static"
ITEMS = 3000


@dataclass
class Processes:
    """Three processes of one coordinator, each started with the first's address as its
    ``--url`` (``name``): the name members sign for; ``bob`` is a member at ``home``, whose
    team.yaml lists the three addresses."""

    each: list[CoordinatorProcess]
    name: str
    database: str
    ada: Identity
    bob: Identity
    home: Path

    def client(self, index: int, identity: Identity) -> Client:
        """A client of process ``index`` alone, signed as members sign for the coordinator."""
        return signed_client(self.each[index].url, identity, team=TEAM, known_as=self.name)


@pytest.fixture
def processes(tmp_path: Path, database_url: str) -> Iterator[Processes]:
    folders = [tmp_path / f"coordinator-{n}" for n in range(3)]
    ada, bob = create_identity(tmp_path / "ada"), create_identity(tmp_path / "bob")
    first = Coordinator(folders[0], team=TEAM, database=database_url, embedder=EMBEDDER)
    try:
        make_admin(first, ada, "ada")
        add_member(first, ada, bob, "bob")
    finally:
        first.close()
    # One coordinator: every process signs receipts with the one key.
    for folder in folders[1:]:
        folder.mkdir(mode=0o700)
        shutil.copy2(folders[0] / KEY_FILENAME, folder / KEY_FILENAME)
    ports = [free_port() for _ in folders]
    name = f"http://127.0.0.1:{ports[0]}"
    args = ("--database", database_url, "--url", name, "--embedder", EMBEDDER)
    each = [
        CoordinatorProcess(folder, team=TEAM, token=None, port=port, args=args)
        for folder, port in zip(folders, ports, strict=True)
    ]
    (tmp_path / "bob" / "team.yaml").write_text(
        f"version: 1\nteam: {TEAM}\nembedder: {EMBEDDER}\nidentity:\n  name: bob\n"
        f"coordinator: [{', '.join(p.url for p in each)}]\nshare:\n  kinds: [fact]\n",
        encoding="utf-8",
    )
    try:
        with ThreadPoolExecutor(len(each)) as starting:
            list(starting.map(CoordinatorProcess.start, each))
        yield Processes(each, name, database_url, ada, bob, tmp_path / "bob")
    finally:
        for process in each:
            process.stop()


def _found(processes: Processes, index: int, query: str) -> set[str]:
    """The ids of the items process ``index`` serves for ``query``."""
    with processes.client(index, processes.bob) as client:
        answer = client.post(
            "/v1/search", SearchRequest(query=query, project="billing", k=50), SearchResponse
        )
    return {open_envelope(hit.envelope).item_id for hit in answer.hits}


def test_an_item_published_through_one_process_and_retracted_through_another_is_served_by_none(
    processes: Processes,
) -> None:
    policy = load_policy(processes.home)
    text = "The invoice export must finish before the ledger job starts at 02:00"
    with Store(processes.home, author="bob") as store:
        registry = Registry(store, processes.bob, TEAM)
        item, _ = store.remember(text, kind="fact", project="billing")
        publish(registry, policy, [item.id])
        with processes.client(0, processes.bob) as through_first:
            assert sync(registry, policy, through_first).accepted == 1
        served_before = _found(processes, 2, "invoice export ledger job")
        retract(registry, [item.id])
        with processes.client(1, processes.bob) as through_second:
            assert sync(registry, policy, through_second).accepted == 1

    assert served_before == {item.id}
    assert [_found(processes, n, "invoice export ledger job") for n in (2, 0, 1)] == [set()] * 3


def _fill(home: Path, identity: Identity, count: int) -> list[str]:
    """``count`` published items in the member's store (written in one transaction, their
    vectors embedded in one batch); their ids."""
    policy = load_policy(home)
    texts = [
        f"Billing note {n}: invoice job {n} runs after export batch {n * 7}" for n in range(count)
    ]
    with Store(home, author="bob") as store:
        vectors = store.embedder.embed(texts)
        ids = [new_id() for _ in texts]
        with store.transaction() as tx:
            for item_id, text, vector in zip(ids, texts, vectors, strict=True):
                store.put(
                    item_id=item_id,
                    text=text,
                    kind="fact",
                    project="billing",
                    tags=(),
                    author="bob",
                    created_at=time.time(),
                    vector=vector,
                    tx=tx,
                )
        publish(Registry(store, identity, policy.team), policy, ids)
    return ids


def _acked(home: Path) -> int:
    with closing(sqlite3.connect(home / "memory.db", timeout=10)) as conn:
        (count,) = conn.execute("SELECT count(*) FROM registry WHERE acked = 1").fetchone()
    return int(count)


def _feed(processes: Processes, index: int) -> dict[str, int]:
    """Each item in the coordinator's feed, read through process ``index``, with its version;
    no item may be there twice."""
    feed: dict[str, int] = {}
    cursor = 0
    with processes.client(index, processes.bob) as client:
        while True:
            page = client.post(
                "/v1/changes", ChangesRequest(cursor=cursor, limit=500), ChangesResponse
            )
            for change in page.changes:
                assert change.item_id not in feed, f"{change.item_id} is in the feed twice"
                assert change.kind == "publication"
                feed[change.item_id] = change.version
            cursor = page.next_cursor
            if not page.more:
                return feed


def test_a_process_killed_during_a_sync_of_3000_items_loses_and_doubles_nothing(
    processes: Processes,
) -> None:
    published = _fill(processes.home, processes.bob, ITEMS)
    command = [sys.executable, "-m", "memmesh", "--home", str(processes.home), "--json"]
    syncing = subprocess.Popen(
        [*command, "team", "sync"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        # The member starts with the first address; it dies a few batches in.
        deadline = time.monotonic() + 60
        while _acked(processes.home) < 256 and syncing.poll() is None:
            assert time.monotonic() < deadline, "the sync did not get going"
            time.sleep(0.01)
        acked_at_kill = _acked(processes.home)
        running_at_kill = syncing.poll() is None
        processes.each[0].kill()
        stdout, stderr = syncing.communicate(timeout=120)
    finally:
        if syncing.poll() is None:
            syncing.kill()
            syncing.communicate()

    assert running_at_kill, "the sync ended before the kill"
    assert acked_at_kill < ITEMS
    assert syncing.returncode == 0, stderr
    report = json.loads(stdout)
    assert (report["sent"], report["rejected"]) == (ITEMS, [])
    assert report["accepted"] + report["already_known"] == ITEMS
    assert _acked(processes.home) == ITEMS
    feed = _feed(processes, 2)
    assert feed == dict.fromkeys(published, 1)
    with processes.client(1, processes.bob) as client:
        assert client.get("/v1/info", Info).published == ITEMS


def test_a_request_replayed_to_another_process_is_refused(processes: Processes) -> None:
    body = encode(SearchRequest(query="invoice", project="billing"))
    audience = client_audience(coordinator_audience(TEAM), processes.name)
    signed = sign_request(processes.bob, "POST", "/v1/search", body, audience)
    headers = {**signed, "content-type": "application/json"}

    answers = [
        httpx.post(f"{process.url}/v1/search", content=body, headers=headers, timeout=5)
        for process in processes.each
    ]

    assert [answer.status_code for answer in answers] == [200, 401, 401]


def _refusal(client: Client, deadline: float) -> Refused:
    """How ``client``'s process refuses bob, asked until ``deadline`` (monotonic)."""
    while True:
        try:
            client.get("/v1/info", Info)
        except Refused as exc:
            return exc
        assert time.monotonic() < deadline, f"{client.base_url} still admits bob"
        time.sleep(0.01)


def test_a_revocation_through_one_process_is_refused_by_every_process_within_a_second(
    processes: Processes,
) -> None:
    clients = [processes.client(n, processes.bob) for n in range(3)]
    try:
        assert all(client.get("/v1/info", Info).team == TEAM for client in clients)
        with processes.client(1, processes.ada) as admin:
            admin.post("/v1/members/revoke", MemberRevoke(member="bob"), RevokeResponse)
        revoked = time.monotonic()
        refusals = [_refusal(client, revoked + 1.0) for client in clients]
        took = time.monotonic() - revoked
    finally:
        for client in clients:
            client.close()

    assert [(r.http_status, r.error_code) for r in refusals] == [(403, "revoked")] * 3
    assert took < 1.0
