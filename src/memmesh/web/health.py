"""The health section of the page (docs/ui.md): how the memory is doing, drawn rather than told.

``GET /health[?days=7|30|90]``: figures on top (items, published, recalls today, p95 latency,
the inbox waiting, the store's size), then charts over the last days: items by kind and by
project as they grew, recall latency (p50, p95), recalls and the share that abstained,
outcomes reported, and below them the hooks' failures of the last day and the store's files.
A recall is one by `mem recall` or the agents' recall tool (the store's journal) or by the
prompt hook each turn (the hooks' journal); latency is charted for each apart, since the
hook's time is its whole run.

The figures are aggregated where they are kept (:mod:`memmesh.local.health`), so the section
stays quick at 100,000 items; the charts are SVG drawn on the server (:mod:`.charts`).
"""

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from memmesh.local.health import OUTCOMES
from memmesh.web._health_data import (
    DEFAULT_RANGE,
    RANGES,
    Health,
    both,
    every_recall,
    gather,
    kind_order,
    kpis,
    size_text,
    top,
)
from memmesh.web.charts import Series, bar_chart, column_chart, line_chart
from memmesh.web.session import session_of

__all__ = ["routes"]

_TOP_PROJECTS = 6
_TONES = {"worked": "ok", "partial": "warn", "failed": "bad"}


async def health_page(request: Request) -> Response:
    """The section for the range the query asks (30 days unless it says)."""
    session = session_of(request)
    days = _days(request.query_params.get("days"))
    view = await session.run(gather, session, days)
    context = {
        "view": view,
        "kpis": kpis(view),
        "charts": charts(view),
        "ranges": RANGES,
        "size_text": size_text,
        "all_recalls": both(view.recalls_in_range, view.hook_recalls_in_range),
    }
    return session.templates.page(request, "health.html", context)


def _days(given: str | None) -> int:
    if given is None or not given.strip():
        return DEFAULT_RANGE
    if given.strip() not in {str(n) for n in RANGES}:
        shown = ", ".join(str(n) for n in RANGES[:-1]) + f" or {RANGES[-1]}"
        raise HTTPException(400, f"days must be {shown}")
    return int(given)


def charts(view: Health) -> dict[str, str]:
    """The section's charts, each an SVG drawn from the figures (markup the template puts in
    as it is: see :mod:`.charts`)."""
    items = view.items
    labels = view.labels
    recalls = view.recalls
    every = every_recall(view)
    unit = "ms"
    return {
        "kinds_over_time": line_chart(
            [Series(kind, items.kinds_before[kind]) for kind in kind_order(items.by_kind)],
            labels,
            title="Active items by kind, over time",
        ),
        "projects_over_time": line_chart(
            _project_series(view), labels, title="Active items by project, over time"
        ),
        "by_kind": bar_chart(
            [(kind, float(n)) for kind, n in top(items.by_kind, len(items.by_kind) or 1)],
            title="Active items by kind",
        ),
        "by_project": bar_chart(
            [(name, float(n)) for name, n in top(items.by_project, 10)],
            title="Active items by project",
        ),
        "latency": line_chart(
            [
                Series("recall p50", [r.p50_ms for r in recalls]),
                Series("recall p95", [r.p95_ms for r in recalls], tone="warn"),
                Series("prompt hook p95", [h.p95_ms for h in view.hook_recalls], tone="muted"),
            ],
            labels,
            title="Recall latency",
            unit=unit,
        ),
        "recalls": column_chart(
            [
                Series("answered", [float(r.recalls - r.abstained) for r in every], "ok"),
                Series("abstained", [float(r.abstained) for r in every], "muted"),
            ],
            labels,
            title="Recalls a day",
        ),
        "abstained": line_chart(
            [Series("abstained", [r.abstained_share for r in every], tone="warn")],
            labels,
            title="Share of recalls that abstained",
            unit="%",
            top=100.0,
        ),
        "outcomes": column_chart(
            [
                Series(result, [float(day[result]) for day in view.outcomes], _TONES[result])
                for result in OUTCOMES
            ],
            labels,
            title="Outcomes reported a day",
        ),
    }


def _project_series(view: Health) -> list[Series]:
    """The largest projects' lines, the others summed in one."""
    items = view.items
    shown = top(items.by_project, _TOP_PROJECTS)
    series = [
        Series(name, items.projects_before[name])
        for name, _ in shown
        if name in items.projects_before
    ]
    rest = [name for name in items.projects_before if name not in {n for n, _ in shown}]
    if rest:
        summed = [
            sum(values) for values in zip(*(items.projects_before[n] for n in rest), strict=False)
        ]
        series.append(Series(f"{len(rest)} others", summed, tone="muted"))
    return series


routes: list[BaseRoute] = [Route("/health", health_page, methods=["GET"])]
