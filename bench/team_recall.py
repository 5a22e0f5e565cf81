"""Benchmark of recall across a team: recall-team latency, and federated vs single-store answers.

Run from the repository root::

    .venv/bin/python bench/team_recall.py                  # 8 peers x 300 items, 200 queries
    .venv/bin/python bench/team_recall.py --peers 8 --items-per-peer 300 --queries 200 \\
        --json out.json

Everything runs on 127.0.0.1 in a temporary folder, with real processes: one
``python -m memmesh coordinator serve --team acme`` per part and one
``python -m memmesh --home H team serve --heartbeat 1`` per member, all sharing a team token
in ``MEM_TEAM_TOKEN``. Members are set up as ``mem demo`` does: an identity, a team.yaml from
``policy_template`` whose ``share.kinds`` lists every kind, ``remember``, ``publish`` and
``sync``. Every process started here is stopped (terminate, then kill) and the temporary
folder removed, whatever happens.

1. Latency. N members each remember a few hundred synthetic developer memories, publish about
   two thirds of them (the rest stay private) and sync them to the coordinator; their peer
   daemons run. Once the coordinator lists all N peers in its presence list, an extra member
   (N+1) runs :func:`memmesh.team.recall.recall_team` in this process, with its own Store,
   Policy and identity (every member's team.yaml lists all of them under ``members:``, so
   that peers ask and answer one another), for Q queries after a warm-up: wall ms per call,
   how many sources were asked and answered, hits. Another row passes recall_team one
   ``Calls`` kept for every query, so that its connections are reused (a single `mem team
   recall-team` makes its clients anew and closes them). Then the peers are stopped
   and the same is measured twice: at once (their presence is still listed, so each peer is
   tried and refuses the connection) and once their presence has expired (the coordinator
   alone).
2. Federated equivalence. A corpus (2,000 items by default, unique texts) goes into one
   member's store (``solo``), all published; the exact same items (text, kind, project, tags as
   ``solo`` holds them) are dealt round-robin to 5 other members, all published and synced to
   a second coordinator. An asking member then asks, for each query, with k=10:

   * ``peers only``: team.yaml lists the 5 peer URLs under ``peers:`` and names no coordinator;
   * ``peers + coordinator``: team.yaml names the second coordinator (which holds the same
     items and lists the 5 peers in its presence), no static peers;
   * ``single store``: team.yaml lists only ``solo``'s peer daemon under ``peers:``.

   The overlap |top10_federated & top10_single| / |top10_single| is computed by item text (ids
   differ between the split and the single copy) and averaged over the queries where the
   single store did not abstain. ``solo`` heartbeats to a third, empty coordinator so that it
   never appears in the second one's presence list. For queries whose top-10 differ, each
   missing or extra item is looked up in the holding store's own ranking (the peer handler
   run in this process with k=100), which shows whether it fell outside the k*3 pool that
   source sends.

3. TLS beside plaintext (``--transport-only`` runs just this part). The same team is set up
   twice: one coordinator and N peers on plain http, and one coordinator and N peers serving
   https with certificates of their own (the coordinator pinned in team.yaml, each peer pinned
   from its signed presence); both run as this script's ``_serve`` processes, the peers through
   :func:`memmesh.peer.serve.peer_daemon`. Every request is signed in both. Each query is asked
   of both teams in turn (which goes first alternates), first with one ``Calls`` per team kept
   for all queries, then with fresh clients per call; the rows give p50/p95 and the ratio
   TLS / plaintext. The cost of signing and verifying one request is timed alone.

With ``--profile``, or when the p95 goal is missed, a few dozen full-team recall-team calls
are run under cProfile (every thread, the main one and the fan-out workers) and the parts of
one call are timed alone.
"""

import argparse
import contextlib
import cProfile
import importlib.metadata
import io
import json
import os
import platform
import pstats
import random
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from types import FrameType
from typing import IO, Any, NamedTuple, NoReturn

import httpx
import numpy as np

import memmesh
import memmesh.team.recall as team_recall_module
from _common import (
    CAUSES,
    COLUMNS,
    COMMANDS,
    CONVENTIONS,
    ENVS,
    ENVVARS,
    FIXES,
    PREFERENCES,
    PROTOCOLS,
    SERVICES,
    TABLES,
    TASKS,
    cpu_count,
    cpu_model,
    load_average,
    log,
    mean,
    ms_since,
    source_revision,
    table,
    timed,
)
from memmesh._processes import stop_process
from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.errors import MemmeshError
from memmesh.local.items import KINDS
from memmesh.local.store import Store
from memmesh.net.client import Client
from memmesh.net.connect import coordinator_client
from memmesh.net.search import SearchRequest
from memmesh.net.server import free_port, serve
from memmesh.net.settings import ServeSettings
from memmesh.net.signing import Caller, RequestVerifier, peer_audience, sign_request
from memmesh.net.tls import ensure_certificate
from memmesh.net.wire import encode
from memmesh.peer.serve import peer_daemon
from memmesh.peer.service import PRESENCE_TTL, Peer
from memmesh.policy import Policy, decide, load_policy, parse_policy, policy_template
from memmesh.registry import (
    Identity,
    Registry,
    create_identity,
    load_identity,
    open_envelope,
    publish,
)
from memmesh.team.rank import QueryTerms, team_score
from memmesh.team.recall import Calls, TeamAnswer, list_peers, member_clients, recall_team
from memmesh.team.sync import sync

SEED = 20241112
TEAM = "acme"
TOKEN_ENV = "MEM_TEAM_TOKEN"
K_EQUIVALENCE = 10
# recall-team asks every source for k * this many hits (memmesh.team.recall._POOL).
POOL_FACTOR = int(getattr(team_recall_module, "_POOL", 3))
LATENCY_GOAL_P95_MS = 150.0
OVERLAP_GOAL = 0.95
START_TIMEOUT = 60.0
PRESENCE_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
WARMUP_QUERIES = 20
DIAGNOSIS_K = 100


# -- synthetic developer memories ------------------------------------------------------------

PROJECTS = (
    "billing", "checkout", "data-platform", "infra", "mobile", "payments", "platform-api",
    "search", "growth", "ledger",
)  # fmt: skip
PACKAGES = (
    "node-gyp", "psycopg2", "numpy", "pydantic", "sqlalchemy", "react-router", "webpack",
    "openssl", "grpcio", "protobuf", "redis-py", "celery", "uvicorn", "fastapi", "lodash",
    "axios", "pandas", "boto3", "requests", "pytest-asyncio", "eslint", "typescript", "prisma",
    "tokio", "serde", "kafka-python", "alembic", "gunicorn", "jest", "vite", "helm", "libvips",
)  # fmt: skip
SYMBOLIC_ERRORS = (
    "ECONNRESET", "ETIMEDOUT", "ENOSPC", "EADDRINUSE", "OOMKilled", "SIGSEGV", "HTTP 502",
    "HTTP 429", "HTTP 503", "SQLSTATE 40001", "exit code 137", "ORA-00060",
)  # fmt: skip
SYSDEPS = ("python3-dev", "libffi-dev", "build-essential", "libssl-dev", "pkg-config")
DECISIONS = (
    "use Postgres advisory locks instead of Redis locks", "store money as integer cents",
    "move {svc} to async workers", "adopt trunk-based development", "drop support for Python 3.8",
    "put all credentials in Vault", "use UUIDv7 for primary keys",
    "keep feature flags for at most 30 days", "run migrations in a separate deploy step",
    "vendor the protobuf definitions", "use OpenTelemetry for tracing",
    "switch from REST polling to webhooks", "cap API pagination at 500 rows",
    "replace {pkg} with a thin in-house wrapper",
)  # fmt: skip
REASONS = (
    "it removes a network hop", "the team already knows it", "it halves p95 latency",
    "it avoids float rounding errors", "the old approach caused duplicate charges",
    "the security review asked for it", "it simplifies rollbacks", "it cut CI time by {n} minutes",
)  # fmt: skip
PEOPLE = ("alice", "bruno", "chen", "dmitri", "emma", "farah", "goran", "hiro", "ines", "jamal")
TOPIC_TAGS = ("ci", "deploy", "db", "perf", "oncall", "flaky", "build", "infra")

