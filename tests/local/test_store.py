"""Writing and reading items in the local store: remember, reinforce, get, forget, revise."""

import sqlite3
from pathlib import Path

import pytest

from memmesh.local.errors import AmbiguousId, InvalidInput, ItemNotFound, NotActive
from memmesh.local.items import MAX_TAGS, MAX_TEXT_BYTES
from memmesh.local.store import Store
from tests._clock import FakeClock

WEBHOOKS = "The billing service retries webhooks 5 times"
DAY = 24 * 3600.0


def row_counts(path: Path) -> tuple[int, int]:
    """Rows in ``items`` and ``events``, read through a separate connection."""
    conn = sqlite3.connect(path)
    try:
        items = conn.execute("SELECT count(*) FROM items").fetchone()[0]
        events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    finally:
        conn.close()
    return int(items), int(events)


def test_remember_creates_an_item_with_its_fields(store: Store) -> None:
    item, status = store.remember(
        WEBHOOKS, kind="gotcha", project="billing", tags=["Webhooks", "retries"]
    )
    assert status == "created"
    assert len(item.id) == 26
    assert item.text == WEBHOOKS
    assert item.kind == "gotcha"
    assert item.project == "billing"
    assert item.tags == ("webhooks", "retries")
    assert item.author == "tester"
    assert item.status == "active"
    assert item.reinforcements == 0
    assert item.outcome_score == 0.0
    assert store.get(item.id) == item


def test_remember_strips_surrounding_whitespace(store: Store) -> None:
    item, _ = store.remember(f"  \n{WEBHOOKS}\t ")
    assert item.text == WEBHOOKS


@pytest.mark.parametrize(
    "variant",
    [
        WEBHOOKS,
        WEBHOOKS.upper(),
        "  the   billing service\nretries webhooks 5 times  ",
        WEBHOOKS + ".",
        WEBHOOKS + "!",
        WEBHOOKS + "...",
    ],
)
def test_exact_duplicate_reinforces_instead_of_adding(store: Store, variant: str) -> None:
    first, _ = store.remember(WEBHOOKS)
    again, status = store.remember(variant)
    assert status == "reinforced"
    assert again.id == first.id
    assert again.text == WEBHOOKS
    assert again.reinforcements == 1
    assert len(store.items()) == 1


def test_exact_duplicate_by_another_author_reinforces(home: Path) -> None:
    with Store(home, author="alice") as alice:
        first, _ = alice.remember(WEBHOOKS)
    with Store(home, author="bob") as bob:
        again, status = bob.remember(WEBHOOKS.lower() + ".")
        assert status == "reinforced"
        assert again.id == first.id
        assert again.author == "alice"
        assert len(bob.items()) == 1


def test_each_reinforcement_counts(store: Store) -> None:
    for _ in range(3):
        store.remember(WEBHOOKS)
    (item,) = store.items()
    assert item.reinforcements == 2


@pytest.mark.parametrize(
    "near",
    [
        "The billing service retries the webhooks 5 times",
        "Billing service retries webhooks 5 times",
    ],
)
def test_near_duplicate_by_the_same_author_reinforces(store: Store, near: str) -> None:
    first, _ = store.remember(WEBHOOKS)
    again, status = store.remember(near)
    assert status == "reinforced"
    assert again.id == first.id
    assert again.text == WEBHOOKS
    assert len(store.items()) == 1


def test_near_duplicate_with_an_extra_word_by_the_same_author_reinforces(store: Store) -> None:
    first, _ = store.remember("Run migrations with make migrate before starting the API")
    _, status = store.remember("Always run migrations with make migrate before starting the API")
    assert status == "reinforced"
    assert [item.id for item in store.items()] == [first.id]


def test_near_duplicate_by_another_author_is_a_new_item(home: Path) -> None:
    with Store(home, author="alice") as alice:
        first, _ = alice.remember(WEBHOOKS)
    with Store(home, author="bob") as bob:
        second, status = bob.remember("The billing service retries the webhooks 5 times")
        assert status == "created"
        assert second.id != first.id
        assert second.author == "bob"
        assert {item.id for item in bob.items()} == {first.id, second.id}


@pytest.mark.parametrize(
    "different",
    [
        "The billing service retries webhooks 3 times",
        "The billing service does not retry webhooks 5 times",
        "The billing service doesn't retry webhooks 5 times",
        "The billing service never retries webhooks 5 times",
    ],
)
def test_a_related_but_different_fact_is_a_new_item(store: Store, different: str) -> None:
    first, _ = store.remember(WEBHOOKS)
    second, status = store.remember(different)
    assert status == "created"
    assert second.id != first.id
    assert second.text == different
    assert len(store.items()) == 2
    assert store.get(first.id).reinforcements == 0


