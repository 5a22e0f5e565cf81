"""An item's history as the journal logged it: each change and each outcome, newest first."""

from memmesh.local.history import events_of
from memmesh.local.store import Store


def test_an_item_s_changes_and_outcomes_come_back_newest_first(store: Store) -> None:
    item, _ = store.remember("The nightly export runs at 02:00 UTC", kind="fact")
    other, _ = store.remember("The staging database is reset every Monday")
    store.remember("The nightly export runs at 02:00 UTC")  # reinforces the first
    store.outcome(item.id, "worked")
    store.outcome(item.id, "failed")
    store.edit(item.id, kind="command", add_tags=["cron"])
    store.forget(item.id)
    store.unforget(item.id)
    _old, new = store.revise(item.id, "The nightly export runs at 03:00 UTC")

    events = events_of(store, [item.id])

    assert [e.kind for e in events] == [
        "revise", "unforget", "forget", "edit", "outcome", "outcome", "reinforce", "remember",
    ]  # fmt: skip
    assert {e.item_id for e in events} == {item.id}
    assert events[0].data == {"new_id": new.id}
    assert events[3].data == {"changed": ["kind", "tags"]}
    assert [e.data["result"] for e in events if e.kind == "outcome"] == ["failed", "worked"]
    assert all(e.at >= events[-1].at for e in events)
    # The versions of a revision chain together, as they happened.
    store.outcome(new.id, "partial")
    both = events_of(store, [item.id, new.id])
    assert [(e.kind, e.item_id) for e in both[:2]] == [("outcome", new.id), ("revise", item.id)]
    assert len(both) == len(events) + 1
    assert other.id not in {e.item_id for e in both}


def test_the_newest_events_are_kept_to_the_limit(store: Store) -> None:
    item, _ = store.remember("Deploys freeze on Fridays after 15:00")
    for _ in range(5):
        store.outcome(item.id, "worked")
    assert [e.kind for e in events_of(store, [item.id], limit=3)] == ["outcome"] * 3
    assert events_of(store, []) == []
    assert events_of(store, ["01J0000000000000000000NONE"]) == []