TEMPLATES: dict[str, tuple[str, ...]] = {
    "gotcha": (
        "{pkg} {ver} fails on {env} with {code} unless {fix}.",
        "Watch out: {svc} silently drops messages when {cause}; look for {code} in the logs.",
        "On {env}, `{cmd}` hangs if {pkg} is older than {ver}.",
        "If {svc} shows {code} right after a deploy, it is usually {cause}.",
    ),
    "command": (
        "To {task} in {svc}, run `{cmd}`.",
        "`{cmd}` is the quickest way to {task} on {env}.",
        "Before you {task} for {svc}, run `{cmd}` or the job fails with {code}.",
    ),
    "decision": (
        "We decided to {decision} for {svc} because {reason}.",
        "Decision {date}: {decision}; {reason}.",
        "For {svc} we chose to {decision}, since {reason}.",
    ),
    "incident": (
        "{svc} returned {code} in {env} on {date}; root cause was {cause}, fixed by {fix}.",
        "Outage on {date}: {svc} was down {n} minutes because of {cause}.",
        "Postmortem {date}: {svc} degraded in {env} due to {cause}; follow-up is {fix}.",
    ),
    "convention": (
        "In {svc}, {convention}.",
        "Team convention for {svc2}: {convention}.",
        "Reviewers of {svc} insist that {convention}.",
    ),
    "preference": (
        "{person} prefers {pref} when reviewing {svc} changes.",
        "{person} asked for {pref} in {svc2}.",
    ),
    "fact": (
        "{svc} talks to {svc2} over {proto} on port {port}; the timeout is {n}s.",
        "{svc} depends on {pkg} {ver} and is owned by {person}'s team.",
        "The {svc} dashboard alerts above {n}% errors; {code} means the upstream {svc2} is down.",
    ),
}
# Questions a developer asks about a memory of each kind (slots taken from that memory).
QUESTIONS: dict[str, tuple[str, ...]] = {
    "gotcha": (
        "why does {pkg} fail on {env}", "{pkg} {code}", "{code} on {env}",
        "{svc} drops messages", "what breaks {svc} after a deploy",
    ),
    "command": ("how do I {task} in {svc}", "command to {task}", "how to {task} on {env}"),
    "decision": (
        "why did we {decision}", "what did we decide for {svc}", "decision about {decision}",
    ),
    "incident": (
        "{svc} outage root cause", "{svc} {code} in {env}", "what caused the {svc} outage",
        "postmortem for {svc}",
    ),
    "convention": ("conventions in {svc}", "is there a rule that {convention}"),
    "preference": ("what does {person} prefer in reviews", "review preferences for {svc}"),
    "fact": (
        "what port does {svc} use", "who owns {svc}", "{svc} timeout talking to {svc2}",
        "which version of {pkg} does {svc} need", "what does {code} mean on the {svc} dashboard",
    ),
}  # fmt: skip


class Memory(NamedTuple):
    """One generated memory, and the slots it was made of (to ask about it)."""

    text: str
    kind: str
    project: str
    tags: tuple[str, ...]
    slots: dict[str, str]


class Query(NamedTuple):
    """One question, asked from a project (which scopes it to that project plus global)."""

    text: str
    project: str


class Corpus:
    """Seeded generator of developer memories and of the questions asked about them."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.codes = [f"E{code}" for code in self.rng.sample(range(1000, 10000), 400)]
        # A few busy projects and a long tail, as in real use.
        self.project_weights = [1.0 / (rank + 1) ** 0.8 for rank in range(len(PROJECTS))]

    def project(self) -> str:
        return self.rng.choices(PROJECTS, weights=self.project_weights)[0]

    def slots(self) -> dict[str, str]:
        r = self.rng
        svc, svc2 = r.sample(SERVICES, 2)
        slots = {
            "svc": svc, "svc2": svc2, "pkg": r.choice(PACKAGES),
            "ver": f"{r.randint(0, 9)}.{r.randint(0, 30)}.{r.randint(0, 20)}",
            "table": r.choice(TABLES), "col": r.choice(COLUMNS),
            "code": r.choice(self.codes) if r.random() < 0.75 else r.choice(SYMBOLIC_ERRORS),
            "env": r.choice(ENVS), "n": str(r.randint(2, 90)), "task": r.choice(TASKS),
            "sysdep": r.choice(SYSDEPS), "envvar": r.choice(ENVVARS),
            "reason": r.choice(REASONS), "convention": r.choice(CONVENTIONS),
            "person": r.choice(PEOPLE).capitalize(), "pref": r.choice(PREFERENCES),
            "proto": r.choice(PROTOCOLS), "port": str(r.randint(1024, 9999)),
            "date": f"2024-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}",
        }  # fmt: skip
        # Slots whose own text has slots are filled from the ones above.
        slots["reason"] = slots["reason"].format(**slots)
        slots["cmd"] = r.choice(COMMANDS).format(**slots)
        slots["cause"] = r.choice(CAUSES).format(**slots)
        slots["fix"] = r.choice(FIXES).format(**slots)
        slots["decision"] = r.choice(DECISIONS).format(**slots)
        return slots

    def memory(self) -> Memory:
        r = self.rng
        kind = r.choice(tuple(TEMPLATES))
        slots = self.slots()
        text = r.choice(TEMPLATES[kind]).format(**slots)
        project = "global" if r.random() < 0.2 else self.project()
        pool = (slots["svc"], slots["pkg"], *TOPIC_TAGS)
        tags = tuple(r.sample(pool, r.randint(0, 3)))
        return Memory(text=text, kind=kind, project=project, tags=tags, slots=slots)

    def memories(self, count: int) -> list[Memory]:
        """``count`` memories with distinct texts."""
        out: dict[str, Memory] = {}
        for _ in range(count * 20):
            if len(out) == count:
                break
            memory = self.memory()
            out.setdefault(memory.text.lower(), memory)
        return list(out.values())

    def queries(self, count: int, about: Sequence[Memory]) -> list[Query]:
        """Two in three ask about one of ``about`` (from its project), the rest about anything."""
        out = []
        for _ in range(count):
            if about and self.rng.random() < 2 / 3:
                memory = self.rng.choice(about)
                slots, kind = memory.slots, memory.kind
                project = memory.project if memory.project != "global" else self.project()
            else:
                slots, kind, project = (
                    self.slots(),
                    self.rng.choice(tuple(QUESTIONS)),
                    self.project(),
                )
            out.append(Query(self.rng.choice(QUESTIONS[kind]).format(**slots), project))
        return out


# -- processes and members -------------------------------------------------------------------


class Processes:
    """Server processes started here; every one is stopped (terminate, then kill) and waited."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env = env
        self.logs = logs
        self.running: dict[str, tuple[subprocess.Popen[bytes], IO[bytes], str]] = {}

    def start(
        self, name: str, args: list[str], port: int, *, bench: bool = False, tls: bool = False
    ) -> str:
        """Start ``python -m memmesh ARGS`` (with ``bench``: this script's ``_serve ARGS``)
        without waiting for it; returns its URL (https with ``tls``)."""
        self.logs.mkdir(parents=True, exist_ok=True)
        output = (self.logs / f"{name}.log").open("wb")
        command = [__file__, "_serve"] if bench else ["-m", "memmesh"]
        try:
            process = subprocess.Popen(
                [sys.executable, *command, *args],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        except BaseException:
            output.close()
            raise
        url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
        self.running[name] = (process, output, url)
        return url

    def wait_ready(self, names: Sequence[str], timeout: float = START_TIMEOUT) -> None:
        """Until every named server answers /healthz; raises if one exits or time runs out."""
        waiting = list(names)
        deadline = time.monotonic() + timeout
        # Only whether it answers: the certificates here are self-signed (and pinned elsewhere).
        with httpx.Client(timeout=1.0, verify=False) as http:  # noqa: S501
            while waiting:
                name = waiting[0]
                process, _, url = self.running[name]
                if process.poll() is not None:
                    raise RuntimeError(
                        f"{name} exited with {process.returncode}:\n{self.tail(name)}"
                    )
                try:
                    if http.get(f"{url}/healthz").status_code == 200:
                        waiting.pop(0)
                        continue
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"{name} did not start in {timeout:.0f} s:\n{self.tail(name)}"
                    )
                time.sleep(0.05)

    def tail(self, name: str, lines: int = 15) -> str:
        path = self.logs / f"{name}.log"
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, name: str) -> None:
        entry = self.running.pop(name, None)
        if entry is None:
            return
        process, output, _ = entry
        try:
            stop_process(process, grace=STOP_TIMEOUT)
        finally:
            output.close()

    def stop_all(self) -> None:
        """Stop every process still running, even when stopping one of them fails."""
        errors: list[BaseException] = []
        for name in list(self.running):
            try:
                self.stop(name)
            except BaseException as exc:  # keep stopping the others
                errors.append(exc)
        if errors:
            raise errors[0]


