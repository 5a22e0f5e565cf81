"""The dates an item holds between: how they are read, and recall answering only with items
in force (the rest explained as ``not_in_force``)."""

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memmesh.embed import HashingEmbedder
from memmesh.local import InvalidInput
from memmesh.local._db import _statements
from memmesh.local._fts5_tokens import register
from memmesh.local._recall import Recall, recall
from memmesh.local._schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from memmesh.local.ids import new_id
from memmesh.local.store import DB_FILENAME, Store, content_hash
from memmesh.local.validity import in_force, parse_date, set_validity
from tests._clock import FakeClock

WEBHOOKS = "The billing service retries failed webhooks 5 times"
QUERY = "how many times are failed webhooks retried"
DAY = 86_400.0


def _utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> float:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC).timestamp()


def _explained(store: Store) -> Recall:
    return recall(store, QUERY, record=False, explain=True)


def _hit_ids(answer: Recall) -> list[str]:
    return [hit.item.id for hit in answer.hits]


def test_a_date_alone_is_its_first_second() -> None:
    assert parse_date("2026-12-20") == _utc(2026, 12, 20)
    assert parse_date(" 2026-12-20 ") == _utc(2026, 12, 20)


@pytest.mark.parametrize("given", ["2026-12-20", "20261220"])
def test_a_date_alone_until_its_end_is_the_first_second_of_the_next_day(given: str) -> None:
    assert parse_date(given, end_of_day=True) == _utc(2026, 12, 21)


def test_a_date_and_time_is_read_in_utc_unless_it_names_its_offset() -> None:
    assert parse_date("2026-12-20T10:30") == _utc(2026, 12, 20, 10, 30)
    assert parse_date("2026-12-20T10:30:15") == _utc(2026, 12, 20, 10, 30, 15)
    assert parse_date("2026-12-20T10:30+02:00") == _utc(2026, 12, 20, 8, 30)
    assert parse_date("2026-12-20T10:30Z") == _utc(2026, 12, 20, 10, 30)
    # A time given is the moment meant, to its end of day or not.
    assert parse_date("2026-12-20T10:30", end_of_day=True) == _utc(2026, 12, 20, 10, 30)


@pytest.mark.parametrize(
    ("given", "end_of_day"),
    [
        ("tomorrow", False),
        ("", False),
        ("2026-13-01", False),
        ("20/12/2026", False),
        ("2026-12-20T25:00", False),
        ("9999-12-31", True),  # its end would be past the last date there is
    ],
)
def test_text_that_is_no_date_is_refused_naming_the_forms(given: str, end_of_day: bool) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_date(given, end_of_day=end_of_day)
    assert "YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS] (UTC)" in str(refused.value)
    assert repr(given) in str(refused.value)


def test_an_item_holds_from_its_start_up_to_but_not_at_its_end() -> None:
    assert in_force(None, None, 0.0)
    assert in_force(10.0, None, 10.0)
    assert not in_force(10.0, None, 9.0)
    assert in_force(None, 20.0, 19.9)
    assert not in_force(None, 20.0, 20.0)
    assert in_force(10.0, 20.0, 15.0)


def test_an_item_past_its_until_is_not_recalled_and_explained_as_not_in_force(
    timed: Store, clock: FakeClock
) -> None:
    item, _ = timed.remember(WEBHOOKS)
    with timed.transaction() as tx:
        set_validity(tx, item.id, None, clock.now + DAY, clock.now)
    assert _hit_ids(_explained(timed)) == [item.id]

    clock.now += 2 * DAY

    answer = _explained(timed)
    assert answer.hits == ()
    assert answer.explanation is not None
    (left,) = [left for left in answer.explanation.left_out if left.item.id == item.id]
    assert left.reason == "not_in_force"
    assert timed.get(item.id).status == "active"  # nothing hidden for good: it only lapsed


def test_an_item_before_its_from_is_not_recalled_until_then(timed: Store, clock: FakeClock) -> None:
    item, _ = timed.remember(WEBHOOKS)
    with timed.transaction() as tx:
        set_validity(tx, item.id, clock.now + DAY, None, clock.now)

    answer = _explained(timed)
    assert answer.hits == ()
    assert answer.explanation is not None
    assert [left.reason for left in answer.explanation.left_out if left.item.id == item.id] == [
        "not_in_force"
    ]
    assert recall(timed, QUERY, record=False).hits == ()

    clock.now += DAY
    assert _hit_ids(recall(timed, QUERY, record=False)) == [item.id]


