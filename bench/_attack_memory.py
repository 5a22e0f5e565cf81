"""Memory attack: members publish items of random words, each word never seen before, and the
coordinator's resident memory is read before, after, and after a restart.

Run from the repository root::

    .venv/bin/python bench/_attack_memory.py                       # 1,000 items, 2 members
    .venv/bin/python bench/_attack_memory.py --items 2000 --members 4 --words random,normal
    .venv/bin/python bench/_attack_memory.py --serve-arg=--member-items=100000

``mem coordinator serve`` runs in its own process (as ``python -m memmesh``) over a fresh data
folder, on 127.0.0.1 and a free port, with a team token. Each member (an Ed25519 key made
here) publishes its share in batches of ``--batch`` items signed by its own key, and after each
batch the first member's authorised search is asked, as a served team asks all day: so the
in-memory indexes follow the publications as they come. Each item's text is as long as an
item may be (8 KiB); ``random`` words are made of random letters (almost every one a new term),
``normal`` ones come from a vocabulary of 2,000 words, as a team's notes repeat theirs;
``team`` items are bench/coordinator.py's synthetic team memories (about 85 characters each,
with the vector the member's embedder gives them), the size a real team's items are;
``projects`` items are three words each, every one in a project of its own, and each is
published again as version 2 once searched (a changed row makes its project's arrays be copied).

The resident memory is ``VmRSS`` of ``/proc/<pid>/status`` (``RssAnon``: the part that is not
the database file mapped in); "healthy s" is the seconds from starting the process to the first
200 of ``/healthz`` (it warms its indexes before it serves). Each row's "search" is the status
of the member's signed search right then. The run is bounded: ``--items`` in all, at most
``--max-seconds`` of publishing per kind of words; every process started is stopped.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import httpx
import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from _common import cpu_count, cpu_model, log, table
from coordinator import TOKEN, Corpus, Server, child_env, coordinator_server
from coordinator import _signed as signed
from memmesh.coordinator.protocol import PublishItem, PublishRequest, PublishResponse
from memmesh.embed import HashingEmbedder
from memmesh.local.ids import new_id
from memmesh.local.items import MAX_TEXT_BYTES
from memmesh.net.search import SearchRequest
from memmesh.net.wire import encode
from memmesh.registry.envelopes import FORMAT_VERSION, Publication, seal, text_hash
from memmesh.registry.identity import Identity

TEAM = "acme"  # the team bench/coordinator.py's server serves
LETTERS = "abcdefghijklmnopqrstuvwxyz"
VOCABULARY = 2000
HEADER = [
    "words",
    "phase",
    "items",
    "accepted",
    "refused",
    "rss MB",
    "anon MB",
    "healthy s",
    "search",
    "refusals",
]


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(LETTERS) for _ in range(rng.randint(4, 10)))


class Texts:
    """Item texts: of the longest size allowed, of random words or of a fixed vocabulary;
    ``team``: the synthetic team memories of bench/coordinator.py; ``projects``: three words."""

    def __init__(self, words: str, seed: int) -> None:
        self.rng = random.Random(seed)
        self.vocabulary = [_word(self.rng) for _ in range(VOCABULARY)] if words == "normal" else []
        self.team = Corpus(seed) if words == "team" else None
        self.short = words == "projects"

    def text(self) -> str:
        if self.team is not None:
            return self.team.memory().text
        if self.short:
            return " ".join(_word(self.rng) for _ in range(3))
        out: list[str] = []
        size = 0
        while size < MAX_TEXT_BYTES - 12:
            word = self.rng.choice(self.vocabulary) if self.vocabulary else _word(self.rng)
            out.append(word)
            size += len(word) + 1
        return " ".join(out)[: MAX_TEXT_BYTES - 12]


def memory_mb(pid: int) -> tuple[float, float]:
    """VmRSS and RssAnon of process ``pid``, in MB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "RssAnon"):
            fields[name] = int(value.split()[0]) * 1024 / 1e6
    return fields.get("VmRSS", float("nan")), fields.get("RssAnon", float("nan"))


def _publication(
    member: Identity,
    seq: int,
    text: str,
    embedder: HashingEmbedder | None,
    *,
    item_id: str,
    project: str = "global",
    version: int = 1,
) -> PublishItem:
    """One signed publication; with ``embedder``, its vector too (as a member sends it)."""
    now = time.time()
    body = Publication(
        format=FORMAT_VERSION, team=TEAM, item_id=item_id, version=version,
        author_key=member.public_key_text, key_id=member.key_id, seq=seq, author="member",
        published_at=now, text=text, kind="fact", project=project, tags=(),
        content_hash=text_hash(text),
        embedder=embedder.fingerprint if embedder else "none",
    )  # fmt: skip
    vector = embedder.embed([text])[0].tolist() if embedder else None
    return PublishItem(envelope=seal(body, member), vector=vector)


def _search(client: httpx.Client, member: Identity) -> int:
    """The status of the member's signed search."""
    body = encode(SearchRequest(query="deploy webhooks retry", k=5))
    try:
        answer = client.post(
            "/v1/search",
            content=body,
            headers=signed(member, str(client.base_url), "/v1/search", body),
        )
    except httpx.TransportError:
        return -1
    return answer.status_code


def _client(server: Server) -> httpx.Client:
    headers = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
    return httpx.Client(base_url=server.url, headers=headers, timeout=120.0)


def _pid(server: Server) -> int:
    assert server.process is not None
    return server.process.pid


