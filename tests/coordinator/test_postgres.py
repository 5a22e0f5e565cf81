"""The coordinator on PostgreSQL, where it differs from its SQLite file: several coordinators
on one database serve one team as one (the feed in commit order, quotas, nonces, purges), the
same answers as on SQLite, and a database that cannot be reached said plainly."""

import threading
import time
from pathlib import Path

import pytest

from memmesh.coordinator import Coordinator
from memmesh.coordinator._postgres import ERASE_EVERY, FOLLOW_EVERY, PostgresStore
from memmesh.coordinator.errors import DatabaseUnavailable, QuotaExceeded
from memmesh.coordinator.protocol import (
    ChangesRequest,
    PublishItem,
    PublishRequest,
    RetractRequest,
)
from memmesh.coordinator.storage import without_password
from memmesh.local.errors import EmbedderMismatch
from memmesh.net.quotas import Quotas
from memmesh.net.search import SearchRequest
from memmesh.registry import Identity, create_identity
from memmesh.registry.envelopes import open_envelope, seal
from tests._signed import caller
from tests.registry._helpers import TEAM, publication, retraction

WORDS = (
    "billing webhook retry queue deploy staging cache migration schema index token build "
    "lint docker postgres redis invoice auth session cron backup restore alert"
).split()


def _text(n: int) -> str:
    picked = [WORDS[(n * 7 + k * 3) % len(WORDS)] for k in range(6)]
    return f"Note {n}: the {picked[0]} {picked[1]} needs {picked[2]} before {picked[3]} " + (
        f"and {picked[4]} {picked[5]}"
    )


def _envelopes(identity: Identity, first: int, count: int) -> list[PublishItem]:
    return [
        PublishItem(
            envelope=seal(
                publication(
                    identity, item_id=f"item-{n:05d}", text=_text(n), seq=n + 1,
                    embedder="hashing-test",
                ),
                identity,
            )
        )
        for n in range(first, first + count)
    ]  # fmt: skip


def _two(tmp_path: Path, url: str, **fields: object) -> tuple[Coordinator, Coordinator]:
    """Two coordinators on one database, as two processes on two hosts run them."""
    one = Coordinator(tmp_path / "host-1", team=TEAM, database=url, **fields)  # type: ignore[arg-type]
    two = Coordinator(tmp_path / "host-2", team=TEAM, database=url, **fields)  # type: ignore[arg-type]
    return one, two


def test_a_publication_through_one_coordinator_is_found_at_once_through_another(
    tmp_path: Path, database_url: str
) -> None:
    ada = create_identity(tmp_path / "ada")
    one, two = _two(tmp_path, database_url)
    try:
        one.publish(caller(ada), PublishRequest(items=_envelopes(ada, 0, 3)))
        hits = two.search(caller(ada), SearchRequest(query=_text(1), project="billing")).hits
        assert {open_envelope(h.envelope).item_id for h in hits} >= {"item-00001"}
        one.retract(caller(ada), RetractRequest(envelopes=[seal(
            retraction(ada, item_id="item-00001", seq=100), ada)]))  # fmt: skip
        hits = two.search(caller(ada), SearchRequest(query=_text(1), project="billing")).hits
        assert "item-00001" not in {open_envelope(h.envelope).item_id for h in hits}
    finally:
        one.close()
        two.close()


