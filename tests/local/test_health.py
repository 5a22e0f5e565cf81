"""A store's figures over time for the health section: items by kind and project as they grew,
recalls with their latency percentiles and abstentions, outcomes, the inbox waiting, the file's
size; each kept right as the store changes, also by another process."""

import sqlite3
from pathlib import Path

from memmesh.local import health, inbox, journal
from memmesh.local.store import Store
from memmesh.policy.redaction import redact_text
from tests._clock import START, FakeClock

DAY = 86400.0


def _days(count: int) -> list[float]:
    """The ends of ``count`` days from START."""
    return [START + DAY * (n + 1) for n in range(count)]


def _log_recalls(store: Store, at: float, latencies: list[float], abstained: int = 0) -> None:
    """Recalls journaled as recall journals them, with chosen latencies (the last
    ``abstained`` of them returned nothing)."""
    with store._db.write() as conn:
        for n, ms in enumerate(latencies):
            hits = [] if n >= len(latencies) - abstained else ["01ABCDEFGH"]
            journal.log_recall(conn, at, "q", "global", "hybrid", 5, hits, latency_ms=ms)


def _nearest_rank(values: list[float], share: int) -> float:
    ordered = sorted(values)
    return ordered[max(1, -(-share * len(values) // 100)) - 1]


def test_items_are_counted_by_kind_and_project_as_they_grew(home: Path) -> None:
    clock = FakeClock()
    with Store(home, author="tester", clock=clock) as store:
        store.remember("Deploys run from main", kind="decision", project="shop")
        clock.now += DAY
        store.remember("Run make check before pushing", kind="command", project="shop")
        store.remember("Staging resets nightly", kind="fact")
        clock.now += DAY
        old, _ = store.remember("The cache key includes the locale", kind="gotcha")
        store.forget(old.id)

        counts = health.items(store, _days(3))

        assert counts.by_kind == {"decision": 1, "command": 1, "fact": 1}
        assert counts.by_kind == store.counts()["by_kind"]
        assert counts.by_project == store.counts()["by_project"] == {"shop": 2, "global": 1}
        assert counts.by_status == {"active": 3, "archived": 1}
        assert counts.kinds_before == {
            "command": [0, 1, 1],
            "decision": [1, 1, 1],
            "fact": [0, 1, 1],
        }
        assert counts.projects_before == {"global": [0, 1, 1], "shop": [1, 2, 2]}
        assert counts.vectors == 4


def test_counts_follow_every_later_change_without_reading_everything_again(home: Path) -> None:
    with Store(home, author="tester") as store:
        first, _ = store.remember("Deploys run from main", kind="decision", project="shop")
        second, _ = store.remember("Staging resets nightly")
        assert health.items(store, []).by_kind == {"decision": 1, "fact": 1}

        store.edit(second.id, kind="gotcha", project="ops")
        store.revise(first.id, "Deploys run from the release branch")
        third, _ = store.remember("Use UTC in logs", kind="convention")
        store.purge(third.id)
        store.remember("Staging resets nightly", project="ops")  # reinforces: no new item

        counts = health.items(store, [])
        assert counts.by_kind == store.counts()["by_kind"] == {"decision": 1, "gotcha": 1}
        assert counts.by_project == store.counts()["by_project"] == {"shop": 1, "ops": 1}
        assert counts.by_status == {"active": 2, "superseded": 1, "archived": 1}
        assert counts.vectors == 3  # the purged item keeps no vector


def test_counts_see_what_another_process_wrote_to_the_file(home: Path) -> None:
    with Store(home, author="tester") as store, Store(home, author="other") as other:
        store.remember("Deploys run from main")
        assert health.items(store, []).by_status == {"active": 1}

        made, _ = other.remember("The linter runs in CI", kind="convention", project="web")
        other.forget(made.id)
        other.remember("Staging resets nightly", kind="gotcha", project="web")

        counts = health.items(store, [])
        assert counts.by_status == {"active": 2, "archived": 1}
        assert counts.by_kind == {"fact": 1, "gotcha": 1}


def test_an_empty_store_counts_nothing(store: Store) -> None:
    counts = health.items(store, _days(2))

    assert counts == health.ItemCounts({}, {}, {}, {}, {}, 0)
    assert health.recalls(store, [(START, START + DAY)]) == [health.RecallFigures()]
    assert health.outcomes(store, [(START, START + DAY)]) == [
        {"worked": 0, "partial": 0, "failed": 0}
    ]
    assert health.pending_candidates(store) == 0


def test_recalls_are_counted_per_span_with_nearest_rank_percentiles(store: Store) -> None:
    first_day = [float(n) for n in range(1, 21)]  # 20 recalls: 1 ms ... 20 ms
    second_day = [7.5, 2.25, 40.0]
    _log_recalls(store, START + 10, first_day, abstained=3)
    _log_recalls(store, START + DAY + 10, second_day)
    _log_recalls(store, START - 10, [999.0])  # before the first span: in none

    spans = [
        (START, START + DAY),
        (START + DAY, START + 2 * DAY),
        (START + 2 * DAY, START + 3 * DAY),
    ]
    whole = (START, START + 3 * DAY)
    day1, day2, day3, both = health.recalls(store, [*spans, whole])

    assert day1 == health.RecallFigures(20, 3, 10.0, 19.0)
    assert day1.abstained_share == 15.0
    assert day2 == health.RecallFigures(3, 0, 7.5, 40.0)
    assert day3 == health.RecallFigures()
    assert day3.abstained_share is None
    everything = first_day + second_day
    assert both == health.RecallFigures(
        23, 3, _nearest_rank(everything, 50), _nearest_rank(everything, 95)
    )


def test_real_recalls_are_counted_with_the_latency_the_journal_kept(store: Store) -> None:
    from memmesh.local import recall

    store.remember("The billing service retries failed webhooks five times")
    recall(store, "how often are webhooks retried", k=3)
    recall(store, "quantum chromodynamics lattice", k=3)

    (figures,) = health.recalls(store, [(0.0, 4e9)])

    summary = store.journal_summary()
    assert figures.recalls == summary["recalls"] == 2
    assert figures.abstained == summary["abstained"]
    assert figures.p95_ms == summary["recall_latency_ms"]["p95"]


def test_outcomes_are_counted_per_span_by_result(home: Path) -> None:
    clock = FakeClock()
    with Store(home, author="tester", clock=clock) as store:
        item, _ = store.remember("Deploys run from main")
        store.outcome(item.id, "worked")
        store.outcome(item.id, "worked")
        store.outcome(item.id, "failed")
        clock.now += DAY
        store.outcome(item.id, "partial")

        spans = [(START, START + DAY), (START + DAY, START + 2 * DAY)]
        assert health.outcomes(store, spans) == [
            {"worked": 2, "partial": 0, "failed": 1},
            {"worked": 0, "partial": 1, "failed": 0},
        ]


def test_pending_candidates_are_those_not_decided_yet(store: Store) -> None:
    proposals = [inbox.Proposal(f"Candidate number {n} is a fact", "fact") for n in range(3)]
    made = inbox.propose(store, proposals, redact=redact_text)
    inbox.reject(store, made[0].candidate.id)

    assert health.pending_candidates(store) == 2


def test_the_store_files_are_measured_on_disk(store: Store) -> None:
    store.remember("Deploys run from main")

    files = health.store_files(store)

    assert files.database == store.path.stat().st_size > 0
    wal = Path(f"{store.path}-wal")
    assert files.wal == (wal.stat().st_size if wal.exists() else 0)


def test_a_store_put_back_from_a_copy_is_counted_again(home: Path, tmp_path: Path) -> None:
    with Store(home, author="tester") as store:
        store.remember("Deploys run from main")
        copy = tmp_path / "copy.db"
        store._db.backup(copy)
        store.remember("Staging resets nightly", kind="gotcha")
        store.remember("Use UTC in logs", kind="convention")
        assert sum(health.items(store, []).by_kind.values()) == 3

        source, target = sqlite3.connect(copy), sqlite3.connect(store.path)
        try:
            source.backup(target)
        finally:
            source.close()
            target.close()

        assert health.items(store, []).by_kind == {"fact": 1}


def test_hook_runs_of_the_last_day_name_the_failures(home: Path) -> None:
    from memmesh.local import hooklog

    hooklog.record_run(home, hooklog.HookRun(hook="prompt", at=START - DAY, error="too old"))
    hooklog.record_run(home, hooklog.HookRun(hook="prompt", at=START + 5, ms=12.0))
    hooklog.record_run(home, hooklog.HookRun(hook="capture", at=START + 9, error="boom"))

    assert health.hook_runs(home, START) == (
        2,
        [hooklog.HookRun(hook="capture", at=START + 9, error="boom")],
    )


def test_a_hooks_journal_that_cannot_be_read_is_no_figure(home: Path) -> None:
    from memmesh.local import _agentsfile

    home.mkdir()
    damaged = sqlite3.connect(home / _agentsfile.AGENTS_FILENAME)  # its marks, no tables
    try:
        damaged.execute(f"PRAGMA application_id = {_agentsfile._APPLICATION_ID}")
        damaged.execute(f"PRAGMA user_version = {_agentsfile.VERSION}")
        damaged.commit()
    finally:
        damaged.close()

    assert health.hook_runs(home, START) is None
    assert health.hook_recalls(home, [(START, START + DAY)]) is None
    assert health.hook_runs(home / "nowhere", START) == (0, [])


def test_the_prompt_hook_s_recalls_are_counted_per_span(home: Path) -> None:
    from memmesh.local import hooklog

    def run(
        at: float, ms: float, *, shown: bool = True, project: str = "shop", error: str = ""
    ) -> None:
        local_ids = ("01ABCDEFGH",) if shown else ()
        made = hooklog.HookRun(
            hook="prompt", at=at, ms=ms, local_ids=local_ids, project=project, error=error
        )
        hooklog.record_run(home, made)

    for ms in (30.0, 10.0, 20.0):
        run(START + 5, ms)
    run(START + 6, 40.0, shown=False)
    run(START + 7, 999.0, project="")  # a trivial prompt: nothing was recalled
    run(START + 8, 999.0, error="boom")
    hooklog.record_run(home, hooklog.HookRun(hook="capture", at=START + 9, ms=999.0))
    run(START + DAY + 1, 12.0)

    figures = health.hook_recalls(home, [(START, START + DAY), (START + DAY, START + 2 * DAY)])

    assert figures == [
        health.RecallFigures(4, 1, 20.0, 40.0),
        health.RecallFigures(1, 0, 12.0, 12.0),
    ]
    assert health.hook_recalls(home / "nowhere", [(START, START + DAY)]) == [health.RecallFigures()]
