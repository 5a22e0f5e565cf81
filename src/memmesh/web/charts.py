"""Charts for the health section: small SVG pictures drawn on the server from numbers.

Nothing is fetched and no script runs: each function returns the whole ``<svg>`` element,
which the template puts in the page as it is. That is why every label and name is escaped
here, with :func:`html.escape`, as the SVG is built: this module is the one place the page
makes markup outside a template, and it only ever makes it from numbers it formats itself
and text it escaped. Colours come from the stylesheet (``svg.chart`` and its classes), since
the page's Content-Security-Policy allows no inline style.

* :func:`line_chart` - lines over time (items, latency, shares), a gap where a value is
  missing;
* :func:`column_chart` - stacked columns over time (outcomes by result);
* :func:`bar_chart` - one horizontal bar per label (items by kind, by project).

Values are non-negative; one that is not finite is left out. A chart with nothing to show
draws its frame and says "no data yet".
"""

import math
from collections.abc import Sequence
from html import escape
from typing import NamedTuple

from markupsafe import Markup

__all__ = ["EMPTY", "Series", "bar_chart", "column_chart", "line_chart"]

EMPTY = "no data yet"
WIDTH = 640
_PLOT_HEIGHT = 170
_LEFT, _RIGHT, _TOP = 52, 14, 22
_AXIS_LABELS = 22  # below the plot: the x labels
_LEGEND_ROW = 18
_MOST_X_LABELS = 8
_MOST_DOTS = 40
_PALETTE = 8  # classes s0 ... s7 in the stylesheet
TONES = ("ok", "warn", "bad", "muted")
_CHAR = 6.6  # the width of a character of the chart's 11px text, near enough
_BAR_ROW = 24
_BAR_LABEL = 150


class Series(NamedTuple):
    """One named line or layer of columns: a value per label (``None``: none that day).
    ``tone`` colours it by meaning (``ok``, ``warn``, ``bad``, ``muted``) rather than by
    its place in the palette."""

    name: str
    values: Sequence[float | None]
    tone: str | None = None


def line_chart(
    series: Sequence[Series],
    labels: Sequence[str],
    *,
    title: str,
    unit: str = "",
    top: float | None = None,
) -> Markup:
    """Each of ``series`` as a line over ``labels`` (the x axis), scaled so that the largest
    value (or ``top``, for a share out of 100) reaches the top of the plot."""
    clean = [_finite(s.values) for s in series]
    found = [v for values in clean for v in values if v is not None]
    if not found:
        return _empty(title)
    scale = _Scale(top if top is not None else max(found))
    parts = _frame(scale, labels, unit, columns=False)
    # Many points: their dots show only under the pointer (each still carries its tooltip).
    dots = "dot" if len(labels) <= _MOST_DOTS else "dot faint"
    for index, (named, values) in enumerate(zip(series, clean, strict=True)):
        tone = _tone(named, index)
        for run in _runs(values):
            points = " ".join(f"{_x(i, len(labels)):.1f},{scale.y(v):.1f}" for i, v in run)
            parts.append(f'<polyline class="series {tone}" points="{points}"/>')
        for i, value in enumerate(values):
            if value is not None:
                tip = _tip(labels, i, named.name, value, unit)
                parts.append(
                    f'<circle class="{dots} {tone}" cx="{_x(i, len(labels)):.1f}" '
                    f'cy="{scale.y(value):.1f}" r="2.5"><title>{tip}</title></circle>'
                )
    return _svg(title, parts, series)


def column_chart(
    series: Sequence[Series], labels: Sequence[str], *, title: str, unit: str = ""
) -> Markup:
    """A column per label, the values of ``series`` stacked in it bottom up."""
    clean = [[v or 0.0 for v in _finite(s.values)] for s in series]
    totals = [sum(column) for column in zip(*clean, strict=True)] if clean else []
    if not any(totals):
        return _empty(title)
    scale = _Scale(max(totals))
    parts = _frame(scale, labels, unit, columns=True)
    band = _plot_width() / max(1, len(labels))
    width = max(1.0, band * 0.72)
    for i in range(len(labels)):
        base = 0.0
        for index, (named, values) in enumerate(zip(series, clean, strict=True)):
            value = values[i]
            if value <= 0:
                continue
            top, bottom = scale.y(base + value), scale.y(base)
            x = _LEFT + i * band + (band - width) / 2
            tip = _tip(labels, i, named.name, value, unit)
            parts.append(
                f'<rect class="barfill {_tone(named, index)}" x="{x:.1f}" y="{top:.1f}" '
                f'width="{width:.1f}" height="{bottom - top:.1f}"><title>{tip}</title></rect>'
            )
            base += value
    return _svg(title, parts, series)


