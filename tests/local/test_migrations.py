"""A store written by an older schema is backed up, then migrated forward, losing nothing."""

import sqlite3
from pathlib import Path

from memmesh.local._db import _statements
from memmesh.local._schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from memmesh.local.recall import recall
from memmesh.local.store import DB_FILENAME, Store


def _version_one_store(home: Path) -> Path:
    """A real schema-1 store holding one item, made as the first release made it."""
    with Store(home, author="tester") as store:
        store.remember("The billing service retries webhooks 5 times")
    path = home / DB_FILENAME
    conn = sqlite3.connect(path)
    with conn:
        for version in range(SCHEMA_VERSION, 1, -1):
            assert version == 2, "teach this test how to undo the newer migration"
            conn.execute("DROP TABLE registry")
        conn.execute("PRAGMA user_version = 1")
    conn.close()
    return path


def test_the_registry_migration_exists() -> None:
    assert SCHEMA_VERSION >= 2
    assert "CREATE TABLE registry" in MIGRATIONS[2]
    assert len(_statements(MIGRATIONS[2])) == 3


def test_a_version_one_store_is_backed_up_then_migrated(home: Path) -> None:
    path = _version_one_store(home)

    with Store(home, author="tester") as store:
        found = recall(store, "how often are webhooks retried", record=False)
        with store.db.read() as conn:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]

    assert [hit.item.text for hit in found.hits] == ["The billing service retries webhooks 5 times"]
    assert "registry" in tables
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
