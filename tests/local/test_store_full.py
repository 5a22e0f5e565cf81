"""A store whose disk is full (SQLite's own SQLITE_FULL, from capping the file's pages): the
write is refused as StoreFull, which names no file, nothing of it is kept, and the store goes
on reading and, once there is room, writing."""

import pytest

from memmesh.local.errors import StoreFull
from memmesh.local.store import Store

RUNBOOK = "Runbook: the quokka ledger rotates its signing keys every Tuesday at noon. "


def test_a_write_to_a_full_store_is_store_full_and_leaves_the_store_usable(store: Store) -> None:
    kept, _ = store.remember("The billing service retries webhooks 5 times")
    with store.transaction() as tx:
        pages = tx.execute("PRAGMA page_count").fetchone()[0]
        tx.execute(f"PRAGMA max_page_count = {pages}")

    def remember_runbooks() -> None:
        for n in range(50):
            store.remember(f"{n}: " + RUNBOOK * 100)

    with pytest.raises(StoreFull) as full:
        remember_runbooks()

    assert str(store.home) not in full.value.message
    assert full.value.path == str(store.home / "memory.db")
    assert store.get(kept.id).text == "The billing service retries webhooks 5 times"
    with store.transaction() as tx:
        tx.execute(f"PRAGMA max_page_count = {pages * 100}")
    _, status = store.remember("Deploys freeze on Fridays after noon")
    assert status == "created"
