"""The registry creates and migrates its own table in the store file, and adopts an old one."""

import sqlite3
from pathlib import Path

import pytest

from memmesh.local import SchemaTooNew
from memmesh.local.store import DB_FILENAME, Store
from memmesh.policy.config import Policy
from memmesh.registry import Identity, Registry, publish
from memmesh.registry._schema import REGISTRY_SCHEMA
from tests.registry._helpers import TEAM


def _tables(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()


def _published_then(home: Path, identity: Identity, policy: Policy, *statements: str) -> str:
    """One item published in a fresh store, then ``statements`` run on its file behind the
    store's back (to make it look as an older memmesh left it); returns the item's id."""
    with Store(home, author="tester") as store:
        registry = Registry(store, identity, TEAM)
        item, _ = store.remember("The billing service retries webhooks 5 times", kind="decision")
        publish(registry, policy, [item.id])
    conn = sqlite3.connect(home / DB_FILENAME)
    with conn:
        for statement in statements:
            conn.execute(statement)
    conn.close()
    return item.id


def test_a_store_alone_has_no_registry_table_until_the_registry_opens(
    home: Path, identity: Identity
) -> None:
    with Store(home, author="tester") as store:
        assert "registry" not in _tables(store.path)
        Registry(store, identity, TEAM)
        assert "registry" in _tables(store.path)
        conn = sqlite3.connect(store.path)
        try:
            rows = conn.execute("SELECT owner, version FROM schema_versions").fetchall()
        finally:
            conn.close()
    assert rows == [("registry", REGISTRY_SCHEMA.version)]


def test_a_log_made_before_the_registry_kept_its_own_migrations_is_adopted(
    home: Path, identity: Identity, policy: Policy
) -> None:
    # As an older memmesh left it: schema 4, its version 2 having made the registry's table.
    item_id = _published_then(
        home,
        identity,
        policy,
        "DROP TABLE schema_versions",
        "DROP TABLE recall_traces",
        "DROP TABLE team_given",
        "DROP TABLE team_tallies",
        "DROP TABLE team_tally_cursor",
        "DROP TABLE inbox",
        "DROP TABLE item_anchors",
        "DROP TABLE item_recalls",
        "DROP INDEX events_item",
        "ALTER TABLE items DROP COLUMN valid_from",
        "ALTER TABLE items DROP COLUMN valid_until",
        "ALTER TABLE items DROP COLUMN coauthors",
        "PRAGMA user_version = 4",
    )

    with Store(home, author="tester") as store:
        registry = Registry(store, identity, TEAM)
        assert [entry.item_id for entry in registry.entries()] == [item_id]
        assert registry.verify() == []
        assert list(registry.live()) == [item_id]
    assert len(list(home.glob(f"{DB_FILENAME}.v4-*.bak"))) == 1


def test_a_registry_table_newer_than_this_memmesh_is_refused(
    home: Path, identity: Identity
) -> None:
    with Store(home, author="tester") as store:
        Registry(store, identity, TEAM)
    conn = sqlite3.connect(home / DB_FILENAME)
    with conn:
        conn.execute("UPDATE schema_versions SET version = 99 WHERE owner = 'registry'")
    conn.close()

    with Store(home, author="tester") as store, pytest.raises(SchemaTooNew) as refused:
        Registry(store, identity, TEAM)
    assert "registry tables have schema version 99" in refused.value.message


def test_a_log_from_before_receipts_gains_the_receipts_table_and_keeps_every_entry(
    home: Path, identity: Identity, policy: Policy
) -> None:
    # As the registry's schema 1 left it: no receipts table yet.
    item_id = _published_then(
        home, identity, policy, "DROP TABLE registry_receipts",
        "UPDATE schema_versions SET version = 1 WHERE owner = 'registry'",
    )  # fmt: skip

    with Store(home, author="tester") as store:
        registry = Registry(store, identity, TEAM)
        assert [entry.item_id for entry in registry.entries()] == [item_id]
        assert registry.receipts() == []
        assert registry.verify() == []
    assert "registry_receipts" in _tables(home / DB_FILENAME)
    assert len(list(home.glob(f"{DB_FILENAME}.registry-v1-*.bak"))) == 1
