"""Helpers the benchmark scripts share: progress, timing, text tables and machine facts.

The scripts import this as ``_common``: run as ``python bench/<script>.py``, ``bench/`` is on
``sys.path``.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def log(message: str) -> None:
    """Progress goes to stderr so that stdout holds only the tables."""
    print(message, file=sys.stderr, flush=True)


def ms_since(started: float) -> float:
    """Milliseconds of wall time since ``started`` (a ``time.perf_counter()`` reading)."""
    return (time.perf_counter() - started) * 1000


def timed(call: Callable[[], object]) -> float:
    """Milliseconds of wall time that one ``call()`` takes."""
    started = time.perf_counter()
    call()
    return ms_since(started)


def mean(values: Sequence[float]) -> float:
    """The mean of ``values``, NaN (printed as ``-``) when there are none."""
    return float(np.mean(values)) if values else float("nan")


def share(flags: Sequence[bool]) -> float:
    """The fraction of ``flags`` that are true, 0 when there are none."""
    return sum(flags) / len(flags) if flags else 0.0


@dataclass(frozen=True)
class Latency:
    """Milliseconds over repeated runs of one operation."""

    what: str
    n: int
    p50: float
    p95: float
    mean: float

    @classmethod
    def of(cls, what: str, samples_ms: Sequence[float]) -> Latency:
        """The percentiles and mean of ``samples_ms``."""
        values = np.asarray(samples_ms, dtype=np.float64)
        return cls(
            what=what,
            n=len(values),
            p50=float(np.percentile(values, 50)),
            p95=float(np.percentile(values, 95)),
            mean=float(values.mean()),
        )


# -- text tables -----------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, yes_no: bool = False) -> str:
    """A plain aligned text table; numbers right-aligned (booleans as yes/no with ``yes_no``)."""
    cells = [[cell(value, yes_no=yes_no) for value in row] for row in rows]
    widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(headers)]
    numeric = [all(is_number(row[i]) for row in rows) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(row) for row in cells)])


def is_number(value: object) -> bool:
    """Whether a table cell is right-aligned: numbers, and the ``-`` of a missing one."""
    return isinstance(value, int | float) or value is None


def cell(value: object, *, yes_no: bool = False) -> str:
    """One table cell: thousands separators, 3 decimals below 10 and 1 above, ``-`` for none."""
    if value is None:
        return "-"
    if yes_no and isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


# -- the machine -----------------------------------------------------------------------------


def cpu_model() -> str:
    """The CPU's model name."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        return platform.processor() or "unknown"
    return "unknown"


def cpu_count() -> str:
    """How many CPUs this process may run on."""
    return str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?")


def thread_settings() -> dict[str, str]:
    """The environment variables that set how many threads numpy's BLAS uses."""
    return {
        name: os.environ.get(name, "(unset)")
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    }


