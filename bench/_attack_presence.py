"""recall-team under a flood of hinted addresses and listed presences: latency, connections.

Run from the repository root::

    .venv/bin/python bench/_attack_presence.py                  # 3,000 entries, 3 runs each
    .venv/bin/python bench/_attack_presence.py --entries 1000 --runs 5

Everything is in this process, on 127.0.0.1: a coordinator stand-in (Starlette under uvicorn in
a thread) whose search answers with one teammate's signed item, and ``--entries`` listening
sockets, the flood's addresses, each of which accepts a connection, counts it and closes it at
once (a peer that is there but says nothing). An asking member then runs
:func:`memmesh.team.recall.recall_team` ``--runs`` times in each case:

* ``none``: nothing else (the baseline);
* ``hints``: team.yaml's ``peers:`` names every flood address (a policy built in code: team.yaml
  itself stops at 64 KiB, about 2,500 URLs; zeroconf announcements take the same path);
* ``presences``: the coordinator lists a signed presence at every flood address, each by a key
  its roster names as an active member (a coordinator that lies, or a roster of that size).

Each row: median and slowest wall milliseconds, the connections the flood's sockets accepted
per run, the entries dropped as too many, and whether the coordinator's hit came back. Bounded:
``--entries`` sockets (at most 5,000), ``--runs`` runs (at most 20), a 3-second deadline each.
"""

from __future__ import annotations

import argparse
import selectors
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import msgspec
import uvicorn
import yaml
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from _common import log, table
from memmesh.coordinator.protocol import PresenceList
from memmesh.embed import HashingEmbedder
from memmesh.local.ids import new_id
from memmesh.local.store import Store
from memmesh.net.presence import Roster, RosterMember
from memmesh.net.search import SearchHit, SearchResponse
from memmesh.net.server import free_port
from memmesh.net.wire import encode
from memmesh.policy import load_policy
from memmesh.registry import Identity, create_identity
from memmesh.registry.envelopes import (
    FORMAT_VERSION,
    Envelope,
    Presence,
    Publication,
    seal,
    text_hash,
)
from memmesh.team.recall import recall_team

HEADER: list[str] = [
    "case", "entries", "p50 ms", "max ms", "flood conns/run", "dropped/run", "coordinator hit",
]  # fmt: skip
TEAM = "acme"
FACT = "We chose Postgres advisory locks over Redis for the job scheduler"
QUERY = "which locks does the job scheduler use"
DEADLINE = 3.0


class _Flood:
    """``count`` listening sockets on 127.0.0.1 that accept, count and close every connection."""

    def __init__(self, count: int) -> None:
        self.socks = [socket.create_server(("127.0.0.1", 0), backlog=64) for _ in range(count)]
        self.urls = [f"http://127.0.0.1:{s.getsockname()[1]}" for s in self.socks]
        self.accepted = 0
        self._selector = selectors.DefaultSelector()
        for sock in self.socks:
            sock.setblocking(False)
            self._selector.register(sock, selectors.EVENT_READ)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._selector.select(timeout=0.1):
                listener = key.fileobj
                assert isinstance(listener, socket.socket)
                try:
                    conn, _ = listener.accept()
                except OSError:
                    continue
                self.accepted += 1
                conn.close()

    def __enter__(self) -> _Flood:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._selector.close()
        for sock in self.socks:
            sock.close()


class _Coordinator:
    """What the stand-in answers: the search's hits, and the presence list with its roster."""

    def __init__(self, hits: SearchResponse, roster: Roster) -> None:
        self.hits = hits
        self.listing = PresenceList(members=[], roster=roster)

    def app(self) -> Starlette:
        def reply(document: object) -> Response:
            return Response(encode(document), media_type="application/json")

        async def search(request: Request) -> Response:
            return reply(self.hits)

        async def listing(request: Request) -> Response:
            return reply(self.listing)

        return Starlette(
            routes=[
                Route("/v1/search", search, methods=["POST"]),
                Route("/v1/presence/list", listing),
            ]
        )


