"""`mem revise` through the real command line: the revision takes over the track record."""

from typing import Any

import pytest

from tests.cli._output import json_of
from tests.conftest import MemRunner

TEXT = "Run the integration tests with make test-int"
REVISED = "Run the integration tests with make integration"
AGAIN = "Run the integration tests with make integration-all"
RECORD = ("reinforcements", "worked", "failed", "partial", "outcome_score")


def _record(item: dict[str, Any]) -> dict[str, Any]:
    return {name: item[name] for name in RECORD}


def _as(earned: dict[str, Any]) -> Any:
    """The record ``earned``, to compare with: counts fade a little between two commands."""
    return pytest.approx(_record(earned), abs=1e-3)


def _shown(mem: MemRunner, item_id: str) -> dict[str, Any]:
    item: dict[str, Any] = json_of(mem("show", item_id, "--json"))["item"]
    return item


def test_a_revision_keeps_the_track_record_in_show_and_recall(mem: MemRunner) -> None:
    first = json_of(mem("remember", TEXT, "--json"))["id"]
    assert json_of(mem("remember", TEXT, "--json"))["status"] == "reinforced"
    for _ in range(2):
        assert mem("outcome", first, "worked").returncode == 0
    earned = _shown(mem, first)
    assert (earned["reinforcements"], round(earned["worked"])) == (1, 2)

    new = json_of(mem("revise", first, REVISED, "--json"))["id"]

    assert _record(_shown(mem, new)) == _as(earned)
    shown = mem("show", new).stdout
    assert "reinforcements: 1\n" in shown
    assert "outcomes:       worked 2.00, failed 0.00, partial 0.00 (score +0.50)" in shown
    (hit,) = json_of(mem("recall", "integration tests", "--json"))["hits"]
    assert hit["id"] == new
    assert (hit["reinforcements"], hit["outcome_score"]) == (1, pytest.approx(0.5, abs=1e-3))
    # The old version keeps its own record, as history.
    assert _record(_shown(mem, first)) == _as(earned)


def test_revising_a_revision_carries_what_both_earned(mem: MemRunner) -> None:
    first = json_of(mem("remember", TEXT, "--json"))["id"]
    assert mem("outcome", first, "worked").returncode == 0
    second = json_of(mem("revise", first, REVISED, "--json"))["id"]
    assert mem("outcome", second, "failed").returncode == 0
    assert mem("outcome", second, "partial").returncode == 0
    earned = _shown(mem, second)

    third = json_of(mem("revise", second, AGAIN, "--json"))["id"]

    newest = _shown(mem, third)
    assert _record(newest) == _as(earned)
    assert (round(newest["worked"]), round(newest["failed"]), round(newest["partial"])) == (1, 1, 1)
    assert newest["supersedes"] == second