def run_memory(
    *,
    items: int = 1000,
    members: int = 2,
    batch: int = 64,
    words: Sequence[str] = ("random", "normal"),
    serve_args: Sequence[str] = (),
    max_seconds: float = 300.0,
    seed: int = 7,
) -> list[list[object]]:
    """One row per phase (started, published, restarted) per kind of words: items sent,
    accepted and refused (and how: status and error code, items), memory, seconds to healthy
    and the search's status."""
    rows: list[list[object]] = []
    for kind in words:
        with tempfile.TemporaryDirectory(prefix=f"memmesh-memory-{kind}-") as tmp:
            rows += _one_kind(
                Path(tmp), kind, items, members, batch, list(serve_args), max_seconds, seed
            )
    return rows


class _Team:
    """Members publishing one kind of items, and what the coordinator answered them."""

    def __init__(self, kind: str, members: int, seed: int) -> None:
        self.kind = kind
        self.texts = Texts(kind, seed)
        self.embedder = HashingEmbedder() if kind == "team" else None
        self.members = [Identity(Ed25519PrivateKey.generate()) for _ in range(members)]
        self.seqs = [0] * members
        self.sent = 0
        self.outcomes: Counter[str] = Counter()
        self.refusals: Counter[str] = Counter()

    def publish(self, client: httpx.Client, count: int, who: int) -> None:
        """One batch of ``count`` new items by member ``who`` (``projects``: each in a project
        of its own, then, once searched, each again as version 2)."""
        member = self.members[who]
        ids = [new_id(time.time()) for _ in range(count)]
        projects = [
            f"p{self.sent + i}" if self.kind == "projects" else "global" for i in range(count)
        ]
        batches = [
            [self._item(who, item, project, 1) for item, project in zip(ids, projects, strict=True)]
        ]
        if self.kind == "projects":
            batches.append([self._item(who, i, p, 2) for i, p in zip(ids, projects, strict=True)])
        for items in batches:
            body = encode(PublishRequest(items=items))
            headers = signed(member, str(client.base_url), "/v1/publish", body)
            self._answered(client.post("/v1/publish", content=body, headers=headers), count)
            _search(client, self.members[0])
        self.sent += count

    def _item(self, who: int, item_id: str, project: str, version: int) -> PublishItem:
        self.seqs[who] += 1
        text = self.texts.text()
        return _publication(
            self.members[who], self.seqs[who], text, self.embedder,
            item_id=item_id, project=project, version=version,
        )  # fmt: skip

    def _answered(self, answer: httpx.Response, count: int) -> None:
        """Count the outcomes of one publish, or its refusal."""
        if answer.status_code == 200:
            results = msgspec.json.decode(answer.content, type=PublishResponse).results
            self.outcomes.update(result.status for result in results)
        else:
            self.refusals[f"{answer.status_code} {_code(answer)}"] += count

    def row(self, phase: str, server: Server, healthy: float | None, search: int) -> list[object]:
        refused = sum(self.refusals.values())
        answers = ", ".join(f"{what} x{count}" for what, count in self.refusals.items())
        rss, anon = memory_mb(_pid(server))
        accepted = self.outcomes["accepted"]
        return [self.kind, phase, self.sent, accepted, refused, rss, anon, healthy, search, answers]


def _one_kind(
    work: Path,
    kind: str,
    items: int,
    members: int,
    batch: int,
    serve_args: list[str],
    max_seconds: float,
    seed: int,
) -> list[list[object]]:
    team = _Team(kind, members, seed)
    asker = team.members[0]
    data = work / "coordinator"
    env = child_env(work)
    rows: list[list[object]] = []
    server = _server(data, work, serve_args)
    try:
        healthy = server.start(env)
        with _client(server) as client:
            rows.append(team.row("started", server, healthy, _search(client, asker)))
            began = time.monotonic()
            while team.sent < items and time.monotonic() - began < max_seconds:
                team.publish(client, min(batch, items - team.sent), (team.sent // batch) % members)
                if team.sent % (batch * 8) == 0:
                    rss, _ = memory_mb(_pid(server))
                    log(f"  [{kind}] {team.sent:,} of {items:,} sent, {rss:,.0f} MB resident")
            rows.append(team.row("published", server, None, _search(client, asker)))
    finally:
        server.stop()
    server = _server(data, work, serve_args)
    try:
        healthy = server.start(env)
        with _client(server) as client:
            rows.append(team.row("restarted", server, healthy, _search(client, asker)))
    finally:
        server.stop()
    return rows


def _server(data: Path, work: Path, serve_args: list[str]) -> Server:
    server = coordinator_server(data, work)
    server.command += serve_args
    return server


def _code(answer: httpx.Response) -> str:
    """The code of an error answer's document (``quota_exceeded``, say)."""
    try:
        return str(answer.json()["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return "(no error document)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1000, help="items published in all (1000)")
    parser.add_argument("--members", type=int, default=2, help="members publishing (2)")
    parser.add_argument("--batch", type=int, default=64, help="items per request (64)")
    parser.add_argument(
        "--words", default="random,normal", help="random, normal, team, projects (random,normal)"
    )
    parser.add_argument(
        "--serve-arg", action="append", default=[], help="extra `mem coordinator serve` flag"
    )
    parser.add_argument("--max-seconds", type=float, default=300.0, help="publishing budget")
    args = parser.parse_args(argv)
    rows = run_memory(
        items=args.items, members=args.members, batch=args.batch,
        words=args.words.split(","), serve_args=args.serve_arg, max_seconds=args.max_seconds,
    )  # fmt: skip
    print(f"machine: {cpu_model()}, {cpu_count()}")
    print(table(HEADER, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