def test_a_negation_with_a_typographic_apostrophe_is_a_new_item(store: Store) -> None:
    store.remember("The staging deploy runs database migrations")
    _, status = store.remember("The staging deploy doesn\u2019t run database migrations")
    assert status == "created"


def test_the_same_text_in_another_project_is_a_new_item(store: Store) -> None:
    first, _ = store.remember(WEBHOOKS, project="billing")
    second, status = store.remember(WEBHOOKS, project="shop")
    assert status == "created"
    assert second.id != first.id
    assert second.project == "shop"


def test_reinforcing_merges_tags_in_order_without_repeats(store: Store) -> None:
    store.remember(WEBHOOKS, tags=["billing", "webhooks"])
    merged, status = store.remember(WEBHOOKS, tags=["Webhooks", "retries"])
    assert status == "reinforced"
    assert merged.tags == ("billing", "webhooks", "retries")
    assert store.get(merged.id).tags == ("billing", "webhooks", "retries")


def test_tags_are_lower_cased_and_deduplicated(store: Store) -> None:
    item, _ = store.remember(WEBHOOKS, tags=["CI", "ci", "Deploy"])
    assert item.tags == ("ci", "deploy")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"text": WEBHOOKS, "kind": "rumour"},
        {"text": WEBHOOKS, "kind": "Fact"},
        {"text": WEBHOOKS, "project": "my project"},
        {"text": WEBHOOKS, "project": ""},
        {"text": WEBHOOKS, "project": "-leading-dash"},
        {"text": WEBHOOKS, "project": "p" * 65},
        {"text": WEBHOOKS, "tags": ["ok", "not ok"]},
        {"text": WEBHOOKS, "tags": [""]},
        {"text": WEBHOOKS, "tags": [f"t{i}" for i in range(MAX_TAGS + 1)]},
        {"text": ""},
        {"text": " \n\t "},
        {"text": "x" * (9 * 1024)},
        {"text": "é" * (MAX_TEXT_BYTES // 2 + 1)},
        {"text": "before\x00after"},
        {"text": "lone \ud800 surrogate"},
    ],
    ids=[
        "unknown-kind",
        "capitalised-kind",
        "project-with-space",
        "empty-project",
        "project-leading-dash",
        "project-too-long",
        "tag-with-space",
        "empty-tag",
        "too-many-tags",
        "empty-text",
        "blank-text",
        "9-KiB-text",
        "over-8-KiB-in-utf8",
        "nul-character",
        "lone-surrogate",
    ],
)
def test_invalid_input_is_refused_and_changes_nothing(
    store: Store, kwargs: dict[str, object]
) -> None:
    store.remember("An existing fact about the deploy pipeline")
    before = row_counts(store.path)
    with pytest.raises(InvalidInput):
        store.remember(**kwargs)  # type: ignore[arg-type]
    assert row_counts(store.path) == before


def test_invalid_tags_on_a_duplicate_do_not_reinforce(store: Store) -> None:
    first, _ = store.remember(WEBHOOKS, tags=["billing"])
    before = row_counts(store.path)
    with pytest.raises(InvalidInput):
        store.remember(WEBHOOKS, tags=["bad tag"])
    assert row_counts(store.path) == before
    assert store.get(first.id).reinforcements == 0
    assert store.get(first.id).tags == ("billing",)


def test_reinforcing_past_the_tag_limit_is_refused_and_changes_nothing(store: Store) -> None:
    first, _ = store.remember(WEBHOOKS, tags=[f"a{i}" for i in range(MAX_TAGS)])
    before = row_counts(store.path)
    with pytest.raises(InvalidInput, match="tags"):
        store.remember(WEBHOOKS, tags=["one-more"])
    assert row_counts(store.path) == before
    assert store.get(first.id).reinforcements == 0


def test_text_of_exactly_8_kib_is_accepted(store: Store) -> None:
    item, status = store.remember("y" * MAX_TEXT_BYTES)
    assert status == "created"
    assert len(item.text) == MAX_TEXT_BYTES


def test_get_by_full_id_unique_prefix_and_lower_case(home: Path) -> None:
    clock = FakeClock()
    with Store(home, author="tester", clock=clock) as store:
        old, _ = store.remember("An old fact about the API gateway")
        # Four ULID characters span about three days of milliseconds.
        clock.now += 30 * DAY
        new, _ = store.remember("A new fact about the mobile app")
        assert old.id[:4] != new.id[:4]
        assert store.get(old.id) == old
        assert store.get(new.id[:4]).id == new.id
        assert store.get(old.id[:6].lower()).id == old.id
        assert store.get(f"  {new.id[:5]} ").id == new.id