def test_the_feed_read_while_two_coordinators_write_never_skips_a_change(
    tmp_path: Path, database_url: str
) -> None:
    members = [create_identity(tmp_path / f"m{n}") for n in range(4)]
    one, two = _two(tmp_path, database_url)
    seen: dict[tuple[str, str], int] = {}
    cursor, done = 0, threading.Event()

    def follow() -> None:
        nonlocal cursor
        while True:
            finished = done.is_set()
            page = one.changes(ChangesRequest(cursor=cursor, limit=500))
            for change in page.changes:
                assert change.envelope is not None
                body = open_envelope(change.envelope)
                seen[(body.author_key, change.item_id)] = change.version
            cursor = page.next_cursor
            if finished and not page.more:
                return

    def write(coordinator: Coordinator, member: Identity) -> None:
        for first in range(0, 60, 6):
            coordinator.publish(caller(member), PublishRequest(items=_envelopes(member, first, 6)))

    follower = threading.Thread(target=follow)
    follower.start()
    writers = [
        threading.Thread(target=write, args=(one if n % 2 else two, member))
        for n, member in enumerate(members)
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    done.set()
    follower.join(timeout=30)
    try:
        assert len(seen) == 4 * 60  # every item, though it followed while they were written
        cursors = [c.cursor for c in one.changes(ChangesRequest(limit=500)).changes]
        assert cursors == sorted(cursors) == list(range(1, 241))
    finally:
        one.close()
        two.close()


def test_a_quota_holds_against_publishes_racing_through_two_coordinators(
    tmp_path: Path, database_url: str
) -> None:
    ada = create_identity(tmp_path / "ada")
    one, two = _two(tmp_path, database_url, quotas=Quotas(member_items=50))
    refused: list[QuotaExceeded] = []

    def publish(coordinator: Coordinator, first: int) -> None:
        for start in range(first, first + 40, 4):
            try:
                coordinator.publish(caller(ada), PublishRequest(items=_envelopes(ada, start, 4)))
            except QuotaExceeded as exc:
                refused.append(exc)

    racers = [threading.Thread(target=publish, args=(c, f)) for c, f in ((one, 0), (two, 40))]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    try:
        # Never past the quota: a batch whose check passed while another raced it stops at
        # the item that would pass it.
        assert 48 <= one.info().published <= 50
        assert refused
    finally:
        one.close()
        two.close()


def test_both_databases_give_the_same_answers(tmp_path: Path, database_url: str) -> None:
    ada, bob = create_identity(tmp_path / "ada"), create_identity(tmp_path / "bob")
    on_sqlite = Coordinator(tmp_path / "sqlite", team=TEAM)
    on_postgres = Coordinator(tmp_path / "postgres", team=TEAM, database=database_url)
    try:
        for coordinator in (on_sqlite, on_postgres):
            for member, first in ((ada, 0), (bob, 200)):
                for start in range(first, first + 200, 50):
                    request = PublishRequest(items=_envelopes(member, start, 50))
                    coordinator.publish(caller(member), request)
        overlaps = []
        for n in range(0, 400, 8):
            asked = SearchRequest(query=_text(n + 3)[8:60], project="billing", k=10)
            ids = [
                [open_envelope(h.envelope).item_id for h in c.search(caller(ada), asked).hits]
                for c in (on_sqlite, on_postgres)
            ]
            assert len(ids[0]) == 10
            overlaps.append(len(set(ids[0]) & set(ids[1])) / 10)
        assert sum(overlaps) / len(overlaps) >= 0.99
    finally:
        on_sqlite.close()
        on_postgres.close()


def test_a_database_that_cannot_be_reached_is_said_plainly(tmp_path: Path) -> None:
    url = f"postgresql://nobody@/memmesh?host={tmp_path / 'nowhere'}&connect_timeout=2"
    with pytest.raises(DatabaseUnavailable) as raised:
        Coordinator(tmp_path / "data", team=TEAM, database=url)
    assert (raised.value.status, raised.value.code) == (503, "database_unavailable")
    assert raised.value.database == url


def test_a_password_is_never_said(tmp_path: Path) -> None:
    url = f"postgresql://nobody:hunter2@/memmesh?host={tmp_path / 'nowhere'}&connect_timeout=2"
    with pytest.raises(DatabaseUnavailable) as raised:
        Coordinator(tmp_path / "data", team=TEAM, database=url)
    assert "hunter2" not in str(raised.value)
    assert "hunter2" not in raised.value.database


def test_a_second_embedder_on_a_database_that_has_one_is_refused(
    tmp_path: Path, database_url: str
) -> None:
    first = Coordinator(tmp_path / "one", team=TEAM, database=database_url)
    first.close()
    with pytest.raises(EmbedderMismatch):
        Coordinator(tmp_path / "two", team=TEAM, database=database_url, embedder="hashing")


def test_a_purge_leaves_another_host_s_cache_within_its_bound_without_a_search(
    tmp_path: Path, database_url: str
) -> None:
    ada = create_identity(tmp_path / "ada")
    one, two = _two(tmp_path, database_url)
    try:
        one.publish(caller(ada), PublishRequest(items=_envelopes(ada, 0, 2)))
        two.store.follow()
        secret = _text(1).encode()
        assert secret in (tmp_path / "host-2" / "search-cache" / "memory.db").read_bytes() + (
            (tmp_path / "host-2" / "search-cache" / "memory.db-wal").read_bytes()
        )
        one.retract(caller(ada), RetractRequest(envelopes=[seal(
            retraction(ada, item_id="item-00001", seq=100), ada)]))  # fmt: skip
        deadline = time.monotonic() + FOLLOW_EVERY + ERASE_EVERY + 5
        files = list((tmp_path / "host-2" / "search-cache").glob("memory.db*"))
        while any(secret in f.read_bytes() for f in files if f.exists()):
            assert time.monotonic() < deadline, "host 2's cache still holds the retracted text"
            time.sleep(0.2)
        # ... and the database's own rewrite was owed, then paid by a follower.
        assert isinstance(one.store, PostgresStore)
        while not _erased(one.store):
            assert time.monotonic() < deadline, "the rewrite of the purged rows never came"
            time.sleep(0.2)
    finally:
        one.close()
        two.close()


def _erased(store: PostgresStore) -> bool:
    with store.read() as tx:
        owed = tx.execute("SELECT 1 FROM coord_meta WHERE key = 'erase_owed'").fetchone()
    return owed is None


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("postgresql://ada:hunter2@db/memmesh", "postgresql://ada:***@db/memmesh"),
        ("postgresql://ada:hunter2@[db/x", "postgresql://ada:***@[db/x"),
        (
            "postgresql://ada:p@ss:w@rd@db:5432/m?sslmode=verify-full",
            "postgresql://ada:***@db:5432/m?sslmode=verify-full",
        ),
        ("postgresql://ada@db/memmesh", "postgresql://ada@db/memmesh"),
        ("postgresql:///memmesh?host=/run/pg", "postgresql:///memmesh?host=/run/pg"),
    ],
)
def test_a_url_is_said_without_its_password_however_it_is_written(url: str, said: str) -> None:
    assert without_password(url) == said
