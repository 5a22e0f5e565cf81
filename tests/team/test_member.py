"""`Member.retract` and `Member.sync`: what a member's registry records and the coordinator
acknowledges, with real stores and a real coordinator on loopback."""

from pathlib import Path

import pytest

from memmesh.local.store import Store
from memmesh.policy import PolicyError
from memmesh.registry import NotPublished
from memmesh.team.member import Member as Acting
from tests.team._team import NOWHERE, Member, Team

LOCKS = "We chose Postgres advisory locks for the job scheduler"


def _log(member: Member) -> list[tuple[str, str, bool]]:
    with member.registry() as registry:
        return [(e.kind, e.item_id, e.acked) for e in registry.entries()]


def test_sync_pushes_what_the_coordinator_has_not_acknowledged(loopback_team: Team) -> None:
    ada = loopback_team.add("ada")
    item_id = ada.remember(LOCKS)
    ada.publish(item_id)
    with Store(ada.home, author="ada") as store:
        report = Acting(store, ada.identity, ada.policy()).sync()
    assert (report.sent, report.accepted, report.rejected) == (1, 1, [])
    assert _log(ada) == [("publication", item_id, True)]


def test_sync_without_a_coordinator_refuses(tmp_path: Path) -> None:
    ada = Team(tmp_path, None).add("ada")
    with Store(ada.home, author="ada") as store:
        member = Acting(store, ada.identity, ada.policy())
        with pytest.raises(PolicyError, match="names no coordinator"):
            member.sync()


def test_retract_records_a_retraction_and_auto_syncs_it(loopback_team: Team) -> None:
    ada = loopback_team.add("ada", auto_sync=True)
    item_id = ada.share(LOCKS)
    with Store(ada.home, author="ada") as store:
        entries, warning = Acting(store, ada.identity, ada.policy()).retract([item_id[:8]])
    assert [(e.kind, e.item_id) for e in entries] == [("retraction", item_id)]
    assert warning is None
    assert _log(ada) == [("publication", item_id, True), ("retraction", item_id, True)]


def test_retract_works_without_a_policy_and_leaves_the_push_for_later(tmp_path: Path) -> None:
    ada = Team(tmp_path, NOWHERE).add("ada", auto_sync=True)
    item_id = ada.remember(LOCKS)
    ada.publish(item_id)
    (ada.home / "team.yaml").unlink()
    with Store(ada.home, author="ada") as store:
        entries, warning = Acting(store, ada.identity, None).retract([item_id])
    assert [e.kind for e in entries] == ["retraction"]
    assert warning is None  # no policy: auto-sync is not asked for
    assert _log(ada) == [("publication", item_id, False), ("retraction", item_id, False)]


def test_retracting_an_unpublished_item_refuses(loopback_team: Team) -> None:
    ada = loopback_team.add("ada")
    item_id = ada.remember(LOCKS)
    with Store(ada.home, author="ada") as store:
        member = Acting(store, ada.identity, ada.policy())
        with pytest.raises(NotPublished):
            member.retract([item_id])
    assert _log(ada) == []