def test_the_dates_are_kept_on_the_item(timed: Store, clock: FakeClock) -> None:
    item, _ = timed.remember(WEBHOOKS)
    with timed.transaction() as tx:
        set_validity(tx, item.id, clock.now - DAY, clock.now + DAY, clock.now)
    held = timed.get(item.id)
    assert (held.valid_from, held.valid_until) == (clock.now - DAY, clock.now + DAY)
    assert held.to_dict()["valid_until"] == "2023-11-15T22:13:20+00:00"


def test_a_revision_holds_between_the_same_dates(timed: Store, clock: FakeClock) -> None:
    item, _ = timed.remember(WEBHOOKS)
    with timed.transaction() as tx:
        set_validity(tx, item.id, None, clock.now + DAY, clock.now)

    _, new = timed.revise(item.id, WEBHOOKS + ", then dropped")

    assert (new.valid_from, new.valid_until) == (None, clock.now + DAY)


def _remembered_holding(store: Store, start: float, until: float) -> None:
    """Remember an item holding from ``start`` until ``until``, in one transaction."""
    with store.transaction() as tx:
        item, _ = store.remember(WEBHOOKS, tx=tx)
        set_validity(tx, item.id, start, until, store.clock())


@pytest.mark.parametrize("until_offset", [0.0, -DAY])
def test_an_until_not_after_the_from_is_refused_and_nothing_written(
    timed: Store, clock: FakeClock, until_offset: float
) -> None:
    with pytest.raises(InvalidInput, match="must come after"):
        _remembered_holding(timed, clock.now, clock.now + until_offset)
    assert timed.items(status=None) == []
    assert timed.revision() == 0


def test_dates_refused_on_an_existing_item_leave_it_as_it_was(
    timed: Store, clock: FakeClock
) -> None:
    item, _ = timed.remember(WEBHOOKS)
    revision = timed.revision()
    clock.now += DAY

    with pytest.raises(InvalidInput), timed.transaction() as tx:
        set_validity(tx, item.id, clock.now + DAY, clock.now, clock.now)

    assert timed.get(item.id) == item
    assert timed.revision() == revision


def test_a_malformed_id_is_refused(timed: Store, clock: FakeClock) -> None:
    with pytest.raises(InvalidInput, match="is not an item id"), timed.transaction() as tx:
        set_validity(tx, "not-an-id", None, clock.now, clock.now)


def _version_nine_store(home: Path) -> list[tuple[str, str, str]]:
    """A real schema-9 store, as the release before the dates an item holds between made it:
    two active items and an archived one; their (id, text, status)."""
    home.mkdir(parents=True)
    embedder = HashingEmbedder()
    items = [(new_id(), WEBHOOKS, "active"), (new_id(), "Deploys happen on Tuesdays", "active"),
             (new_id(), "The old staging host is db-2", "archived")]  # fmt: skip
    conn = sqlite3.connect(home / DB_FILENAME)
    register(conn)  # version 7's triggers index the words this function makes
    with conn:
        for version in range(1, 10):
            for statement in _statements(MIGRATIONS[version]):
                conn.execute(statement)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("PRAGMA user_version = 9")
        conn.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)",
            [("embedder", embedder.name), ("embedder_fingerprint", embedder.fingerprint)],
        )
        for rev, (item_id, text, status) in enumerate(items, start=1):
            conn.execute(
                "INSERT INTO items (id, text, kind, project, author, created_at, updated_at, "
                "content_hash, vector, rev, status) "
                "VALUES (?, ?, 'fact', 'global', 'tester', 0, 0, ?, ?, ?, ?)",
                (item_id, text, content_hash(text), embedder.embed([text])[0].tobytes(), rev,
                 status),
            )  # fmt: skip
    conn.close()
    return items


def test_a_version_nine_store_migrates_keeping_every_item_with_no_dates_or_coauthors(
    home: Path,
) -> None:
    items = _version_nine_store(home)

    with Store(home, author="tester") as store:
        kept = store.items(status=None)
        with store.read() as tx:
            raw = tx.execute(
                "SELECT id, valid_from, valid_until, coauthors FROM items ORDER BY seq"
            ).fetchall()
            anchors = tx.execute("SELECT count(*) FROM item_anchors").fetchone()[0]
            recalls = tx.execute("SELECT count(*) FROM item_recalls").fetchone()[0]
            version = tx.execute("PRAGMA user_version").fetchone()[0]
        found = recall(store, QUERY, record=False)

    assert sorted((i.id, i.text, i.status) for i in kept) == sorted(items)
    assert raw == [(item_id, None, None, "[]") for item_id, _, _ in items]
    assert all((i.valid_from, i.valid_until, i.coauthors) == (None, None, ()) for i in kept)
    assert (anchors, recalls, version) == (0, 0, SCHEMA_VERSION)
    assert [hit.item.id for hit in found.hits] == [items[0][0]]
    assert len(list(home.glob(f"{DB_FILENAME}.v9-*.bak"))) == 1
