"""`forget` and `revise` as a member: the local change and the retraction it causes, on real
stores, a real registry and (for the push) a real coordinator on loopback."""

from pathlib import Path

from memmesh.local.store import Store
from memmesh.team.changes import forget, revise
from tests.team._team import NOWHERE, Member, Team

SCHEDULER = "We chose Postgres advisory locks for the job scheduler"


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
    assert forgotten.warning is None
    assert _log(ada) == [("publication", item_id, True), ("retraction", item_id, False)]


def test_forgetting_a_private_item_retracts_nothing(loopback_team: Team) -> None:
    ada = loopback_team.add("ada")
    item_id = ada.remember(SCHEDULER)
    with Store(ada.home, author="ada") as store:
        forgotten = forget(ada.home, store, item_id)
    assert (forgotten.item.status, forgotten.retracted) == ("archived", [])
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
    assert _log(ada) == [("publication", old_id, True), ("retraction", old_id, False)]


def test_retraction_pushed_at_once_with_auto_sync_reaches_the_coordinator(
    loopback_team: Team,
) -> None:
    ada = loopback_team.add("ada", auto_sync=True)
    item_id = ada.share(SCHEDULER)
    with Store(ada.home, author="ada") as store:
        forgotten = forget(ada.home, store, item_id)
    assert forgotten.warning is None
    assert _log(ada) == [("publication", item_id, True), ("retraction", item_id, True)]


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
