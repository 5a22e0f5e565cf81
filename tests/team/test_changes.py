"""`forget` and `revise` as a member: the local change and the retraction it causes, on real
stores, a real registry and (for the push) a real coordinator on loopback."""

from pathlib import Path

from memmesh.local.store import Store
from memmesh.team.changes import forget, revise
from tests.team._team import NOWHERE, Member, Team

SCHEDULER = "We chose Postgres advisory locks for the job scheduler"
NOT_PUSHED = "teammates keep seeing the old text until `mem team sync` "


def _log(member: Member) -> list[tuple[str, str, bool]]:
    """The member's registry log: (kind, item id, acknowledged) oldest first."""
    with member.registry() as registry:
        return [(e.kind, e.item_id, e.acked) for e in registry.entries()]


def test_forgetting_a_published_item_retracts_it(loopback_team: Team) -> None:
    ada = loopback_team.add("ada")
    item_id = ada.share(SCHEDULER)
    with Store(ada.home, author="ada") as store:
        forgotten = forget(ada.home, store, item_id[:8])
    assert forgotten.item.id == item_id
    assert forgotten.item.status == "archived"
    assert forgotten.retracted == [item_id]
    assert forgotten.warning == NOT_PUSHED + "(auto_sync is off)"
    assert _log(ada) == [("publication", item_id, True), ("retraction", item_id, False)]


def test_forgetting_a_private_item_retracts_nothing(loopback_team: Team) -> None:
    ada = loopback_team.add("ada")
    item_id = ada.remember(SCHEDULER)
    with Store(ada.home, author="ada") as store:
        forgotten = forget(ada.home, store, item_id)
    assert (forgotten.item.status, forgotten.retracted, forgotten.warning) == ("archived", [], None)
    assert _log(ada) == []


def test_forgetting_without_a_key_only_archives(store: Store, home: Path) -> None:
    item, _ = store.remember(SCHEDULER)
    forgotten = forget(home, store, item.id)
    assert (forgotten.item.status, forgotten.retracted, forgotten.warning) == (
        "archived",
        [],
        None,
    )
    assert store.get(item.id).status == "archived"


def test_revising_a_published_item_retracts_the_old_version(loopback_team: Team) -> None:
    ada = loopback_team.add("ada")
    old_id = ada.share(SCHEDULER)
    with Store(ada.home, author="ada") as store:
        revised = revise(ada.home, store, old_id, SCHEDULER + ", not Redis")
    assert revised.old.id == old_id
    assert revised.new.text == SCHEDULER + ", not Redis"
    assert revised.new.supersedes == old_id
    assert revised.retracted == [old_id]
    assert revised.warning == NOT_PUSHED + "(auto_sync is off)"
    assert revised.unshared == (
        f"the revision is not shared until you publish it: `mem team publish {revised.new.id}`"
    )
    assert _log(ada) == [("publication", old_id, True), ("retraction", old_id, False)]


def test_forget_and_revise_with_auto_sync_push_the_retraction_at_once(
    loopback_team: Team,
) -> None:
    ada = loopback_team.add("ada", auto_sync=True)
    forgotten_id, revised_id = (
        ada.share(SCHEDULER),
        ada.share("Invoices are exported as Parquet files"),
    )
    with Store(ada.home, author="ada") as store:
        forgotten = forget(ada.home, store, forgotten_id)
        revised = revise(ada.home, store, revised_id, SCHEDULER + ", not Redis")
    assert (forgotten.warning, revised.warning) == (None, None)
    assert revised.unshared is not None  # the revision itself waits for a publish
    assert [entry for entry in _log(ada) if entry[0] == "retraction"] == [
        ("retraction", forgotten_id, True),
        ("retraction", revised_id, True),
    ]


def test_a_retraction_left_unpushed_says_why_it_was_not_pushed(loopback_team: Team) -> None:
    ada = loopback_team.add("ada", auto_sync=True)
    first, second = ada.share(SCHEDULER), ada.share("Invoices are exported as Parquet files")
    ada.write_policy(auto_sync=True, coordinator=None)
    with Store(ada.home, author="ada") as store:
        no_coordinator = forget(ada.home, store, first)
        (ada.home / "team.yaml").write_text("version: 1\nauto_synk: true\n", encoding="utf-8")
        unusable = forget(ada.home, store, second)
    assert no_coordinator.warning == NOT_PUSHED + "(team.yaml names no coordinator)"
    assert unusable.warning == NOT_PUSHED + "(team.yaml is unusable)"


def test_a_failed_push_is_a_warning_and_the_retraction_stays_queued(tmp_path: Path) -> None:
    unreachable = Team(tmp_path, NOWHERE)
    ada = unreachable.add("ada", auto_sync=True)
    item_id = ada.remember(SCHEDULER)
    ada.publish(item_id)
    with Store(ada.home, author="ada") as store:
        forgotten = forget(ada.home, store, item_id)
    assert forgotten.retracted == [item_id]
    assert forgotten.warning is not None
    assert forgotten.warning.endswith("run `mem team sync`")
    # The push got as far as setting the dead publication aside; the retraction waits.
    assert _log(ada) == [("publication", item_id, True), ("retraction", item_id, False)]