@dataclass
class Member:
    """One member's home, key and peer daemon, and what went into its store."""

    name: str
    home: Path
    key_id: str
    key: str = ""
    coordinator: str | None = None
    url: str = ""
    remembered: int = 0
    created: int = 0
    folded: int = 0
    published: int = 0
    private: int = 0
    refused: int = 0
    synced: int = 0


def team_yaml(
    name: str,
    coordinator: str | None,
    peers: Sequence[str] = (),
    members: Sequence[Member] = (),
    coordinator_pin: str | None = None,
) -> str:
    """A team.yaml from the template that shares every kind, with optional static peers, a
    roster of ``members`` and the coordinator's TLS pin."""
    text = policy_template(name=name, team=TEAM, coordinator=coordinator)
    kinds = "  kinds: [" + ", ".join(KINDS) + "]"
    roster = json.dumps([{"name": m.name, "key": m.key} for m in members])
    replaced = (
        text.replace("  kinds: []", kinds)
        .replace("peers: []", f"peers: {json.dumps(list(peers))}")
        .replace("members: []", f"members: {roster}")
    )
    if kinds not in replaced or (peers and json.dumps(list(peers)) not in replaced):
        raise RuntimeError("policy_template changed: cannot set share.kinds / peers")
    if members and roster not in replaced:
        raise RuntimeError("policy_template changed: cannot set members")
    if coordinator_pin:
        replaced += f"coordinator_pin: {json.dumps(coordinator_pin)}\n"
    return replaced


def new_member(
    root: Path, name: str, coordinator: str | None, coordinator_pin: str | None = None
) -> Member:
    """A member home with an identity and a team.yaml, like `mem team init`."""
    home = root / name
    identity = create_identity(home)
    text = team_yaml(name, coordinator, coordinator_pin=coordinator_pin)
    (home / "team.yaml").write_text(text, encoding="utf-8")
    load_policy(home)  # fail now if the policy is not valid
    return Member(
        name=name, home=home, key_id=identity.key_id, key=identity.public_key_text,
        coordinator=coordinator,
    )  # fmt: skip


def trust_each_other(members: Sequence[Member], coordinator_pin: str | None = None) -> None:
    """Every member's team.yaml lists all of ``members`` under ``members:``: their peers ask
    and answer one another (a peer answers nobody outside its roster)."""
    for member in members:
        text = team_yaml(member.name, member.coordinator, (), members, coordinator_pin)
        (member.home / "team.yaml").write_text(text, encoding="utf-8")
        load_policy(member.home)


def fill(
    member: Member,
    memories: Sequence[Memory],
    *,
    share: float,
    rng: random.Random,
    push: bool,
) -> list[str]:
    """Remember, publish a ``share`` of what was created, and sync; returns the published texts."""
    policy = load_policy(member.home)
    texts: list[str] = []
    with Store(member.home, author=member.name) as store:
        to_publish: list[str] = []
        for memory in memories:
            item, how = store.remember(
                memory.text, kind=memory.kind, project=memory.project, tags=memory.tags
            )
            member.remembered += 1
            if how == "reinforced":
                member.folded += 1
                continue
            member.created += 1
            if rng.random() >= share:
                member.private += 1
            elif decide(item, policy).allowed:
                to_publish.append(item.id)
                texts.append(item.text)
            else:
                member.refused += 1
        publish_and_sync(member, store, policy, to_publish, push=push)
    return texts


def publish_and_sync(
    member: Member, store: Store, policy: Policy, item_ids: Sequence[str], *, push: bool
) -> None:
    """Publish ``item_ids`` from the member's store and, with ``push``, sync them to the
    coordinator (raising if it rejects any)."""
    identity = load_identity(member.home)
    registry = Registry(store, identity, policy.team)
    publish(registry, policy, list(item_ids))
    member.published = len(item_ids)
    if push:
        with coordinator_client(policy, identity, timeout=30.0) as client:
            report = sync(registry, policy, client)
        if report.rejected:
            raise RuntimeError(f"{member.name}: the coordinator rejected {report.rejected[:3]}")
        member.synced = report.accepted + report.already_known


def serve_peer(processes: Processes, member: Member) -> None:
    """Start the member's peer daemon (heartbeat every second); not waiting for it."""
    port = free_port()
    args = ["--home", str(member.home), "team", "serve", "--port", str(port), "--heartbeat", "1"]
    member.url = processes.start(member.name, args, port)


def serve_coordinator(
    processes: Processes, name: str, data: Path, embedder: str | None = None
) -> str:
    """Start a coordinator for the team (searching with ``embedder``, else its default); not
    waiting for it."""
    port = free_port()
    args = ["coordinator", "serve", "--data", str(data), "--port", str(port), "--team", TEAM]
    if embedder is not None:
        args += ["--embedder", embedder]
    return processes.start(name, args, port)


def wait_for_presence(
    policy: Policy, identity: Identity, wanted: set[str], timeout: float
) -> float:
    """Until the coordinator lists exactly the ``wanted`` key ids; returns the seconds waited."""
    started = time.monotonic()
    seen: set[str] = set()
    while time.monotonic() - started < timeout:
        peers, _ = list_peers(policy, identity=identity)
        seen = {peer.key_id for peer in peers}
        if seen == wanted:
            return time.monotonic() - started
        time.sleep(0.25)
    raise RuntimeError(
        f"presence: wanted {len(wanted)} peers, the coordinator lists {len(seen)} "
        f"after {timeout:.0f} s"
    )


@contextlib.contextmanager
def environment(token: str) -> Iterator[dict[str, str]]:
    """The team token in this process's environment; yields the environment for children."""
    saved = {name: os.environ.get(name) for name in (TOKEN_ENV, "MEM_AUTHOR", "MEM_EMBEDDER")}
    os.environ[TOKEN_ENV] = token
    # Every store here uses the default embedder; the author comes from each team.yaml.
    os.environ.pop("MEM_AUTHOR", None)
    os.environ.pop("MEM_EMBEDDER", None)
    child = {k: v for k, v in os.environ.items() if k not in {"MEM_HOME"}}
    try:
        yield child
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# -- latency ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LatencyRow:
    """recall-team wall milliseconds over Q queries, and what the sources did."""

    what: str
    k: int
    n: int
    p50: float
    p95: float
    p99: float
    mean: float
    max: float
    asked: float  # sources asked per query (mean)
    answered: float  # sources that answered per query (mean)
    hits: float
    abstained: int
    errors: int  # calls that raised (no source answered)
    source_p50: float  # median latency of one answering source, as recall-team measured it
    slowest_p50: float  # median over queries of the slowest answering source


