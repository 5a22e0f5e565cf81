"""A revision in the store: the new version takes over the old one's track record, at once."""

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memmesh.local import tallies
from memmesh.local.items import Item
from memmesh.local.store import Store
from memmesh.local.tallies import Received
from tests._clock import FakeClock

WEBHOOKS = "The billing service retries webhooks 5 times"
REVISED = "The billing service retries webhooks 7 times"
DAY = 24 * 3600.0
BOB = "bbbbbbbbbbbbbbbb"


def _record(item: Item) -> tuple[int, float, float, float, float]:
    return (item.reinforcements, item.worked, item.failed, item.partial, item.outcome_score)


def test_the_new_version_keeps_reinforcements_and_outcomes_and_they_fade_on(
    timed: Store, clock: FakeClock
) -> None:
    item, _ = timed.remember(WEBHOOKS)
    timed.remember(WEBHOOKS)
    for result in ("worked", "worked", "failed", "partial"):
        timed.outcome(item.id, result)
    clock.now += 30 * DAY

    old, new = timed.revise(item.id, REVISED)

    assert _record(new) == _record(old) == _record(timed.get(item.id))
    assert new.reinforcements == 1
    assert new.worked == pytest.approx(2 * 0.5 ** (30 / 90))
    # The counts keep the clock they were counted by: revising does not make them recent.
    clock.now += 90 * DAY
    assert _record(timed.get(new.id)) == _record(timed.get(old.id))
    assert timed.get(new.id).worked == pytest.approx(2 * 0.5 ** (120 / 90))
    # A new version is written now; what it earns from here on is its own.
    assert (new.created_at, old.created_at) == (clock.now - 90 * DAY, item.created_at)
    timed.outcome(new.id, "worked")
    assert timed.get(new.id).worked == pytest.approx(1 + 2 * 0.5 ** (120 / 90))
    assert timed.get(old.id).worked == pytest.approx(2 * 0.5 ** (120 / 90))


def test_revising_a_revision_carries_the_record_again(timed: Store) -> None:
    item, _ = timed.remember(WEBHOOKS)
    timed.outcome(item.id, "worked")
    _, second = timed.revise(item.id, REVISED)
    timed.outcome(second.id, "failed")
    timed.remember(REVISED)

    _, third = timed.revise(second.id, "The billing service retries webhooks 9 times")

    assert _record(third) == _record(timed.get(second.id))
    assert (third.reinforcements, third.worked, third.failed) == (1, 1.0, 1.0)


def test_teammates_tallies_stay_with_the_version_they_were_given(timed: Store) -> None:
    item, _ = timed.remember(WEBHOOKS)
    assert tallies.fold(timed, [Received(BOB, item.id, 2, 2, 0, 0, 10.0)]) == 1

    _, new = timed.revise(item.id, REVISED)

    assert tallies.team_records(timed, [item.id, new.id]) == {item.id: (2, 0, 0)}


_KILLED_REVISING = """
import os, signal, sys
from pathlib import Path
from memmesh.local import journal
from memmesh.local.store import Store

logged = journal.log

def log(conn, now, kind, *args, **fields):
    if kind == "revise":  # the revision's last statement: every row of it is written
        os.kill(os.getpid(), signal.SIGKILL)
    return logged(conn, now, kind, *args, **fields)

journal.log = log
with Store(Path(sys.argv[1]), author="tester") as store:
    store.revise(sys.argv[2], sys.argv[3])
"""


def test_a_kill_during_a_revision_leaves_the_old_item_with_its_record(home: Path) -> None:
    with Store(home, author="tester") as store:
        item, _ = store.remember(WEBHOOKS)
        store.outcome(item.id, "worked")
        before = store.items(status=None)

    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_REVISING, str(home), item.id, REVISED],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    with Store(home, author="tester") as store:
        after = store.items(status=None)
        assert [(i.id, i.status, round(i.worked, 6)) for i in after] == [
            (i.id, i.status, round(i.worked, 6)) for i in before
        ]
        _, new = store.revise(item.id, REVISED)  # a retry finishes the job
        assert new.supersedes == item.id
        assert new.worked == pytest.approx(1.0)
