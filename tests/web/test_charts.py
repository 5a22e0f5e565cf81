"""The health page's charts: SVG drawn from numbers, every label escaped, values inside the
picture, and a chart with nothing to show says so."""

import xml.etree.ElementTree as ET

import pytest
from markupsafe import Markup

from memmesh.web.charts import Series, bar_chart, column_chart, line_chart

SVG = "{http://www.w3.org/2000/svg}"


def _parsed(markup: str) -> ET.Element:
    """The chart as XML: it must be well formed to parse at all."""
    return ET.fromstring(markup)  # noqa: S314 - the charts' own output, not untrusted


def _view_box(root: ET.Element) -> tuple[float, float]:
    _, _, width, height = (float(n) for n in root.attrib["viewBox"].split())
    return width, height


def _points(root: ET.Element) -> list[tuple[float, float]]:
    """Every point the chart's lines pass through."""
    found: list[tuple[float, float]] = []
    for line in root.iter(f"{SVG}polyline"):
        for pair in line.attrib["points"].split():
            x, y = pair.split(",")
            found.append((float(x), float(y)))
    return found


def _texts(root: ET.Element) -> list[str]:
    return ["".join(node.itertext()) for node in root.iter(f"{SVG}text")]


@pytest.mark.parametrize(
    "draw",
    [
        lambda label: line_chart([Series(label, [1.0, 2.0])], ["mon", label], title=label),
        lambda label: column_chart([Series(label, [3.0, 1.0])], [label, "tue"], title=label),
        lambda label: bar_chart([(label, 4.0), ("b", 2.0)], title=label),
    ],
    ids=["line", "column", "bar"],
)
def test_a_label_with_markup_comes_out_as_text(draw: object) -> None:
    hostile = '<script>alert("x")</script>&'
    markup = draw(hostile)  # type: ignore[operator]

    assert isinstance(markup, Markup)
    assert "<script" not in markup
    assert "&lt;script&gt;" in markup
    root = _parsed(markup)
    assert any(hostile[:18] in text for text in _texts(root))


def test_an_attribute_cannot_be_broken_out_of_by_a_label() -> None:
    markup = bar_chart([('x" onmouseover="bad', 1.0)], title='t" onload="bad')

    root = _parsed(markup)
    for node in root.iter():
        assert not any(name.startswith("on") for name in node.attrib), node.attrib


@pytest.mark.parametrize(
    "markup",
    [
        line_chart([], [], title="Recall latency"),
        line_chart([Series("p95", [None, None])], ["a", "b"], title="Recall latency"),
        column_chart([Series("worked", [0.0, 0.0])], ["a", "b"], title="Outcomes"),
        bar_chart([], title="Items by kind"),
    ],
    ids=["no series", "no values", "only zeros", "no bars"],
)
def test_a_chart_with_nothing_to_show_says_no_data_yet(markup: Markup) -> None:
    root = _parsed(markup)
    assert "no data yet" in _texts(root)
    assert _points(root) == []
    assert not [r for r in root.iter(f"{SVG}rect") if "barfill" in r.attrib.get("class", "")]


def test_line_values_scale_into_the_view_box_with_the_largest_at_the_top() -> None:
    values = [0.0, 5.0, 250.0, 1_000_000.0, 12.5]
    root = _parsed(line_chart([Series("items", values)], list("abcde"), title="Items"))

    width, height = _view_box(root)
    points = _points(root)
    assert len(points) == len(values)
    assert all(0 <= x <= width and 0 <= y <= height for x, y in points)
    xs = [x for x, _ in points]
    assert xs == sorted(xs)
    assert len(set(xs)) == len(xs)
    top = min(y for _, y in points)
    bottom = max(y for _, y in points)
    assert points[3][1] == top  # the largest value is drawn highest
    assert points[0][1] == bottom  # zero sits on the axis
    assert bottom - top > height / 2