def version(distribution: str) -> str:
    """The installed version of ``distribution``, or ``not installed``."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def git(*args: str) -> str:
    """What ``git args`` prints, run in the checkout these scripts are part of."""
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout


def source_revision() -> str:
    """The commit measured, marked ``+changes`` when ``src`` differs from it."""
    try:
        head = git("rev-parse", "--short", "HEAD").strip()
        dirty = git("status", "--porcelain", "--", "src").strip()
    except OSError:
        return "?"
    return f"{head or '?'}{' +changes in src' if dirty else ''}"


def load_average() -> str:
    """The 1-minute load average: anything else running skews every timing here."""
    return f"{os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "?"


# -- words for synthetic memories ----------------------------------------------------------
# Lists that more than one script draws from; a script with its own variant says so.

# (team_recall.py keeps its own PROJECTS.)
PROJECTS = (
    "atlas", "billing", "checkout", "data-platform", "design-system", "docs-site", "growth",
    "infra", "ios-app", "android-app", "ledger", "mlops", "monorepo", "notifications",
    "payments", "platform-api", "search", "security", "support-tools", "warehouse",
)  # fmt: skip
SERVICES = (
    "billing-api", "auth-service", "payments-gateway", "search-indexer", "notification-worker",
    "user-profile", "inventory-sync", "report-builder", "checkout-web", "media-transcoder",
    "ledger-service", "api-gateway", "job-scheduler", "etl-pipeline", "feature-flags",
    "email-sender", "pdf-renderer", "geo-lookup", "rate-limiter", "session-store", "audit-log",
    "admin-portal", "mobile-bff", "webhook-relay", "image-resizer", "metrics-exporter",
    "order-service", "shipping-quotes", "tax-engine", "cart-service",
)  # fmt: skip
ENVS = (
    "staging", "production", "CI", "local dev", "the ARM runners", "macOS laptops",
    "the canary cluster", "eu-west-1", "us-east-1", "the nightly build", "Windows agents",
)  # fmt: skip
# (coordinator.py keeps its own COMMANDS.)
COMMANDS = (
    "make test", "make lint", "docker compose up -d {svc}", "kubectl rollout restart deploy/{svc}",
    "kubectl logs -f deploy/{svc} --since=1h", "npm ci --legacy-peer-deps",
    "pip install -e '.[dev]'", "alembic upgrade head", "terraform plan -out plan.tfplan",
    "pytest -x -k {table}", "git bisect run make test", "cargo build --release", "go test ./...",
    "psql -c 'VACUUM ANALYZE {table}'", "redis-cli FLUSHDB", "helm upgrade --install {svc} ./chart",
    "yarn workspace {svc} build", "./scripts/seed_db.sh --env staging",
    "aws s3 sync ./dist s3://{svc}-assets", "poetry lock --no-update",
)  # fmt: skip
# (coordinator.py keeps its own TASKS.)
TASKS = (
    "reset the local database", "rotate the API keys", "rebuild the search index",
    "run the integration tests", "regenerate the gRPC stubs", "deploy a hotfix", "tail the logs",
    "clear the cache", "seed test data", "bump the version", "profile slow endpoints",
    "reproduce the flaky test", "update the lockfile", "backfill missing rows",
    "run database migrations", "restart the workers", "publish the SDK",
)  # fmt: skip
TABLES = ("orders", "invoices", "users", "sessions", "events", "payments", "shipments", "audit")
COLUMNS = ("created_at", "user_id", "status", "tenant_id", "external_ref")
# (coordinator.py keeps its own CAUSES.)
CAUSES = (
    "a missing index on {table}.{col}", "connection pool exhaustion", "a race between two workers",
    "clock skew between nodes", "an expired TLS certificate", "a stale DNS cache",
    "the disk filling up with logs", "an unbounded retry loop", "a breaking change in {pkg} {ver}",
    "a misconfigured feature flag", "N+1 queries in the serializer",
    "a memory leak in the image decoder", "a deadlock on the {table} table",
)  # fmt: skip
# (coordinator.py keeps its own FIXES.)
FIXES = (
    "pinning {pkg} to {ver}", "adding exponential backoff", "raising the pool size to {n}",
    "installing {sysdep}", "setting {envvar}", "adding an index on {table}.{col}",
    "rotating the certificate", "increasing the memory limit to {n}Gi",
    "disabling HTTP keep-alive", "moving the job to the batch queue",
)  # fmt: skip
ENVVARS = (
    "NODE_OPTIONS=--max-old-space-size=4096", "PGSSLMODE=require", "PYTHONHASHSEED=0",
    "GOFLAGS=-mod=mod", "RUST_BACKTRACE=1", "UV_THREADPOOL_SIZE=16",
)  # fmt: skip
# (team_recall.py keeps its own REASONS.)
REASONS = (
    "it removes a network hop", "the team already knows it", "it halves p95 latency",
    "it avoids float rounding errors", "the old approach caused duplicate charges",
    "security review asked for it", "it simplifies rollbacks", "it cut CI time by {n} minutes",
)  # fmt: skip
# (coordinator.py keeps its own CONVENTIONS.)
CONVENTIONS = (
    "branch names start with the ticket number", "every migration must be reversible",
    "log lines are JSON with a request_id field", "public functions need docstrings",
    "tests that touch the network are marked slow", "timestamps are stored in UTC",
    "feature flags are named team.feature.variant", "errors are wrapped with context",
    "configuration comes from environment variables only", "PR titles use conventional commits",
)  # fmt: skip
# (coordinator.py keeps its own PREFERENCES.)
PREFERENCES = (
    "small PRs under 400 lines", "squash merges", "explicit type hints", "table-driven tests",
    "feature flags over long-lived branches", "structured logging", "early returns",
    "descriptive commit messages",
)  # fmt: skip
# (coordinator.py keeps its own PROTOCOLS.)
PROTOCOLS = ("gRPC", "HTTP/2", "AMQP", "Kafka", "plain TCP", "WebSockets")
# (team_recall.py keeps its own TOPIC_TAGS.)
TOPIC_TAGS = ("ci", "deploy", "db", "perf", "security", "flaky", "oncall", "build", "infra")
