"""The full-text index stays exact through every kind of write: only active items, in scope."""

from pathlib import Path

from memmesh.local._recall import recall
from memmesh.local.store import Store


def _integrity_check(store: Store) -> None:
    with store._db.read() as conn:
        conn.execute("INSERT INTO items_fts (items_fts) VALUES ('integrity-check')")


def test_index_survives_reinforce_revise_forget_outcome_and_put(home: Path) -> None:
    with Store(home, author="tester") as store:
        first, _ = store.remember("The billing service retries webhooks 5 times", tags=["a"])
        for index in range(6):  # each reinforcement rewrites the tags, so the index entry
            store.remember("the billing service retries webhooks 5 times.", tags=[f"t{index}"])
        web, _ = store.remember("Deploys to production go through Argo CD", project="web")
        store.outcome(first.id, "worked")
        store.forget(web.id)
        _, newer = store.revise(first.id, "The billing service retries webhooks 8 times")
        store.put(
            item_id="01JCOPY0000000000000000001", text="Cached copy about webhook retries",
            kind="fact", project="global", tags=(), author="bob", created_at=0.0, vector=None,
        )  # fmt: skip
        store.put(
            item_id="01JCOPY0000000000000000001", text="Cached copy, revised, about queues",
            kind="fact", project="global", tags=(), author="bob", created_at=0.0, vector=None,
        )  # fmt: skip
        assert store.purge("01JCOPY0000000000000000001")
        _integrity_check(store)

        hits = recall(store, "webhooks retries", mode="lexical", record=False).hits
        assert [hit.item.id for hit in hits] == [newer.id]
        assert recall(store, "Argo deploys", project="web", mode="lexical", record=False).abstained
        assert recall(store, "queues", mode="lexical", record=False).abstained


def test_scope_is_part_of_the_match(home: Path) -> None:
    with Store(home, author="tester") as store:
        store.remember("Flaky test quarantine lives in ci/quarantine.txt", project="billing-api")
        store.remember("Flaky test quarantine lives in ci/flaky.yaml", project="billing-api-v2")
        hits = recall(
            store, "flaky quarantine", project="billing-api", mode="lexical", record=False
        )
        assert [hit.item.project for hit in hits.hits] == ["billing-api"]
