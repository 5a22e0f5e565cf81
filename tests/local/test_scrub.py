"""A purged item's text leaves every file of the store's folder: the row, the full-text index's
older segments and the WAL, scrubbed once per batch of purges, and at the next open after a
process died before its scrub."""

import sqlite3
import threading
from pathlib import Path

import pytest

from memmesh.local import _db, _scrub
from memmesh.local._recall import recall
from memmesh.local.store import Store
from tests._traces import SecretItem, all_needles, found_anywhere, secret_items, traces

SECRETS = secret_items(6)
KEPT = secret_items(3, seed=8, long_one=False)


def _put(store: Store, items: list[SecretItem], prefix: str) -> list[str]:
    """Copies of ``items`` (as the coordinator keeps its members' items); their ids."""
    ids = [f"{prefix}{n:04d}" for n in range(len(items))]
    for item_id, item in zip(ids, items, strict=True):
        store.put(
            item_id=item_id, text=item.text, kind="fact", project="global", tags=(item.tag,),
            author="bob", created_at=0.0, vector=None,
        )  # fmt: skip
    return ids


def _filled(store: Store) -> list[str]:
    """The store with :data:`SECRETS` and :data:`KEPT` in it, every word searched once (so
    that the in-memory lexicon holds them too); the ids of the secrets."""
    ids = _put(store, SECRETS, "copy-secret-")
    _put(store, KEPT, "copy-kept-")
    assert found_anywhere(store.home, SECRETS) == all_needles(SECRETS)
    assert len(recall(store, SECRETS[1].word, mode="lexical", record=False).hits) == 1
    return ids


def _purge_in_one_transaction(store: Store, ids: list[str]) -> None:
    """Purge ``ids`` as the coordinator does, in a transaction of the caller's (no scrub)."""
    with store.transaction() as tx:
        for item_id in ids:
            assert store.purge(item_id, tx=tx)


def test_a_purge_leaves_none_of_the_item_s_text_in_any_file_of_the_home(home: Path) -> None:
    with Store(home, lexicon=True) as store:
        ids = _filled(store)

        assert all(store.purge(item_id) for item_id in ids)

        assert traces(home, SECRETS) == {}
        assert recall(store, SECRETS[1].word, mode="lexical", record=False).abstained
        assert found_anywhere(home, KEPT) == all_needles(KEPT)


def test_purges_in_the_caller_s_transaction_leave_their_text_until_its_one_scrub(
    home: Path,
) -> None:
    with Store(home) as store:
        _purge_in_one_transaction(store, _filled(store))
        left = traces(home, SECRETS)

        assert store.scrub() is True

        assert left != {}  # the caller scrubs, once, after its commit
        assert traces(home, SECRETS) == {}


def test_a_scrub_owed_by_a_process_that_died_is_done_when_the_store_next_opens(
    home: Path,
) -> None:
    with Store(home) as store:
        _purge_in_one_transaction(store, _filled(store)[:1])
    # Closed without its scrub: the WAL is gone, the index's older segments still hold terms.
    assert traces(home, SECRETS[:1]) != {}

    with Store(home):
        assert traces(home, SECRETS[:1]) == {}


def test_a_reader_on_an_older_snapshot_is_waited_for_and_past_the_timeout_the_scrub_stays_owed(
    monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    monkeypatch.setattr(_db, "BUSY_TIMEOUT_SECONDS", 0.3)
    with Store(home) as store:
        ids = _filled(store)
        reader = sqlite3.connect(store.path, isolation_level=None, check_same_thread=False)
        try:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM items").fetchone()  # holds its snapshot
            letting_go = threading.Timer(0.1, reader.execute, ("COMMIT",))
            letting_go.start()
            assert store.purge(ids[0])  # its scrub waits for the reader to let go
            letting_go.join()
            assert traces(home, SECRETS[:1]) == {}

            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM items").fetchone()
            assert store.purge(ids[1])  # the reader outlasts the wait
            assert traces(home, SECRETS[1:2]) != {}
            assert _scrub.owed(store._db)  # and the next open would scrub
            reader.execute("COMMIT")
        finally:
            reader.close()

        assert store.scrub() is True

        assert traces(home, SECRETS[:2]) == {}
        assert not _scrub.owed(store._db)