def run_team(
    store: Store,
    policy: Policy,
    identity: Identity,
    queries: Sequence[Query],
    k: int,
    calls: Calls | None = None,
) -> tuple[list[float], list[TeamAnswer | None]]:
    """recall_team for each query: wall ms, and the answer (None when it raised).

    ``calls`` None is what one `mem team recall-team` does: clients (and connections) made for
    the call and closed after it; otherwise every call reuses the given clients.
    """
    times: list[float] = []
    answers: list[TeamAnswer | None] = []
    for query in queries:
        started = time.perf_counter()
        try:
            answer: TeamAnswer | None = recall_team(
                store,
                policy,
                query.text,
                k=k,
                project=query.project,
                identity=identity,
                calls=calls,
            )
        except MemmeshError:
            answer = None
        times.append(ms_since(started))
        answers.append(answer)
    return times, answers


def latency_row(
    what: str, k: int, times: Sequence[float], answers: Sequence[TeamAnswer | None]
) -> LatencyRow:
    values = np.asarray(times, dtype=np.float64)
    ok = [a for a in answers if a is not None]
    per_source = [s.latency_ms for a in ok for s in a.sources if s.status == "ok"]
    slowest = [max(s.latency_ms for s in a.sources if s.status == "ok") for a in ok if a.answered]
    return LatencyRow(
        what=what,
        k=k,
        n=len(values),
        p50=float(np.percentile(values, 50)),
        p95=float(np.percentile(values, 95)),
        p99=float(np.percentile(values, 99)),
        mean=float(values.mean()),
        max=float(values.max()),
        asked=mean([len(a.sources) for a in ok]),
        answered=mean([a.answered for a in ok]),
        hits=mean([len(a.hits) for a in ok]),
        abstained=sum(a.abstained for a in ok),
        errors=len(answers) - len(ok),
        source_p50=float(np.median(per_source)) if per_source else float("nan"),
        slowest_p50=float(np.median(slowest)) if slowest else float("nan"),
    )


@dataclass
class LatencyResult:
    """Part 1: the team, its setup, and the latency rows."""

    peers: int
    items_per_peer: int
    queries: int
    members: list[dict[str, Any]] = field(default_factory=list)
    setup_seconds: float = 0.0
    presence_seconds: float = 0.0
    expiry_seconds: float | None = None
    rows: list[LatencyRow] = field(default_factory=list)
    profile: str | None = None
    profile_shared: str | None = None
    parts: list[LatencyRow] = field(default_factory=list)


def run_latency(root: Path, env: dict[str, str], args: argparse.Namespace) -> LatencyResult:
    """Part 1 (see the module docstring)."""
    result = LatencyResult(
        peers=args.peers, items_per_peer=args.items_per_peer, queries=args.queries
    )
    processes = Processes(env, root / "logs")
    try:
        started = time.perf_counter()
        coordinator = serve_coordinator(processes, "coordinator", root / "coordinator-data")
        processes.wait_ready(["coordinator"])
        corpus = Corpus(SEED)
        rng = random.Random(SEED + 1)
        members: list[Member] = []
        about: list[Memory] = []
        for index in range(args.peers):
            member = new_member(root, f"member{index + 1:02d}", coordinator)
            memories = corpus.memories(args.items_per_peer)
            published = set(fill(member, memories, share=2 / 3, rng=rng, push=True))
            about += [m for m in memories if m.text in published]
            members.append(member)
            log(
                f"[latency] {member.name}: {member.created} items, {member.published} published "
                f"and synced ({member.synced}), {member.private} private, {member.folded} folded"
            )
        asker = new_member(root, "asker", coordinator)
        trust_each_other([*members, asker])
        for member in members:
            serve_peer(processes, member)
        processes.wait_ready([m.name for m in members])
        result.setup_seconds = time.perf_counter() - started
        result.members = [asdict(m) | {"home": m.home.name} for m in members]
        policy = load_policy(asker.home)
        identity = load_identity(asker.home)
        result.presence_seconds = wait_for_presence(
            policy, identity, {m.key_id for m in members}, PRESENCE_TIMEOUT
        )
        log(f"[latency] the coordinator lists all {len(members)} peers")

        queries = Corpus(SEED + 2).queries(args.queries, about)
        warmup = Corpus(SEED + 3).queries(WARMUP_QUERIES, about)
        label = f"coordinator + {len(members)} peers"
        with Store(asker.home, author=asker.name) as store:
            log(f"[latency] warm-up ({len(warmup)} queries), then {len(queries)} queries, k=5")
            run_team(store, policy, identity, warmup, 5)
            result.rows.append(
                latency_row(label, 5, *run_team(store, policy, identity, queries, 5))
            )
            log(f"[latency] {len(queries)} queries, k=10")
            result.rows.append(
                latency_row(label, 10, *run_team(store, policy, identity, queries, 10))
            )
            log(f"[latency] {len(queries)} queries, k=5, one set of clients kept for all")
            kept = Calls(member_clients(policy, identity), timeout=2.0)
            try:
                run_team(store, policy, identity, warmup[:5], 5, kept)
                result.rows.append(
                    latency_row(
                        f"{label}; connections kept across calls",
                        5,
                        *run_team(store, policy, identity, queries, 5, kept),
                    )
                )
                if args.profile or result.rows[0].p95 > LATENCY_GOAL_P95_MS:
                    count = args.profile_queries
                    log(f"[latency] profiling {count} recall-team calls (all threads)")
                    sample = queries[:count]
                    result.profile = profile_team(store, policy, identity, sample)
                    log("[latency] profiling the same calls, connections kept")
                    result.profile_shared = profile_team(
                        store, policy, identity, sample, kept, top=16
                    )
                    result.parts = time_parts(store, policy, identity, members, queries)
            finally:
                kept.close()

            log("[latency] stopping the peers")
            stopped = time.monotonic()
            for member in members:
                processes.stop(member.name)
            # Only while every stopped peer is still listed (their presence lasts up to
            # PRESENCE_TTL after the last heartbeat), so the row is not a mix of two cases.
            times: list[float] = []
            answers: list[TeamAnswer | None] = []
            for query in queries:
                took, answered = run_team(store, policy, identity, [query], 5)
                answer = answered[0]
                if answer is None or len(answer.sources) < len(members) + 1:
                    break
                times += took
                answers.append(answer)
            if times:
                label = "peers stopped, all still listed in presence"
                result.rows.append(latency_row(label, 5, times, answers))
            if not args.no_expiry_wait:
                log(f"[latency] waiting up to {PRESENCE_TTL:.0f} s for presence to expire")
                wait_for_presence(policy, identity, set(), PRESENCE_TTL + PRESENCE_TIMEOUT)
                result.expiry_seconds = time.monotonic() - stopped
                run_team(store, policy, identity, warmup[:5], 5)
                result.rows.append(
                    latency_row(
                        "coordinator alone (presence expired)",
                        5,
                        *run_team(store, policy, identity, queries, 5),
                    )
                )
    finally:
        processes.stop_all()
    return result


# -- profile ---------------------------------------------------------------------------------


def profile_team(
    store: Store,
    policy: Policy,
    identity: Identity,
    queries: Sequence[Query],
    calls: Calls | None = None,
    top: int = 22,
) -> str:
    """cProfile of recall-team calls in every thread: the caller's and the fan-out workers'.

    Each worker thread gets its own profiler (installed by ``threading.setprofile`` when the
    thread starts); the stats are summed, so times are thread-seconds, not wall seconds.
    """
    profilers: list[cProfile.Profile] = []

    def install(frame: FrameType, event: str, arg: object) -> None:
        profiler = cProfile.Profile()
        profilers.append(profiler)
        profiler.enable()  # replaces this hook in this thread

    main = cProfile.Profile()
    threading.setprofile(install)
    started = time.perf_counter()
    try:
        main.enable()
        run_team(store, policy, identity, queries, 5, calls)
        main.disable()
    finally:
        threading.setprofile(None)
    wall = time.perf_counter() - started
    time.sleep(0.5)  # let the abandoned pools' threads finish
    buffer = io.StringIO()
    stats = pstats.Stats(main, stream=buffer)
    for profiler in profilers:
        stats.add(profiler)
    buffer.write(
        f"{len(queries)} calls in {wall:.2f} s wall ({wall / len(queries) * 1000:.0f} ms each); "
        f"{len(profilers)} worker threads profiled; times below are summed over threads\n"
    )
    stats.sort_stats("tottime").print_stats(top)
    if calls is None:
        stats.sort_stats("cumulative").print_stats(
            "team/recall.py|net/client.py|_client.py|ssl.py|envelopes.py|rank.py|embed", 18
        )
    return buffer.getvalue()


