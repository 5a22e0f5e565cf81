"""What the health section shows, gathered in one worker thread: the store's figures per day
(:mod:`memmesh.local.health`), the hooks' last day, and the member's published items.

Days are the member's local calendar days, the last of them today. Everything here is read,
nothing written: the published count reads the registry without reconciling it first.
"""

import itertools
import threading
import time
from datetime import date, datetime, timedelta
from typing import NamedTuple

from memmesh.errors import MemmeshError
from memmesh.local import health
from memmesh.local.health import ItemCounts, RecallFigures, StoreFiles
from memmesh.local.hooklog import HookRun
from memmesh.local.items import KINDS
from memmesh.text import counted
from memmesh.web.session import Session

__all__ = ["RANGES", "Health", "Kpi", "both", "every_recall", "gather", "kpis", "size_text"]

RANGES = (7, 30, 90)
DEFAULT_RANGE = 30
DAY = 86400.0

# The member's published count by store and registry head: folding the log checks every
# signature in it, which the next view need not do again until the log changes.
_published: dict[str, tuple[str | None, int]] = {}
_published_lock = threading.Lock()


class Kpi(NamedTuple):
    """A figure at the top of the section: its value, what it is, a line under it, and where
    it leads."""

    label: str
    value: str
    note: str = ""
    href: str = ""
    tone: str = ""


class Published(NamedTuple):
    """The member's live publications, or why there are none to count."""

    live: int | None
    note: str


class Health(NamedTuple):
    """Everything the section shows for the last ``days`` days (``labels``, one a day)."""

    days: int
    now: float
    labels: list[str]
    items: ItemCounts
    recalls: list[RecallFigures]  # one a day: `mem recall` and the agents' recall tool
    recalls_in_range: RecallFigures
    hook_recalls: list[RecallFigures]  # one a day: the prompt hook's
    hook_recalls_in_range: RecallFigures
    outcomes: list[dict[str, int]]  # one a day
    pending: int
    files: StoreFiles
    hooks: tuple[int, list[HookRun]] | None
    published: Published
    embedder: str
    dim: int


def day_spans(days: int, now: float) -> list[tuple[float, float]]:
    """The last ``days`` local calendar days up to today's, as ``(start, end)`` times."""
    today = datetime.fromtimestamp(now).date()
    firsts = [today - timedelta(days=days - 1 - n) for n in range(days + 1)]
    starts = [_midnight(day) for day in firsts]
    return list(itertools.pairwise(starts))


def _midnight(day: date) -> float:
    return datetime.combine(day, datetime.min.time()).timestamp()


def gather(session: Session, days: int, now: float | None = None) -> Health:
    """The section's figures for the last ``days`` days (blocking: run it in a worker)."""
    now = time.time() if now is None else now
    store = session.store
    spans = day_spans(days, now)
    whole = (spans[0][0], spans[-1][1])
    *daily, in_range = health.recalls(store, [*spans, whole])
    hooked = health.hook_recalls(session.home, [*spans, whole])
    *hook_daily, hook_in_range = hooked or [RecallFigures()] * (len(spans) + 1)
    return Health(
        days=days,
        now=now,
        labels=[time.strftime("%b %d", time.localtime(start)) for start, _ in spans],
        items=health.items(store, [end for _, end in spans]),
        recalls=daily,
        recalls_in_range=in_range,
        hook_recalls=hook_daily,
        hook_recalls_in_range=hook_in_range,
        outcomes=health.outcomes(store, spans),
        pending=health.pending_candidates(store),
        files=health.store_files(store),
        hooks=health.hook_runs(session.home, now - DAY),
        published=published(session),
        embedder=store.embedder.name,
        dim=store.embedder.dim,
    )


def both(first: RecallFigures, second: RecallFigures) -> RecallFigures:
    """The recalls of ``first`` and ``second`` counted together (no percentiles: those of
    the prompt hook time the whole hook, not its recall alone)."""
    return RecallFigures(first.recalls + second.recalls, first.abstained + second.abstained)