@contextmanager
def _serving(app: Starlette) -> Iterator[str]:
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _publication(author: Identity, name: str) -> Envelope:
    body = Publication(
        format=FORMAT_VERSION, team=TEAM, item_id=new_id(), version=1,
        author_key=author.public_key_text, key_id=author.key_id, seq=1, author=name,
        published_at=time.time(), text=FACT, kind="decision", project="global", tags=(),
        content_hash=text_hash(FACT), embedder=HashingEmbedder().fingerprint,
    )  # fmt: skip
    return seal(body, author)


def _presence(identity: Identity, url: str, name: str) -> Envelope:
    body = Presence(
        format=FORMAT_VERSION, team=TEAM, item_id="", version=1,
        author_key=identity.public_key_text, key_id=identity.key_id, seq=1, name=name,
        peer_url=url, embedder=HashingEmbedder().fingerprint, expires_at=time.time() + 600,
    )  # fmt: skip
    return seal(body, identity)


def _member(identity: Identity, name: str) -> RosterMember:
    return RosterMember(
        name=name, key=identity.public_key_text, key_id=identity.key_id, admin=False,
        added_at=1.0,
    )  # fmt: skip


def run_presence(entries: int = 3000, runs: int = 3) -> list[list[object]]:
    """The table's rows (see the module docstring)."""
    entries, runs = min(entries, 5000), min(runs, 20)
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory(prefix="memmesh-flood-") as root, _Flood(entries) as flood:
        home = Path(root) / "bob"
        bob = create_identity(home)
        carol = Identity(Ed25519PrivateKey.generate())
        keys = [Identity(Ed25519PrivateKey.generate()) for _ in range(entries)]
        log(f"signing {entries} presences")
        pairs = enumerate(zip(keys, flood.urls, strict=True))
        presences = [_presence(key, url, f"m{n}") for n, (key, url) in pairs]
        roster = Roster(
            members=[_member(bob, "bob"), _member(carol, "carol")]
            + [_member(k, f"m{n}") for n, k in enumerate(keys)],
            enforced=True,
        )
        hit = SearchHit(envelope=_publication(carol, "carol"), score=0.9, cosine=0.9, lexical=1.0)
        fake = _Coordinator(
            SearchResponse(hits=[hit], abstained=False, lexical_only=False,
                           embedder=HashingEmbedder().fingerprint),
            roster,
        )  # fmt: skip
        with _serving(fake.app()) as url, Store(home, author="bob") as store:
            policy = {"version": 1, "team": TEAM, "identity": {"name": "bob"}, "coordinator": url}
            (home / "team.yaml").write_text(yaml.safe_dump(policy), encoding="utf-8")
            base = load_policy(home)
            cases = [
                ("none", 0, base, []),
                ("hints", entries, msgspec.structs.replace(base, peers=tuple(flood.urls)), []),
                ("presences", entries, base, presences),
            ]
            for name, count, case_policy, listed in cases:
                fake.listing = PresenceList(members=listed, roster=roster)
                times, conns, dropped, found = [], [], [], []
                for _ in range(runs):
                    before = flood.accepted
                    started = time.perf_counter()
                    answer = recall_team(store, case_policy, QUERY, identity=bob, deadline=DEADLINE)
                    times.append((time.perf_counter() - started) * 1000)
                    time.sleep(0.2)  # the last connections' accepts are counted
                    conns.append(flood.accepted - before)
                    dropped.append(sum(v for k, v in answer.dropped.items() if "too_many" in k))
                    found.append(any(h.source == "coordinator" for h in answer.hits))
                log(f"{name}: {statistics.median(times):.0f} ms")
                rows.append([
                    name, count, round(statistics.median(times)), round(max(times)),
                    round(statistics.median(conns)), round(statistics.median(dropped)),
                    "yes" if all(found) else "no",
                ])  # fmt: skip
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=3000, help="flood size (at most 5000)")
    parser.add_argument("--runs", type=int, default=3, help="recall-team runs per case (<= 20)")
    args = parser.parse_args(argv)
    print(table(HEADER, run_presence(args.entries, args.runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