def time_parts(
    store: Store,
    policy: Policy,
    identity: Identity,
    members: Sequence[Member],
    queries: Sequence[Query],
) -> list[LatencyRow]:
    """The parts of one recall-team call, each timed alone in this process."""
    sample = list(queries[:30])
    rows: list[LatencyRow] = []

    def row(what: str, samples: Sequence[float]) -> None:
        values = np.asarray(samples, dtype=np.float64)
        rows.append(
            LatencyRow(
                what=what, k=5, n=len(values), p50=float(np.percentile(values, 50)),
                p95=float(np.percentile(values, 95)), p99=float(np.percentile(values, 99)),
                mean=float(values.mean()), max=float(values.max()), asked=float("nan"),
                answered=float("nan"), hits=float("nan"), abstained=0, errors=0,
                source_p50=float("nan"), slowest_p50=float("nan"),
            )
        )  # fmt: skip

    row(
        "embed_query (asker)",
        [timed(partial(store.embedder.embed_query, q.text)) for q in sample],
    )
    url = members[0].url
    audience = peer_audience(members[0].key_id)
    row(
        "memmesh Client() construction (one per source and call)",
        [
            timed(lambda: Client(url, token=None, identity=identity, audience=audience).close())
            for _ in range(10)
        ],
    )
    body = encode(search_request(store, sample[0], 15))
    row(
        "sign_request (one request)",
        [
            timed(lambda: sign_request(identity, "POST", "/v1/recall", body, audience))
            for _ in range(50)
        ],
    )
    with httpx.Client(timeout=2.0) as http:
        row(
            "GET /healthz of one peer, reused connection",
            [timed(lambda: http.get(f"{url}/healthz")) for _ in range(30)],
        )
    request = search_request(store, sample[0], 15)
    member = members[0]
    asker = Caller(key=identity.public_key_text, key_id=identity.key_id)
    with Store(member.home, author=member.name) as peer_store:
        peer = Peer(member.home, peer_store, load_identity(member.home), url=member.url)
        peer.recall(asker, request)
        row(
            "Peer.recall handler in-process (1 peer, k=15; disclosures logged)",
            [timed(partial(peer.recall, asker, search_request(store, q, 15))) for q in sample],
        )
        envelopes = [h.envelope for h in peer.recall(asker, request).hits]
    if envelopes:
        row(
            f"open_envelope (verify) x{len(envelopes)} hits",
            [timed(lambda: [open_envelope(e) for e in envelopes]) for _ in range(20)],
        )
    answer = recall_team(
        store, policy, sample[0].text, k=5, project=sample[0].project, identity=identity
    )
    row(
        "list_peers (presence list + verify)",
        [timed(lambda: list_peers(policy, identity=identity)) for _ in range(5)],
    )
    terms, embedder = QueryTerms(sample[0].text), store.embedder
    texts = [(h.text, h.tags) for h in answer.hits] or [("x", ())]
    row(
        f"team_score x{len(texts)} hits",
        [
            timed(lambda: [team_score(terms, t, g, 0.5, embedder) for t, g in texts])
            for _ in range(20)
        ],
    )
    return rows


def search_request(store: Store, query: Query, k: int) -> SearchRequest:
    """The body recall-team sends to every source."""
    return SearchRequest(
        query=query.text,
        k=k,
        project=query.project,
        authors=[],
        vector=store.embedder.embed_query(query.text).tolist(),
        embedder=store.embedder.fingerprint,
    )


# -- federated equivalence -------------------------------------------------------------------


@dataclass(frozen=True)
class Agreement:
    """How one federated set-up's top-k matches the single store's, by item text."""

    variant: str
    queries: int
    compared: int  # queries where the single store did not abstain
    single_abstained: int
    federated_abstained: int  # among the compared
    mean_overlap: float
    min_overlap: float
    same_set: int
    same_order: int
    same_top1: int
    # Among queries whose top-k sets differ: which list is better by the common team score
    # (the sum of its scores; an item's team score is the same whichever source served it).
    differ_fed_higher: int
    differ_single_higher: int


@dataclass
class EquivalenceResult:
    """Part 2: the corpus, the agreement per variant, latency per variant and examples."""

    items: int
    split_peers: int
    queries: int
    solo: dict[str, Any] = field(default_factory=dict)
    split: list[dict[str, Any]] = field(default_factory=list)
    agreements: list[Agreement] = field(default_factory=list)
    latencies: list[LatencyRow] = field(default_factory=list)
    examples: list[dict[str, Any]] = field(default_factory=list)


def overlap(federated: Sequence[str], single: Sequence[str]) -> float:
    return len(set(federated) & set(single)) / len(set(single))


def agreement(
    variant: str, fed: Sequence[TeamAnswer | None], single: Sequence[TeamAnswer | None]
) -> Agreement:
    scores: list[float] = []
    same_set = same_order = same_top1 = fed_abstained = single_abstained = 0
    fed_higher = single_higher = 0
    for f, s in zip(fed, single, strict=True):
        if s is None or s.abstained:
            single_abstained += 1
            continue
        f_texts = [h.text for h in f.hits] if f is not None else []
        s_texts = [h.text for h in s.hits]
        fed_abstained += not f_texts
        scores.append(overlap(f_texts, s_texts))
        same_set += set(f_texts) == set(s_texts)
        same_order += f_texts == s_texts
        same_top1 += bool(f_texts) and f_texts[0] == s_texts[0]
        if set(f_texts) != set(s_texts):
            f_sum = sum(h.score for h in f.hits) if f is not None else 0.0
            s_sum = sum(h.score for h in s.hits)
            fed_higher += f_sum > s_sum
            single_higher += s_sum > f_sum
    return Agreement(
        variant=variant,
        queries=len(single),
        compared=len(scores),
        single_abstained=single_abstained,
        federated_abstained=fed_abstained,
        mean_overlap=mean(scores),
        min_overlap=min(scores, default=float("nan")),
        same_set=same_set,
        same_order=same_order,
        same_top1=same_top1,
        differ_fed_higher=fed_higher,
        differ_single_higher=single_higher,
    )