@pytest.mark.parametrize("unknown", ["01ZZZZZZZZZZZZZZZZZZZZZZZZ", "ZZZZ", "not-an-id!"])
def test_get_an_unknown_id_raises_item_not_found(store: Store, unknown: str) -> None:
    store.remember(WEBHOOKS)
    with pytest.raises(ItemNotFound) as caught:
        store.get(unknown)
    assert caught.value.item_id == unknown


@pytest.mark.parametrize("length", [0, 1, 3])
def test_get_a_prefix_shorter_than_four_characters_is_refused_as_too_short(
    store: Store, length: int
) -> None:
    item, _ = store.remember(WEBHOOKS)
    with pytest.raises(InvalidInput) as caught:
        store.get(item.id[:length])
    assert caught.value.message == (
        f"id prefix {item.id[:length]!r} is too short: give at least 4 characters"
    )


def test_get_an_ambiguous_prefix_raises_ambiguous_id(home: Path) -> None:
    # Items made in the same millisecond share the ten-character time part of their ULIDs.
    with Store(home, author="tester", clock=FakeClock()) as store:
        first, _ = store.remember("Fact one about the build cache")
        second, _ = store.remember("Fact two about the linter config")
        third, _ = store.remember("Fact three about the staging cluster")
        assert first.id[:10] == second.id[:10] == third.id[:10]
        with pytest.raises(AmbiguousId) as caught:
            store.get(first.id[:4])
        assert caught.value.prefix == first.id[:4]
        assert caught.value.count == 3
        assert "matches 3 items" in str(caught.value)
        assert len(caught.value.candidates) == 3
        assert store.get(second.id).id == second.id


def test_forget_archives_and_keeps_the_item(store: Store) -> None:
    item, _ = store.remember(WEBHOOKS)
    archived = store.forget(item.id)
    assert archived.id == item.id
    assert archived.status == "archived"
    assert store.get(item.id).status == "archived"
    assert store.items() == []
    assert [i.id for i in store.items(status="archived")] == [item.id]


def test_forget_twice_raises_not_active(store: Store) -> None:
    item, _ = store.remember(WEBHOOKS)
    store.forget(item.id)
    with pytest.raises(NotActive) as caught:
        store.forget(item.id)
    assert caught.value.item_id == item.id
    assert caught.value.item_status == "archived"


def test_forget_an_unknown_id_raises_item_not_found(store: Store) -> None:
    with pytest.raises(ItemNotFound):
        store.forget("01ZZZZZZZZZZZZZZZZZZZZZZZZ")


def test_remembering_a_forgotten_text_creates_a_new_item(store: Store) -> None:
    item, _ = store.remember(WEBHOOKS)
    store.forget(item.id)
    again, status = store.remember(WEBHOOKS)
    assert status == "created"
    assert again.id != item.id


def test_revise_creates_a_superseding_item_and_keeps_the_old(store: Store) -> None:
    item, _ = store.remember(WEBHOOKS, kind="gotcha", project="billing", tags=["webhooks"])
    old, new = store.revise(item.id, "The billing service retries webhooks 7 times")
    assert new.id != item.id
    assert new.text == "The billing service retries webhooks 7 times"
    assert new.supersedes == item.id
    assert (new.kind, new.project, new.tags, new.author) == (
        "gotcha",
        "billing",
        ("webhooks",),
        "tester",
    )
    assert new.status == "active"
    assert old.id == item.id
    assert old.text == WEBHOOKS
    assert old.status == "superseded"
    assert old.superseded_by == new.id
    assert store.get(item.id) == old
    assert [i.id for i in store.items()] == [new.id]
    assert [i.id for i in store.items(status="superseded")] == [item.id]


def test_revise_with_the_same_text_is_refused(store: Store) -> None:
    item, _ = store.remember(WEBHOOKS)
    before = row_counts(store.path)
    for same in (WEBHOOKS, f"  {WEBHOOKS}\n"):
        with pytest.raises(InvalidInput, match="same as the old one"):
            store.revise(item.id, same)
    assert row_counts(store.path) == before
    assert store.get(item.id).status == "active"


def test_revise_a_superseded_item_raises_not_active(store: Store) -> None:
    item, _ = store.remember(WEBHOOKS)
    store.revise(item.id, "The billing service retries webhooks 7 times")
    with pytest.raises(NotActive) as caught:
        store.revise(item.id, "The billing service retries webhooks 9 times")
    assert caught.value.item_status == "superseded"