def bar_chart(bars: Sequence[tuple[str, float]], *, title: str, unit: str = "") -> Markup:
    """A horizontal bar per ``(label, value)``, in the order given, the largest reaching the
    right edge, each with its value written after it."""
    values = [v if v is not None and math.isfinite(v) and v > 0 else 0.0 for _, v in bars]
    if not any(values):
        return _empty(title)
    largest = max(values)
    room = WIDTH - _BAR_LABEL - _RIGHT - 60
    parts: list[str] = []
    for row, ((label, _), value) in enumerate(zip(bars, values, strict=True)):
        y = 6 + row * _BAR_ROW
        length = room * value / largest
        shown = escape(_cut(label, 22))
        parts.append(
            f'<text class="label" x="{_BAR_LABEL - 8}" y="{y + 13}" text-anchor="end">'
            f"{shown}</text>"
        )
        parts.append(
            f'<rect class="barfill s{row % _PALETTE}" data-label="{escape(label)}" '
            f'data-value="{_number(value)}" x="{_BAR_LABEL}" y="{y + 2}" width="{length:.1f}" '
            f'height="{_BAR_ROW - 8}" '
            f'rx="3"><title>{escape(label)}: {_number(value)}{escape(_unit(unit))}</title>'
            "</rect>"
        )
        parts.append(
            f'<text class="value" x="{_BAR_LABEL + length + 6:.1f}" y="{y + 13}">'
            f"{_number(value)}</text>"
        )
    height = 12 + len(bars) * _BAR_ROW
    return _wrap(title, height, parts)


class _Scale:
    """The y axis: from 0 up to a round number at or above ``largest``, in 2 to 5 steps."""

    def __init__(self, largest: float) -> None:
        self.step = _round_step(largest / 4 if largest > 0 else 0.25)
        self.top = self.step * max(1, math.ceil(largest / self.step - 1e-9))

    def y(self, value: float) -> float:
        share = min(1.0, max(0.0, value / self.top))
        return _TOP + _PLOT_HEIGHT * (1 - share)

    def ticks(self) -> list[float]:
        count = round(self.top / self.step)
        return [self.step * n for n in range(count + 1)]


def _round_step(raw: float) -> float:
    """The least of 1, 2, 2.5 or 5 times a power of ten at or above ``raw``."""
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if factor * power >= raw * (1 - 1e-9):
            return factor * power
    return 10 * power  # pragma: no cover - the loop always returns


def _finite(values: Sequence[float | None]) -> list[float | None]:
    return [max(0.0, float(v)) if v is not None and math.isfinite(v) else None for v in values]


def _runs(values: list[float | None]) -> list[list[tuple[int, float]]]:
    """The stretches of ``values`` without a gap, each with its positions."""
    runs: list[list[tuple[int, float]]] = [[]]
    for i, value in enumerate(values):
        if value is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append((i, value))
    return [run for run in runs if run]


def _plot_width() -> float:
    return WIDTH - _LEFT - _RIGHT


def _x(index: int, count: int) -> float:
    """Where the ``index``-th of ``count`` points sits across the plot."""
    if count <= 1:
        return _LEFT + _plot_width() / 2
    return _LEFT + _plot_width() * index / (count - 1)


