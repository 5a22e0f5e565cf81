"""A store written by an older schema is backed up, then migrated forward, losing nothing."""

import sqlite3
from pathlib import Path

from memmesh.embed import HashingEmbedder
from memmesh.local._db import _statements
from memmesh.local._recall import recall
from memmesh.local._schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from memmesh.local.ids import new_id
from memmesh.local.store import DB_FILENAME, Store, content_hash


def _version_one_store(home: Path) -> Path:
    """A real schema-1 store holding one item, made as the first release made it."""
    home.mkdir(parents=True)
    path = home / DB_FILENAME
    embedder = HashingEmbedder()
    text = "The billing service retries webhooks 5 times"
    conn = sqlite3.connect(path)
    with conn:
        for statement in _statements(MIGRATIONS[1]):
            conn.execute(statement)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("PRAGMA user_version = 1")
        conn.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)",
            [("embedder", embedder.name), ("embedder_fingerprint", embedder.fingerprint)],
        )
        conn.execute(
            "INSERT INTO items (id, text, kind, project, author, created_at, updated_at, "
            "content_hash, vector, rev) VALUES (?, ?, 'fact', 'global', 'tester', 0, 0, ?, ?, 1)",
            (new_id(), text, content_hash(text), embedder.embed([text])[0].tobytes()),
        )
    conn.close()
    return path


def test_every_version_up_to_the_current_one_has_a_migration() -> None:
    assert sorted(MIGRATIONS) == list(range(1, SCHEMA_VERSION + 1))
    assert "scope" in MIGRATIONS[3]


def test_a_version_one_store_is_backed_up_then_migrated(home: Path) -> None:
    path = _version_one_store(home)

    with Store(home, author="tester") as store:
        found = recall(store, "how often are webhooks retried", record=False)
        with store._db.read() as conn:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]

    assert [hit.item.text for hit in found.hits] == ["The billing service retries webhooks 5 times"]
    assert "items_fts" in tables  # the scoped full-text index of version 3
    assert (version, app_id) == (SCHEMA_VERSION, APPLICATION_ID)
    backups = sorted(home.glob(f"{DB_FILENAME}.v1-*.bak"))
    assert len(backups) == 1
    backup = sqlite3.connect(backups[0])
    try:
        assert backup.execute("PRAGMA user_version").fetchone()[0] == 1
        assert backup.execute("SELECT count(*) FROM items").fetchone()[0] == 1
    finally:
        backup.close()
    assert path.exists()


def test_a_migrated_store_is_not_backed_up_again(home: Path) -> None:
    _version_one_store(home)
    Store(home, author="tester").close()
    Store(home, author="tester").close()
    assert len(list(home.glob(f"{DB_FILENAME}.v1-*.bak"))) == 1