def every_recall(view: Health) -> list[RecallFigures]:
    """Each day's recalls however made: `mem recall`, the agents' tool, the prompt hook."""
    return [both(r, h) for r, h in zip(view.recalls, view.hook_recalls, strict=True)]


def published(session: Session) -> Published:
    """How many of the member's items are published now (the registry's live ones)."""
    try:
        if session.identity() is None:
            return Published(None, "no team key yet: mem team init or join")
        registry = session.member(reconcile_first=False).registry
        head = registry.head()
        key = str(session.store.path)
        with _published_lock:
            known = _published.get(key)
        if known is not None and known[0] == head:
            return Published(known[1], "live in the team")
        count = len(registry.live())
    except MemmeshError as exc:  # a key or a registry that cannot be read: say so, and go on
        return Published(None, f"cannot be counted: {exc}")
    with _published_lock:
        _published[key] = (head, count)
    return Published(count, "live in the team")


def kpis(view: Health) -> list[Kpi]:
    """The figures at the top of the section."""
    items = view.items
    active = items.by_status.get("active", 0)
    others = sum(items.by_status.values()) - active
    today = both(view.recalls[-1], view.hook_recalls[-1])
    by_hook = view.hook_recalls[-1].recalls
    latency = view.recalls_in_range
    hook_p95 = view.hook_recalls_in_range.p95_ms
    share = today.abstained_share
    total = view.files.database + view.files.wal
    return [
        Kpi(
            "items",
            f"{active:,}",
            f"{others:,} archived or superseded" if others else "active",
            "/",
        ),
        Kpi(
            "published",
            "-" if view.published.live is None else f"{view.published.live:,}",
            view.published.note,
            "/team",
        ),
        Kpi(
            "recalls today",
            f"{today.recalls:,}",
            (
                "none abstained"
                if share is None or not today.abstained
                else f"{share:.0f}% abstained"
            )
            + (f", {by_hook:,} by the prompt hook" if by_hook else ""),
        ),
        Kpi(
            "p95 latency",
            "-" if latency.p95_ms is None else f"{_ms(latency.p95_ms)} ms",
            (
                f"p50 {_ms(latency.p50_ms)} ms"
                if latency.p50_ms is not None
                else f"no recall in {view.days} days"
            )
            + (f"; prompt hook p95 {_ms(hook_p95)} ms" if hook_p95 is not None else ""),
            tone=_latency_tone(latency.p95_ms),
        ),
        Kpi(
            "inbox pending",
            f"{view.pending:,}",
            "waiting for review" if view.pending else "nothing waiting",
            "/inbox",
            tone="warn" if view.pending else "",
        ),
        Kpi("store size", size_text(total), f"{items.vectors:,} vectors, {view.dim}-d"),
    ]


def _latency_tone(p95: float | None) -> str:
    if p95 is None:
        return ""
    return "ok" if p95 < 50 else ("warn" if p95 < 250 else "bad")


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def size_text(size: int) -> str:
    """A size in bytes as people read it: ``824 bytes``, ``1.4 MB``, ``2.1 GB``."""
    if size < 1000:
        return counted(size, "byte")
    for unit, scale in (("kB", 1e3), ("MB", 1e6), ("GB", 1e9)):
        if size < scale * 1000 or unit == "GB":
            shown = size / scale
            return f"{shown:.1f} {unit}" if shown < 100 else f"{shown:,.0f} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover


def top(counts: dict[str, int], most: int) -> list[tuple[str, int]]:
    """The ``most`` largest of ``counts``, largest first (ties by name), the rest summed as
    one ``(n others)`` entry."""
    ordered = sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))
    if len(ordered) <= most:
        return ordered
    rest = ordered[most - 1 :]
    return [*ordered[: most - 1], (f"{len(rest)} others", sum(n for _, n in rest))]


def kind_order(counts: dict[str, int]) -> list[str]:
    """The kinds with any item, in the order the store names them."""
    return [kind for kind in KINDS if counts.get(kind)] + sorted(set(counts) - set(KINDS))