def _frame(scale: _Scale, labels: Sequence[str], unit: str, *, columns: bool) -> list[str]:
    """The grid lines with their values, the unit, and the x labels (thinned out)."""
    parts = []
    for tick in scale.ticks():
        y = scale.y(tick)
        parts.append(
            f'<line class="axis" x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
        )
        parts.append(
            f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_number(tick)}</text>'
        )
    if unit:
        parts.append(
            f'<text class="unit" x="{_LEFT - 6}" y="12" text-anchor="end">{escape(unit)}</text>'
        )
    count = len(labels)
    stride = max(1, math.ceil(count / _MOST_X_LABELS))
    band = _plot_width() / max(1, count)
    for i, label in enumerate(labels):
        if (count - 1 - i) % stride:
            continue
        x = _LEFT + band * (i + 0.5) if columns else _x(i, count)
        anchor = "middle"
        if count > 1 and i == 0:  # the labels at the ends stay inside the picture
            x, anchor = (_LEFT if columns else x), "start"
        elif count > 1 and i == count - 1:
            x, anchor = (WIDTH - _RIGHT if columns else x), "end"
        parts.append(
            f'<text x="{x:.1f}" y="{_TOP + _PLOT_HEIGHT + 16}" text-anchor="{anchor}">'
            f"{escape(_cut(label, 12))}</text>"
        )
    return parts


def _legend(series: Sequence[Series]) -> tuple[list[str], int]:
    """The series' names with their colours, in rows across the chart; and its height."""
    parts: list[str] = []
    x, row = float(_LEFT), 0
    for index, named in enumerate(series):
        name = _cut(named.name, 24)
        wide = 22 + len(name) * _CHAR
        if x + wide > WIDTH - _RIGHT and x > _LEFT:
            x, row = float(_LEFT), row + 1
        y = _TOP + _PLOT_HEIGHT + _AXIS_LABELS + row * _LEGEND_ROW
        parts.append(
            f'<rect class="swatch {_tone(named, index)}" x="{x:.1f}" y="{y + 3}" width="10" '
            f'height="10" rx="2"/>'
        )
        parts.append(f'<text class="legend" x="{x + 15:.1f}" y="{y + 12}">{escape(name)}</text>')
        x += wide + 12
    return parts, (row + 1) * _LEGEND_ROW if series else 0


def _svg(title: str, parts: list[str], series: Sequence[Series]) -> Markup:
    legend, legend_height = _legend(series)
    height = _TOP + _PLOT_HEIGHT + _AXIS_LABELS + legend_height + 4
    return _wrap(title, height, parts + legend)


def _empty(title: str) -> Markup:
    """The frame of a chart with nothing in it yet."""
    middle = _TOP + _PLOT_HEIGHT / 2
    parts = [
        f'<line class="axis" x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{_TOP + _PLOT_HEIGHT}" '
        f'y2="{_TOP + _PLOT_HEIGHT}"/>',
        f'<text class="empty" x="{WIDTH / 2:.0f}" y="{middle:.0f}" text-anchor="middle">'
        f"{EMPTY}</text>",
    ]
    return _wrap(title, _TOP + _PLOT_HEIGHT + _AXIS_LABELS, parts)


def _wrap(title: str, height: float, parts: list[str]) -> Markup:
    label = escape(title)
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} '
        f'{height:.0f}" role="img" aria-label="{label}"><title>{label}</title>'
    )
    # Built from numbers formatted here and text escaped above: nothing else goes in.
    return Markup(head + "".join(parts) + "</svg>")  # noqa: S704


def _tone(series: Series, index: int) -> str:
    return series.tone if series.tone in TONES else f"s{index % _PALETTE}"


def _tip(labels: Sequence[str], index: int, name: str, value: float, unit: str) -> str:
    """A point's tooltip, escaped: ``2026-12-01 · p95: 12.5 ms``."""
    where = labels[index] if index < len(labels) else ""
    return escape(f"{where} · {name}: ") + _number(value) + escape(_unit(unit))


def _unit(unit: str) -> str:
    return "" if not unit else ("%" if unit == "%" else f" {unit}")


def _cut(text: str, most: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= most else line[: most - 1] + "\u2026"


def _number(value: float) -> str:
    """A value as the chart writes it: ``1,234``, ``12.5``, ``0.35``."""
    if value == int(value) or abs(value) >= 100:
        return f"{round(value):,}"
    if abs(value) >= 10:
        return f"{value:.1f}".rstrip("0").rstrip(".")
    return f"{value:.2f}".rstrip("0").rstrip(".")