def test_missing_values_break_the_line_instead_of_dropping_to_zero() -> None:
    root = _parsed(line_chart([Series("p50", [1.0, 2.0, None, 4.0])], list("abcd"), title="t"))

    lines = list(root.iter(f"{SVG}polyline"))
    assert [len(line.attrib["points"].split()) for line in lines] == [2, 1]


def test_a_fixed_top_keeps_shares_on_a_hundred_percent_scale() -> None:
    root = _parsed(line_chart([Series("abstained", [50.0])], ["a"], title="t", top=100.0))

    _width, _height = _view_box(root)
    (point,) = _points(root)
    axis = [float(line.attrib["y1"]) for line in root.iter(f"{SVG}line")]
    assert min(axis) < point[1] < max(axis)
    assert "100" in " ".join(_texts(root))


def test_columns_stack_their_series_and_stay_inside_the_view_box() -> None:
    worked = Series("worked", [4.0, 0.0, 1.0], tone="ok")
    failed = Series("failed", [2.0, 3.0, 0.0], tone="bad")
    root = _parsed(column_chart([worked, failed], ["a", "b", "c"], title="Outcomes"))

    width, height = _view_box(root)
    bars = [r for r in root.iter(f"{SVG}rect") if "barfill" in r.attrib.get("class", "")]
    assert len(bars) == 4  # a zero draws nothing
    for bar in bars:
        x, y = float(bar.attrib["x"]), float(bar.attrib["y"])
        w, h = float(bar.attrib["width"]), float(bar.attrib["height"])
        assert x >= 0
        assert x + w <= width
        assert y >= 0
        assert y + h <= height
        assert h > 0
    first = sorted(
        (b for b in bars if float(b.attrib["x"]) < width / 3), key=lambda b: b.attrib["y"]
    )
    tallest = float(first[0].attrib["height"]) + float(first[1].attrib["height"])
    (second_failed,) = [
        b for b in bars if "bad" in b.attrib["class"] and width / 3 < float(b.attrib["x"])
    ]
    assert tallest == pytest.approx(2 * float(second_failed.attrib["height"]))
    assert {"ok", "bad"} <= {c for b in bars for c in b.attrib["class"].split()}


def test_bars_are_as_long_as_their_values_and_carry_them_as_text() -> None:
    root = _parsed(bar_chart([("fact", 30.0), ("gotcha", 15.0), ("command", 0.0)], title="Kinds"))

    width, _height = _view_box(root)
    bars = {
        r.attrib["data-label"]: float(r.attrib["width"])
        for r in root.iter(f"{SVG}rect")
        if "barfill" in r.attrib.get("class", "")
    }
    assert bars["fact"] == pytest.approx(2 * bars["gotcha"])
    assert bars["command"] == 0
    assert max(bars.values()) < width
    assert {"30", "15", "0"} <= set(_texts(root))


def test_every_series_is_named_in_the_legend() -> None:
    series = [Series("p50", [1.0, 2.0]), Series("p95", [3.0, 5.0])]
    root = _parsed(line_chart(series, ["a", "b"], title="Latency", unit="ms"))

    texts = _texts(root)
    assert "p50" in texts
    assert "p95" in texts
    assert any("ms" in text for text in texts)


def test_many_labels_are_thinned_so_they_do_not_overlap() -> None:
    labels = [f"12-{n:02d}" for n in range(1, 91)]
    root = _parsed(line_chart([Series("n", [float(n) for n in range(90)])], labels, title="t"))

    shown = [text for text in _texts(root) if text.startswith("12-")]
    assert 2 <= len(shown) <= 12
    assert labels[-1] in shown


def test_numbers_that_are_not_finite_are_left_out() -> None:
    root = _parsed(
        line_chart([Series("x", [1.0, float("nan"), float("inf"), 2.0])], list("abcd"), title="t")
    )

    assert sum(len(line.attrib["points"].split()) for line in root.iter(f"{SVG}polyline")) == 2