def run_equivalence(root: Path, env: dict[str, str], args: argparse.Namespace) -> EquivalenceResult:
    """Part 2 (see the module docstring)."""
    result = EquivalenceResult(
        items=args.equiv_items, split_peers=args.equiv_peers, queries=args.equiv_queries
    )
    processes = Processes(env, root / "logs")
    peer_stores: list[Store] = []
    try:
        coordinator = serve_coordinator(processes, "coordinator-split", root / "split-data")
        lone = serve_coordinator(processes, "coordinator-solo", root / "solo-data")
        processes.wait_ready(["coordinator-split", "coordinator-solo"])
        memories = Corpus(SEED + 10).memories(args.equiv_items)
        solo = new_member(root, "solo", lone)
        log(f"[equivalence] solo remembers {len(memories)} items and publishes them all")
        fill(solo, memories, share=1.0, rng=random.Random(0), push=False)
        # The split gets exactly what solo holds: its text, kind, project and (merged) tags.
        with Store(solo.home, author=solo.name) as store:
            registry = Registry(store, load_identity(solo.home), TEAM)
            live = registry.live()
        held = sorted(live.values(), key=lambda entry: entry.publication.seq)
        copies = [
            Memory(e.publication.text, e.publication.kind, e.publication.project,
                   tuple(e.publication.tags), {})
            for e in held
        ]  # fmt: skip
        result.solo = asdict(solo) | {"home": solo.home.name}
        split: list[Member] = []
        holder: dict[str, Member] = {}
        for index in range(args.equiv_peers):
            member = new_member(root, f"split{index + 1}", coordinator)
            share = copies[index :: args.equiv_peers]
            texts = fill(member, share, share=1.0, rng=random.Random(0), push=True)
            holder |= dict.fromkeys(texts, member)
            split.append(member)
            log(f"[equivalence] {member.name}: {member.published} published and synced")
            if member.published != len(share):
                log(f"  note: {member.name} holds {member.published} of the {len(share)} dealt")
        result.split = [asdict(m) | {"home": m.home.name} for m in split]
        asker = new_member(root, "asker2", coordinator)
        everyone = [*split, solo, asker]
        trust_each_other(everyone)
        for member in [*split, solo]:
            serve_peer(processes, member)
        processes.wait_ready([m.name for m in [*split, solo]])
        identity = load_identity(asker.home)
        wait_for_presence(
            load_policy(asker.home), identity, {m.key_id for m in split}, PRESENCE_TIMEOUT
        )
        split_urls = [m.url for m in split]
        policies = {
            "peers only": parse_policy(team_yaml(asker.name, None, split_urls, everyone)),
            "peers + coordinator": parse_policy(team_yaml(asker.name, coordinator, (), everyone)),
            "single store": parse_policy(team_yaml(asker.name, None, [solo.url], everyone)),
        }
        about = [m for m in memories if m.text in holder]
        queries = Corpus(SEED + 11).queries(args.equiv_queries, about)
        warmup = Corpus(SEED + 12).queries(10, about)
        answers: dict[str, list[TeamAnswer | None]] = {}
        with Store(asker.home, author=asker.name) as store:
            for variant, policy in policies.items():
                log(f"[equivalence] {variant}: {len(queries)} queries, k={K_EQUIVALENCE}")
                run_team(store, policy, identity, warmup, K_EQUIVALENCE)
                times, answers[variant] = run_team(store, policy, identity, queries, K_EQUIVALENCE)
                result.latencies.append(
                    latency_row(variant, K_EQUIVALENCE, times, answers[variant])
                )
            single = answers["single store"]
            for variant in ("peers only", "peers + coordinator"):
                result.agreements.append(agreement(variant, answers[variant], single))
            # Why answers differ: each differing item in the holding store's own ranking.
            stores = {m.name: Store(m.home, author=m.name) for m in [*split, solo]}
            peer_stores += stores.values()
            peers = {
                name: Peer(s.home, s, load_identity(s.home), url="http://127.0.0.1:1")
                for name, s in stores.items()
            }
            result.examples = differences(
                store, queries, answers, holder, peers, solo.name, args.examples
            )
    finally:
        for peer_store in peer_stores:
            peer_store.close()
        processes.stop_all()
    return result


def differences(
    asker: Store,
    queries: Sequence[Query],
    answers: dict[str, list[TeamAnswer | None]],
    holder: dict[str, Member],
    peers: dict[str, Peer],
    solo: str,
    limit: int,
) -> list[dict[str, Any]]:
    """The queries (lowest overlap first) whose federated top-k differs from the single store's."""
    found: list[tuple[float, int, str]] = []
    for variant in ("peers only", "peers + coordinator"):
        for index, (fed, single) in enumerate(
            zip(answers[variant], answers["single store"], strict=True)
        ):
            if single is None or single.abstained:
                continue
            f_texts = [h.text for h in fed.hits] if fed is not None else []
            value = overlap(f_texts, [h.text for h in single.hits])
            if value < 1.0:
                found.append((value, index, variant))
    found.sort()
    differing: dict[int, list[str]] = {}
    for _, index, variant in found:
        differing.setdefault(index, []).append(variant)
    examples: list[dict[str, Any]] = []
    seen: set[int] = set()
    for value, index, variant in found:
        if index in seen or len(examples) >= limit:
            continue
        seen.add(index)
        query = queries[index]
        fed, single = answers[variant][index], answers["single store"][index]
        assert single is not None
        fed_hits = fed.hits if fed is not None else []
        ranks = LocalRanks(peers, search_request(asker, query, DIAGNOSIS_K))
        f_texts = [h.text for h in fed_hits]
        s_texts = [h.text for h in single.hits]
        missing = [
            {
                "text": h.text,
                "single_rank": rank,
                "score": round(h.score, 4),
                "holder": holder[h.text].name if h.text in holder else "?",
                "holder_rank": ranks.describe(holder[h.text].name, h.text)
                if h.text in holder
                else "?",
            }
            for rank, h in enumerate(single.hits, start=1)
            if h.text not in f_texts
        ]
        extra = [
            {
                "text": h.text,
                "federated_rank": rank,
                "score": round(h.score, 4),
                "holder": holder[h.text].name if h.text in holder else "?",
                "solo_rank": ranks.describe(solo, h.text),
            }
            for rank, h in enumerate(fed_hits, start=1)
            if h.text not in s_texts
        ]
        examples.append(
            {
                "query": query.text,
                "project": query.project,
                "variant": variant,
                "differs_in": sorted(differing[index]),
                "overlap": value,
                "single_top": [round(h.score, 4) for h in single.hits],
                "federated_top": [round(h.score, 4) for h in fed_hits],
                "missing_from_federated": missing,
                "extra_in_federated": extra,
            }
        )
    return examples


_DIAGNOSIS = Caller(key="diagnosis", key_id="diagnosis")


class LocalRanks:
    """Where an item stands in one store's own ranking: what its peer handler answers at k=100."""

    def __init__(self, peers: dict[str, Peer], request: SearchRequest) -> None:
        self.peers = peers
        self.request = request
        self.ranked: dict[str, list[str]] = {}

    def describe(self, store_name: str, text: str) -> str:
        if store_name not in self.ranked:
            # A diagnosis, as if by a member named "diagnosis" (its disclosures are logged too).
            answer = self.peers[store_name].recall(_DIAGNOSIS, self.request)
            self.ranked[store_name] = [open_text(h.envelope) for h in answer.hits]
        order = self.ranked[store_name]
        if text not in order:
            return f"not in its own top {DIAGNOSIS_K}"
        rank = order.index(text) + 1
        pool = K_EQUIVALENCE * POOL_FACTOR
        where = "inside" if rank <= pool else "OUTSIDE"
        return f"#{rank} in its own ranking ({where} the {pool} it sends)"


def open_text(envelope: Any) -> str:
    body = open_envelope(envelope)
    return str(getattr(body, "text", ""))


# -- output ----------------------------------------------------------------------------------


