"""A store written by an older schema is backed up, then migrated forward, losing nothing."""

import sqlite3
from pathlib import Path

import pytest

from memmesh import text as text_module
from memmesh.embed import HashingEmbedder
from memmesh.local._db import _statements
from memmesh.local._recall import recall
from memmesh.local._schema import APPLICATION_ID, FTS_TOKENIZE, MIGRATIONS, SCHEMA_VERSION
from memmesh.local.errors import StoreError
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


CAFE = "the café on the corner serves ristretto"
JAPANESE = "デプロイの前に必ずステージング環境でテストする"
ARCHIVED = "the old café menu, archived"


def _version_six_store(home: Path) -> Path:
    """A real schema-6 store, its full-text index made by FTS5's own tokenizer from the raw
    text, as every release before version 7 made it: two active items and an archived one."""
    home.mkdir(parents=True)
    path = home / DB_FILENAME
    embedder = HashingEmbedder()
    conn = sqlite3.connect(path)
    with conn:
        for version in range(1, 7):
            for statement in _statements(MIGRATIONS[version]):
                conn.execute(statement)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("PRAGMA user_version = 6")
        conn.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)",
            [("embedder", embedder.name), ("embedder_fingerprint", embedder.fingerprint)],
        )
        for rev, (text, status) in enumerate(
            [(CAFE, "active"), (JAPANESE, "active"), (ARCHIVED, "archived")], start=1
        ):
            conn.execute(
                "INSERT INTO items (id, text, kind, project, tags, author, created_at, "
                "updated_at, content_hash, vector, rev, status) "
                "VALUES (?, ?, 'fact', 'global', '[\"menu\"]', 'tester', 0, 0, ?, ?, ?, ?)",
                (new_id(), text, content_hash(text), embedder.embed([text])[0].tobytes(), rev,
                 status),
            )  # fmt: skip
    conn.close()
    return path


def _fts_of(path: Path) -> tuple[int, str, list[str]]:
    """The file's schema version, how its full-text index tokenizes, and the items it finds
    by their tag."""
    conn = sqlite3.connect(path)
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'items_fts'").fetchone()
        conn.execute("INSERT INTO items_fts (items_fts) VALUES ('integrity-check')")
        found = conn.execute(
            "SELECT text FROM items WHERE seq IN "
            "(SELECT rowid FROM items_fts WHERE items_fts MATCH 'tags : menu') ORDER BY seq"
        ).fetchall()
    finally:
        conn.close()
    return version, sql, [text for (text,) in found]


def test_version_seven_rebuilds_the_full_text_index_from_the_items(home: Path) -> None:
    path = _version_six_store(home)
    assert _fts_of(path)[0] == 6

    with Store(home, author="tester") as store:
        cafe = recall(store, "cafe", explain=True, record=False)
        partial = recall(store, "ステージング環境", record=False)
        menu = recall(store, "menu", mode="lexical", record=False)
        store.remember("a new café opens on Friday")
        friday = recall(store, "CAFE friday", record=False)
        assert friday.hits[0].item.text == "a new café opens on Friday"

    assert [hit.item.text for hit in cafe.hits] == [CAFE]
    assert cafe.hits[0].parts is not None
    assert cafe.hits[0].parts.bm25 > 0
    assert [hit.item.text for hit in partial.hits] == [JAPANESE]
    assert {hit.item.text for hit in menu.hits} == {CAFE, JAPANESE}  # the tags are indexed
    version, sql, found = _fts_of(path)
    assert version == SCHEMA_VERSION  # version 7 rebuilt the index, and later ones ran
    assert FTS_TOKENIZE in sql
    assert found == [CAFE, JAPANESE]  # never the archived item
    assert len(list(home.glob(f"{DB_FILENAME}.v6-*.bak"))) == 1


def test_an_interrupted_rebuild_leaves_the_version_six_index_whole(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _version_six_store(home)
    before = _fts_of(path)
    calls = 0
    words = text_module.words

    def dies_midway(value: str) -> list[str]:
        nonlocal calls
        calls += 1
        if calls == 3:  # the first item's text and tags went in; the process dies here
            raise KeyboardInterrupt
        return words(value)

    monkeypatch.setattr(text_module, "words", dies_midway)
    with pytest.raises((KeyboardInterrupt, StoreError)):
        Store(home, author="tester")
    assert calls == 3
    assert _fts_of(path) == before
    assert before[2] == [CAFE, JAPANESE]

    monkeypatch.setattr(text_module, "words", words)
    with Store(home, author="tester") as store:
        assert [hit.item.text for hit in recall(store, "cafe", record=False).hits] == [CAFE]
    assert _fts_of(path)[0] == SCHEMA_VERSION
