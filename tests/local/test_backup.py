"""Backups of a live store and restoring one: a consistent copy, the newest few kept, and a
restore that checks the copy whole before it replaces anything."""

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memmesh.local._schema import SCHEMA_VERSION
from memmesh.local.backup import backup, held, restore
from memmesh.local.errors import RestoreRefused
from memmesh.local.store import Store
from tests.conftest import mode_of

NOW = 1_764_614_152.0  # 2025-12-01T18:35:52Z


def _texts(home: Path) -> list[str]:
    with Store(home) as store:
        return sorted(item.text for item in store.items(status=None))


def test_a_backup_is_a_private_self_contained_copy_named_by_the_utc_time(
    store: Store, tmp_path: Path
) -> None:
    store.remember("Use uv, not pip")
    made = backup(store, tmp_path / "backups", keep=5, now=NOW)
    assert made.path.name == "memory-20251201T183552Z.db"
    assert made.pruned == []
    assert mode_of(made.path) == 0o600
    assert mode_of(made.path.parent) == 0o700
    assert not Path(f"{made.path}-wal").exists()
    conn = sqlite3.connect(made.path)
    assert conn.execute("SELECT text FROM items").fetchall() == [("Use uv, not pip",)]
    conn.close()


def test_backups_keep_the_newest_n_of_their_own_and_no_other_file(
    store: Store, tmp_path: Path
) -> None:
    folder = tmp_path / "backups"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    (folder / "memory-old.db").write_text("mine too")
    made = [backup(store, folder, keep=2, now=NOW + n) for n in range(4)]
    made.append(backup(store, folder, keep=2, now=NOW + 3))  # the same second again
    left = sorted(p.name for p in folder.iterdir())
    assert left == [
        "memory-20251201T183555Z-1.db", "memory-20251201T183555Z.db", "memory-old.db",
        "notes.txt",
    ]  # fmt: skip
    assert made[-1].pruned == [folder / "memory-20251201T183554Z.db"]


def test_restore_puts_the_copy_in_place_and_keeps_the_store_it_replaced(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Store(home) as store:
        store.remember("Use uv, not pip")
        made = backup(store, tmp_path / "backups", keep=5, now=NOW)
        store.remember("Deploys freeze on Fridays")
    done = restore(home, made.path, now=NOW)
    assert done.version == SCHEMA_VERSION
    assert done.aside == home / "memory.db.before-restore-20251201T183552Z"
    assert _texts(home) == ["Use uv, not pip"]
    assert mode_of(home / "memory.db") == 0o600
    aside = sqlite3.connect(done.aside)
    assert len(aside.execute("SELECT id FROM items").fetchall()) == 2
    aside.close()


def _refused(home: Path, source: Path) -> str:
    with pytest.raises(RestoreRefused) as raised:
        restore(home, source, now=NOW, wait=0)
    assert sorted(p.name for p in home.iterdir() if "restor" in p.name) == []
    return str(raised.value)


def _with_version(path: Path, version: int) -> Path:
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.close()
    return path


@pytest.fixture
def kept(tmp_path: Path) -> Path:
    """A home with one item, and a backup of it in ``backups/``."""
    home = tmp_path / "home"
    with Store(home) as store:
        store.remember("Use uv, not pip")
        backup(store, tmp_path / "backups", keep=5, now=NOW)
    return home


def test_restore_refuses_a_file_that_is_not_sqlite_and_replaces_nothing(
    kept: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("hello" * 40)
    assert _refused(kept, bad) == f"{bad} was not restored: it is not a SQLite database; " \
        "nothing was replaced"  # fmt: skip
    assert _texts(kept) == ["Use uv, not pip"]


def test_restore_refuses_another_programs_database(kept: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    assert "it is not a memmesh store" in _refused(kept, other)
    assert _texts(kept) == ["Use uv, not pip"]


def test_restore_refuses_a_newer_schema(kept: Path, tmp_path: Path) -> None:
    (copy,) = (tmp_path / "backups").iterdir()
    newer = _with_version(copy, SCHEMA_VERSION + 1)
    assert f"its schema version {SCHEMA_VERSION + 1} is newer than this memmesh reads " \
        f"({SCHEMA_VERSION}); upgrade memmesh" in _refused(kept, newer)  # fmt: skip


def test_restore_refuses_a_copy_that_fails_its_integrity_check(kept: Path, tmp_path: Path) -> None:
    (copy,) = (tmp_path / "backups").iterdir()
    data = bytearray(copy.read_bytes())
    page = 4096
    data[page * 2 + 8 : page * 2 + 400] = b"\xff" * 392  # a b-tree page's cells
    copy.write_bytes(bytes(data))
    message = _refused(kept, copy)
    assert "integrity check failed" in message or "cannot be read as a database" in message
    assert _texts(kept) == ["Use uv, not pip"]


def test_restore_refuses_while_another_process_holds_the_store(kept: Path, tmp_path: Path) -> None:
    (copy,) = (tmp_path / "backups").iterdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
         "c.execute('SELECT 1 FROM items').fetchall(); print('open', flush=True); "
         "sys.stdin.read()", str(kept / "memory.db")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "open\n"
        assert held(kept / "memory.db")
        assert "another process holds the store open" in _refused(kept, copy)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)
        assert holder.stdout is not None
        holder.stdout.close()
    assert not held(kept / "memory.db")


def test_restore_takes_the_tables_of_the_owners_it_is_given_and_refuses_others(
    tmp_path: Path,
) -> None:
    from memmesh.peer._disclosures import DISCLOSURES_SCHEMA
    from memmesh.registry._schema import REGISTRY_SCHEMA

    home = tmp_path / "home"
    with Store(home) as store:
        store.remember("Use uv, not pip")
        store.migrate(REGISTRY_SCHEMA)
        store.migrate(DISCLOSURES_SCHEMA)
        made = backup(store, tmp_path / "backups", keep=5, now=NOW)

    with pytest.raises(RestoreRefused, match=r"does not define \(index peer_disclosures_asker, "):
        restore(home, made.path, now=NOW, schemas=(REGISTRY_SCHEMA,))
    done = restore(home, made.path, now=NOW, schemas=(REGISTRY_SCHEMA, DISCLOSURES_SCHEMA))

    assert done.version == SCHEMA_VERSION
    assert _texts(home) == ["Use uv, not pip"]