def test_revise_with_invalid_text_changes_nothing(store: Store) -> None:
    item, _ = store.remember(WEBHOOKS)
    before = row_counts(store.path)
    with pytest.raises(InvalidInput):
        store.revise(item.id, "   ")
    assert row_counts(store.path) == before


def test_items_filter_by_project_kind_and_status_newest_first(store: Store) -> None:
    a, _ = store.remember("Use pnpm in the frontend monorepo", kind="convention", project="web")
    b, _ = store.remember("Deploys freeze on Fridays after noon", kind="decision")
    c, _ = store.remember("Port 5433 is the test Postgres", kind="fact", project="web")
    d, _ = store.remember("The old CI runner is gone", kind="fact", project="web")
    store.forget(d.id)

    assert [i.id for i in store.items()] == [c.id, b.id, a.id]
    assert [i.id for i in store.items(project="web")] == [c.id, a.id]
    assert [i.id for i in store.items(project="global")] == [b.id]
    assert [i.id for i in store.items(kind="fact")] == [c.id]
    assert [i.id for i in store.items(project="web", kind="convention")] == [a.id]
    assert [i.id for i in store.items(status="archived")] == [d.id]
    assert [i.id for i in store.items(status=None)] == [d.id, c.id, b.id, a.id]
    assert [i.id for i in store.items(status=None, limit=2)] == [d.id, c.id]
    assert store.items(project="nowhere") == []


def test_items_refuses_an_invalid_kind_or_project_filter(store: Store) -> None:
    with pytest.raises(InvalidInput):
        store.items(kind="rumour")
    with pytest.raises(InvalidInput):
        store.items(project="bad name")


def test_items_survive_reopening_the_store(home: Path) -> None:
    with Store(home, author="tester") as store:
        item, _ = store.remember(WEBHOOKS, tags=["billing"])
    with Store(home, author="tester") as reopened:
        assert reopened.get(item.id) == item


def test_writes_are_journaled(store: Store) -> None:
    item, _ = store.remember(WEBHOOKS)
    store.remember(WEBHOOKS)
    _, new = store.revise(item.id, "The billing service retries webhooks 7 times")
    store.forget(new.id)
    conn = sqlite3.connect(store.path)
    try:
        kinds = [row[0] for row in conn.execute("SELECT kind FROM events ORDER BY seq")]
    finally:
        conn.close()
    assert kinds == ["remember", "reinforce", "revise", "forget"]


# -- transactions handed to the owners of tables beside the store's ---------------------------


def test_a_transaction_is_unusable_once_its_block_ends(store: Store) -> None:
    with store.transaction() as tx:
        tx.execute("SELECT 1")
    with pytest.raises(AssertionError, match="after its `with` block"):
        tx.execute("SELECT 1")


def test_a_write_refuses_a_read_transaction(store: Store) -> None:
    item, _ = store.remember("The billing service retries webhooks 5 times")
    with store.read() as tx, pytest.raises(AssertionError, match="read transaction"):
        store.purge(item.id, tx=tx)
    assert store.get(item.id).text == "The billing service retries webhooks 5 times"


def test_other_owners_cannot_touch_the_stores_own_settings(store: Store) -> None:
    with store.transaction() as tx:
        store.set_setting(tx, "registry_head", "1:abc")
        with pytest.raises(AssertionError, match="the store's own setting"):
            store.set_setting(tx, "embedder_fingerprint", "forged")
    assert store.setting("registry_head") == "1:abc"
    with pytest.raises(AssertionError, match="the store's own setting"):
        store.setting("embedder")


def test_the_items_changed_since_a_revision_are_every_write_after_it(store: Store) -> None:
    kept, _ = store.remember(WEBHOOKS, kind="gotcha")
    forgotten, _ = store.remember("Deploys freeze on Fridays", kind="convention")
    since = store.revision()
    assert store.changed_since(since) == []
    store.forget(forgotten.id)
    new, _ = store.remember("The ledger rounds half to even", kind="fact")
    store.outcome(kept.id, "worked")
    changed = {item.id: item for item in store.changed_since(since)}
    assert set(changed) == {forgotten.id, new.id, kept.id}
    assert changed[forgotten.id].status == "archived"
    assert changed[kept.id].worked == pytest.approx(1.0)
    assert {item.id for item in store.changed_since(0)} == {kept.id, forgotten.id, new.id}
    assert store.changed_since(store.revision()) == []
