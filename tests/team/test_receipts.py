"""Sync keeps the coordinator's receipt for each retraction it applied, once the receipt checks
out; status counts the retractions still without one; verify checks them again."""

from collections.abc import Callable
from pathlib import Path

import pytest

from memmesh.coordinator.protocol import Outcome, RetractRequest, RetractResponse
from memmesh.local.store import Store
from memmesh.registry import Identity, create_identity, open_envelope
from memmesh.registry.envelopes import FORMAT_VERSION, Receipt, Retraction, seal
from memmesh.team.member import Member as Acting
from memmesh.team.status import team_status
from tests.team._team import LOCKS, NOWHERE, TEAM, FakeSource, Member, serving

QUEUE = "The job scheduler queue uses Postgres locks with a thirty second lease"


def _receipts(
    signer: Identity, *, member_key: str | None = None, version_offset: int = 0
) -> Callable[[RetractRequest], RetractResponse]:
    """A coordinator's answer to retractions: each accepted, with a receipt ``signer`` signs
    (for ``member_key``, default the retraction's own, at the version plus
    ``version_offset``)."""

    def answer(request: RetractRequest) -> RetractResponse:
        results = []
        for envelope in request.envelopes:
            body = open_envelope(envelope)
            assert isinstance(body, Retraction)
            receipt = Receipt(
                format=FORMAT_VERSION, team=body.team, item_id=body.item_id,
                version=body.version + version_offset, author_key=signer.public_key_text,
                key_id=signer.key_id, seq=1, member_key=member_key or body.author_key,
                purged_at=1_700_000_000.0,
            )  # fmt: skip
            results.append(
                Outcome(
                    item_id=body.item_id, version=body.version, status="accepted",
                    receipt=seal(receipt, signer),
                )
            )  # fmt: skip
        return RetractResponse(results=results)

    return answer


def _retracted(ada: Member, *texts: str) -> list[str]:
    ids = [ada.remember(text) for text in texts]
    ada.publish(*ids)
    ada.retract(*ids)
    return ids


def _acting(ada: Member) -> Store:
    return Store(ada.home, author=ada.name)


def test_sync_keeps_each_retractions_receipt_and_status_counts_those_without(
    tmp_path: Path,
) -> None:
    coordinator_key = create_identity(tmp_path / "coordinator-key")
    fake = FakeSource()
    fake.on_retract = _receipts(coordinator_key)
    with serving(fake) as url:
        ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=url)
        ada.write_policy(coordinator_key=coordinator_key.public_key_text)
        locks, queue = _retracted(ada, LOCKS, QUEUE)
        report = ada.sync()
        unsent = ada.remember("Invoices are exported nightly at two")
        ada.publish(unsent)
        ada.retract(unsent)  # not synced: no receipt yet

    assert report.bad_receipts == []
    with _acting(ada) as store:
        acting = Acting(store, ada.identity, ada.policy())
        kept = acting.registry.receipts()
        status = team_status(acting)
        problems = acting.registry.verify()
    assert sorted((r.item_id, r.coordinator_key) for r in kept) == sorted(
        [(locks, coordinator_key.public_key_text), (queue, coordinator_key.public_key_text)]
    )
    assert status.unreceipted == [unsent]
    assert problems == []


@pytest.mark.parametrize("forgery", ["another_signer", "another_member", "another_version"])
def test_sync_refuses_a_receipt_that_does_not_check_out_and_keeps_none(
    tmp_path: Path, forgery: str
) -> None:
    coordinator_key = create_identity(tmp_path / "coordinator-key")
    someone = create_identity(tmp_path / "someone")
    fake = FakeSource()
    fake.on_retract = _receipts(
        someone if forgery == "another_signer" else coordinator_key,
        member_key=someone.public_key_text if forgery == "another_member" else None,
        version_offset=1 if forgery == "another_version" else 0,
    )
    with serving(fake) as url:
        ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=url)
        ada.write_policy(coordinator_key=coordinator_key.public_key_text)
        [locks] = _retracted(ada, LOCKS)
        report = ada.sync()

    [(item_id, reason)] = report.bad_receipts
    assert item_id == locks
    assert reason.startswith("it is ")
    with _acting(ada) as store:
        acting = Acting(store, ada.identity, ada.policy())
        assert acting.registry.receipts() == []
        assert team_status(acting).unreceipted == [locks]
        assert acting.registry.unacked() == []  # the retraction itself was applied


def test_status_lists_retractions_the_coordinator_gave_no_receipt_for(tmp_path: Path) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    [locks] = _retracted(ada, LOCKS)
    with _acting(ada) as store:
        assert team_status(Acting(store, ada.identity, ada.policy())).unreceipted == [locks]