def machine_info() -> dict[str, str]:
    """What the figures were measured on."""
    return {
        "cpu": cpu_model(),
        "nproc": cpu_count(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "httpx": importlib.metadata.version("httpx"),
        "uvicorn": importlib.metadata.version("uvicorn"),
        "sqlite": sqlite3.sqlite_version,
        "memmesh": getattr(memmesh, "__version__", "?"),
        "commit": source_revision(),
        "loadavg": load_average(),
    }


LATENCY_HEADERS = [
    "sources", "k", "n", "p50 ms", "p95 ms", "p99 ms", "mean ms", "max ms", "asked",
    "answered", "hits", "abstained", "errors", "source p50", "slowest p50",
]  # fmt: skip


def latency_cells(row: LatencyRow) -> list[object]:
    return [
        row.what, row.k, row.n, row.p50, row.p95, row.p99, row.mean, row.max, row.asked,
        row.answered, row.hits, row.abstained, row.errors, row.source_p50, row.slowest_p50,
    ]  # fmt: skip


def print_latency(result: LatencyResult) -> None:
    members = result.members
    print(
        f"\n== 1. recall-team latency: 1 coordinator + {result.peers} member peer daemons "
        f"(processes, loopback), asked in-process by member {result.peers + 1}"
    )
    created = sum(m["created"] for m in members)
    published = sum(m["published"] for m in members)
    print(
        f"team: {created:,} items ({published:,} published and synced, "
        f"{sum(m['private'] for m in members):,} private, {sum(m['folded'] for m in members)} "
        f"folded by the novelty gate), {result.items_per_peer} remembered per member; "
        f"set-up {result.setup_seconds:.0f} s; all {result.peers} peers in presence "
        f"{result.presence_seconds:.1f} s after start"
    )
    print(table(LATENCY_HEADERS, [latency_cells(r) for r in result.rows], yes_no=True))
    print(
        "asked/answered: sources per query (coordinator + peers); hits: mean hits returned;\n"
        "source p50: median latency of one answering source as recall-team timed it (HTTP\n"
        "round trip incl. client set-up); slowest p50: median over queries of the slowest one."
    )
    if result.expiry_seconds is not None:
        print(f"presence expired {result.expiry_seconds:.0f} s after the peers were stopped")
    first = result.rows[0]
    verdict = "met" if first.p95 <= LATENCY_GOAL_P95_MS else "MISSED"
    print(
        f"goal p95 <= {LATENCY_GOAL_P95_MS:.0f} ms with the whole team (k={first.k}): "
        f"{first.p95:.1f} ms -> {verdict}"
    )
    if result.parts:
        print("\n== 1b. parts of one recall-team call, each timed alone in this process")
        rows = [[r.what, r.n, r.p50, r.p95, r.mean] for r in result.parts]
        print(table(["part", "n", "p50 ms", "p95 ms", "mean ms"], rows, yes_no=True))
    if result.profile:
        print("\n== 1c. cProfile of full-team recall-team calls (k=5), every thread")
        print(result.profile.rstrip())
    if result.profile_shared:
        print("\n== 1d. cProfile of the same calls, connections kept across calls, every thread")
        print(result.profile_shared.rstrip())


def print_equivalence(result: EquivalenceResult) -> None:
    split_total = sum(m["published"] for m in result.split)
    print(
        f"\n== 2. Federated equivalence: {result.solo['published']:,} items in one store vs the "
        f"same {split_total:,} split over {result.split_peers} peers; {result.queries} queries, "
        f"top-{K_EQUIVALENCE} by item text"
    )
    print(
        f"solo: {result.solo['created']:,} created of {result.items:,} remembered "
        f"({result.solo['folded']} folded by the novelty gate), all published; split: "
        + ", ".join(f"{m['name']} {m['published']}" for m in result.split)
    )
    rows = [
        [a.variant, a.queries, a.compared, a.single_abstained, a.federated_abstained,
         a.mean_overlap, a.min_overlap, a.same_set, a.same_order, a.same_top1,
         a.differ_fed_higher, a.differ_single_higher]
        for a in result.agreements
    ]  # fmt: skip
    print(
        table(
            ["federated", "queries", "compared", "single abstained", "fed abstained",
             "mean overlap", "min overlap", "same set", "same order", "same top-1",
             "differ: fed higher", "differ: single higher"],
            rows,
            yes_no=True,
        )
    )  # fmt: skip
    for a in result.agreements:
        verdict = "met" if a.mean_overlap >= OVERLAP_GOAL else "MISSED"
        print(
            f"goal mean overlap >= {OVERLAP_GOAL} ({a.variant}): {a.mean_overlap:.3f} -> {verdict}"
        )
    print(f"\nlatency of each set-up (k={K_EQUIVALENCE}):")
    print(table(LATENCY_HEADERS, [latency_cells(r) for r in result.latencies], yes_no=True))
    if result.examples:
        print("\n== 2b. queries whose federated top-10 differs (lowest overlap first)")
        print(
            "scores are recall-team's team scores (the same for an item whichever source\n"
            "served it); 'own ranking' is where the holding store's own peer handler ranks the\n"
            f"item (asked with k={DIAGNOSIS_K}); recall-team asks every source for its first "
            f"{K_EQUIVALENCE * POOL_FACTOR} (k*{POOL_FACTOR})."
        )
        for example in result.examples:
            print(
                f'\n"{example["query"]}" (project {example["project"]}): overlap '
                f"{example['overlap']:.2f} in {example['variant']} (differs in: "
                f"{', '.join(example['differs_in'])})"
            )
            print(f"  single scores:    {example['single_top']}")
            print(f"  federated scores: {example['federated_top']}")
            for m in example["missing_from_federated"]:
                print(
                    f"  missing from federated: single #{m['single_rank']} score {m['score']}; "
                    f"held by {m['holder']}, {m['holder_rank']}\n      {m['text']}"
                )
            for e in example["extra_in_federated"]:
                print(
                    f"  only in federated: #{e['federated_rank']} score {e['score']} (from "
                    f"{e['holder']}); in solo: {e['solo_rank']}\n      {e['text']}"
                )


# -- part 3: TLS beside plaintext, every request signed --------------------------------------


def serve_main(argv: Sequence[str]) -> int:
    """``team_recall.py _serve peer HOME PORT [--tls]`` or ``_serve coordinator DATA PORT
    [--tls]``: one daemon of part 3, set up the way the product sets it up (the peer through
    :func:`memmesh.peer.serve.peer_daemon`), serving https with its own certificate when
    asked. The command line has no TLS switch for either daemon yet."""
    parser = argparse.ArgumentParser(prog="team_recall.py _serve")
    parser.add_argument("what", choices=("peer", "coordinator"))
    parser.add_argument("path", type=Path)
    parser.add_argument("port", type=int)
    parser.add_argument("--tls", action="store_true")
    args = parser.parse_args(argv)
    if args.what == "peer":
        home: Path = args.path
        policy = load_policy(home)
        name = policy.identity.name if policy.identity else home.name

        def open_store() -> Store:
            return Store(home, author=name, lexicon=True)

        with peer_daemon(
            home, open_store, host="127.0.0.1", port=args.port, heartbeat=1.0, tls=args.tls
        ) as daemon:
            daemon.run()
        return 0
    token = os.environ.get(TOKEN_ENV) or None
    certificate = ensure_certificate(args.path / "tls", ["127.0.0.1"]) if args.tls else None
    coordinator = Coordinator(args.path, team=TEAM)
    try:
        coordinator.store.warm()
        settings = ServeSettings(
            port=args.port,
            tls_cert=certificate.cert_path if certificate else None,
            tls_key=certificate.key_path if certificate else None,
        )
        serve(coordinator_app(coordinator, token=token), settings, token=token)
    finally:
        coordinator.close()
    return 0


@dataclass
class TransportResult:
    """Part 3: the same team twice, over plain http and over pinned TLS, asked alternately."""

    peers: int
    items_per_peer: int
    queries: int
    setup_seconds: float = 0.0
    rows: list[LatencyRow] = field(default_factory=list)
    ratios: dict[str, dict[str, float]] = field(default_factory=dict)
    signing_us: dict[str, float] = field(default_factory=dict)


_TRANSPORTS = ("http", "https")


def run_transport(root: Path, env: dict[str, str], args: argparse.Namespace) -> TransportResult:
    """Part 3 (see the module docstring)."""
    result = TransportResult(
        peers=args.peers, items_per_peer=args.items_per_peer, queries=args.queries
    )
    processes = Processes(env, root / "logs")
    try:
        started = time.perf_counter()
        coordinators: dict[str, tuple[str, str | None]] = {}
        for transport in _TRANSPORTS:
            tls = transport == "https"
            data = root / f"coordinator-{transport}"
            pin = ensure_certificate(data / "tls", ["127.0.0.1"]).pin if tls else None
            port = free_port()
            serve_args = ["coordinator", str(data), str(port), *(["--tls"] if tls else [])]
            url = processes.start(f"coordinator-{transport}", serve_args, port, bench=True, tls=tls)
            coordinators[transport] = (url, pin)
        processes.wait_ready([f"coordinator-{t}" for t in _TRANSPORTS])
        corpus = Corpus(SEED + 20)
        batches = [corpus.memories(args.items_per_peer) for _ in range(args.peers)]
        teams: dict[str, tuple[list[Member], Member]] = {}
        about: list[Memory] = []
        for transport, (url, pin) in coordinators.items():
            tls = transport == "https"
            folder = root / transport
            members = [
                new_member(folder, f"{transport}{n + 1:02d}", url, pin) for n in range(args.peers)
            ]
            asker = new_member(folder, f"{transport}-asker", url, pin)
            trust_each_other([*members, asker], pin)
            rng = random.Random(SEED + 21)  # the same items published in both teams
            for member, memories in zip(members, batches, strict=True):
                published = set(fill(member, memories, share=2 / 3, rng=rng, push=True))
                if not tls:
                    about += [m for m in memories if m.text in published]
            for member in members:
                port = free_port()
                serve_args = ["peer", str(member.home), str(port), *(["--tls"] if tls else [])]
                member.url = processes.start(member.name, serve_args, port, bench=True, tls=tls)
            teams[transport] = (members, asker)
            log(f"[transport] {transport}: {len(members)} members filled, peers starting")
        processes.wait_ready([m.name for members, _ in teams.values() for m in members])
        for members, asker in teams.values():
            wait_for_presence(
                load_policy(asker.home), load_identity(asker.home),
                {m.key_id for m in members}, PRESENCE_TIMEOUT,
            )  # fmt: skip
        result.setup_seconds = time.perf_counter() - started
        log(f"[transport] both coordinators list all {args.peers} peers")
        queries = Corpus(SEED + 22).queries(args.queries, about)
        warmup = Corpus(SEED + 23).queries(WARMUP_QUERIES, about)
        result.rows = transport_rows(teams, queries, warmup)
        for kept in (True, False):
            how = "connections kept" if kept else "fresh clients per call"
            plain, secure = (r for r in result.rows if r.what.endswith(how))
            result.ratios[how] = {"p50": secure.p50 / plain.p50, "p95": secure.p95 / plain.p95}
        result.signing_us = signing_cost(teams["https"][1])
    finally:
        processes.stop_all()
    return result


def transport_rows(
    teams: dict[str, tuple[list[Member], Member]],
    queries: Sequence[Query],
    warmup: Sequence[Query],
) -> list[LatencyRow]:
    """Each query asked of both teams in turn (which goes first alternates), first with one
    set of clients kept for all calls, then with fresh clients per call as `mem team
    recall-team` has."""
    rows: list[LatencyRow] = []
    with contextlib.ExitStack() as stack:
        askers: dict[str, tuple[Store, Policy, Identity, Calls]] = {}
        for transport, (_, asker) in teams.items():
            store = stack.enter_context(Store(asker.home, author=asker.name))
            policy, identity = load_policy(asker.home), load_identity(asker.home)
            calls = Calls(member_clients(policy, identity), timeout=2.0)
            stack.callback(calls.close)
            askers[transport] = (store, policy, identity, calls)
            run_team(store, policy, identity, warmup, 5, calls)
        for kept in (True, False):
            times: dict[str, list[float]] = {t: [] for t in askers}
            answers: dict[str, list[TeamAnswer | None]] = {t: [] for t in askers}
            log(f"[transport] {len(queries)} queries per transport, connections kept: {kept}")
            for index, query in enumerate(queries):
                order = _TRANSPORTS if index % 2 == 0 else _TRANSPORTS[::-1]
                for transport in order:
                    store, policy, identity, calls = askers[transport]
                    took, answered = run_team(
                        store, policy, identity, [query], 5, calls if kept else None
                    )
                    times[transport] += took
                    answers[transport] += answered
            how = "connections kept" if kept else "fresh clients per call"
            for transport in askers:
                signed = "pinned TLS" if transport == "https" else "plain http"
                label = f"{signed}, signed; {how}"
                rows.append(latency_row(label, 5, times[transport], answers[transport]))
    return rows


def signing_cost(member: Member) -> dict[str, float]:
    """Median microseconds to sign one recall request and to verify it at a peer."""
    identity = load_identity(member.home)
    audience = peer_audience(identity.key_id)
    body = b'{"query":"' + b"x" * 2000 + b'"}'
    verifier = RequestVerifier(audience)
    signs, checks = [], []
    for _ in range(500):
        started = time.perf_counter()
        headers = sign_request(identity, "POST", "/v1/recall", body, audience)
        signs.append((time.perf_counter() - started) * 1e6)
        raw = [(k.encode(), v.encode()) for k, v in headers.items()]
        started = time.perf_counter()
        verifier.verify("POST", "/v1/recall", raw, body)
        checks.append((time.perf_counter() - started) * 1e6)
    return {"sign": float(np.median(signs)), "verify": float(np.median(checks))}


def print_transport(result: TransportResult) -> None:
    print(
        f"\n== 3. TLS beside plaintext: the same team twice (1 coordinator + {result.peers} "
        f"peers each, {result.items_per_peer} memories per member), every request signed; "
        f"each query asked of both in turn; set-up {result.setup_seconds:.0f} s"
    )
    print(table(LATENCY_HEADERS, [latency_cells(r) for r in result.rows], yes_no=True))
    for how, ratio in result.ratios.items():
        print(f"TLS / plaintext ({how}): p50 x{ratio['p50']:.2f}, p95 x{ratio['p95']:.2f}")
    if result.signing_us:
        print(
            f"signing one request: {result.signing_us['sign']:.0f} us; verifying it: "
            f"{result.signing_us['verify']:.0f} us (medians)"
        )


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--peers", type=int, default=8, help="member peer daemons (8)")
    parser.add_argument("--items-per-peer", type=int, default=300, help="memories each (300)")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per row (200)")
    parser.add_argument("--equiv-items", type=int, default=2000, help="corpus size, part 2 (2000)")
    parser.add_argument("--equiv-peers", type=int, default=5, help="peers to split over (5)")
    parser.add_argument("--equiv-queries", type=int, default=200, help="queries, part 2 (200)")
    parser.add_argument("--examples", type=int, default=3, help="differing queries shown (3)")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--latency-only", action="store_true")
    only.add_argument("--equivalence-only", action="store_true")
    only.add_argument("--transport-only", action="store_true", help="part 3 only")
    parser.add_argument(
        "--no-expiry-wait",
        action="store_true",
        help=f"skip waiting ~{PRESENCE_TTL:.0f} s for stopped peers' presence to expire",
    )
    parser.add_argument("--profile", action="store_true", help="profile even if the goal is met")
    parser.add_argument("--profile-queries", type=int, default=30, help="calls profiled (30)")
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    args = parser.parse_args(argv)
    limits = {
        "--peers": (args.peers, 1, 32),
        "--items-per-peer": (args.items_per_peer, 10, 5000),
        "--queries": (args.queries, 2, 5000),
        "--equiv-items": (args.equiv_items, 50, 20000),
        "--equiv-peers": (args.equiv_peers, 2, 16),
        "--equiv-queries": (args.equiv_queries, 2, 5000),
        "--profile-queries": (args.profile_queries, 1, 500),
    }
    for name, (value, low, high) in limits.items():
        if not low <= value <= high:
            parser.error(f"{name} must be between {low} and {high}")
    return args


def _terminate(signum: int, frame: FrameType | None) -> NoReturn:
    raise SystemExit(128 + signum)  # unwinds through every finally: processes, folders


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["_serve"]:
        return serve_main(given[1:])
    args = parse_args(given)
    signal.signal(signal.SIGTERM, _terminate)
    info = machine_info()
    print("== memmesh team recall benchmark")
    pairs = [f"{key}: {value}" for key, value in info.items()]
    for start in range(0, len(pairs), 6):
        print("  ".join(pairs[start : start + 6]))
    report: dict[str, Any] = {"machine": info, "args": {k: str(v) for k, v in vars(args).items()}}
    root = Path(tempfile.mkdtemp(prefix="memmesh-team-bench-"))
    try:
        with environment(secrets.token_hex(16)) as env:
            everything = not (args.latency_only or args.equivalence_only or args.transport_only)
            if everything or args.latency_only:
                latency = run_latency(root / "latency", env, args)
                print_latency(latency)
                report["latency"] = asdict(latency)
            if everything or args.equivalence_only:
                equivalence = run_equivalence(root / "equivalence", env, args)
                print_equivalence(equivalence)
                report["equivalence"] = asdict(equivalence)
            if everything or args.transport_only:
                transport = run_transport(root / "transport", env, args)
                print_transport(transport)
                report["transport"] = asdict(transport)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\nload average (1 min) at the end: {load_average()}")
    report["loadavg_at_end"] = load_average()
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
        print(f"\nJSON written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
