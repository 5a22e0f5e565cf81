"""Retraction receipts: the coordinator's own signed word that it purged an item, checkable
with the key it publishes as ``Info.coordinator_key``."""

import stat
from pathlib import Path

import pytest

from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.coordinator.protocol import (
    Info,
    Outcome,
    PublishItem,
    PublishRequest,
    RetractRequest,
    RetractResponse,
)
from memmesh.registry import Identity, create_identity
from memmesh.registry.envelopes import FORMAT_VERSION, Receipt, open_envelope, seal
from tests._clock import START, FakeClock
from tests._servers import running
from tests._signed import caller, signed_client
from tests.registry._helpers import TEAM, publication, retraction

ITEM = "01JABCDEFGHJKMNPQRSTVWXYZ0"


@pytest.fixture
def ada(tmp_path: Path) -> Identity:
    return create_identity(tmp_path / "ada")


def _retract(c: Coordinator, identity: Identity, **changes: object) -> Outcome:
    envelope = seal(retraction(identity, **changes), identity)
    (outcome,) = c.retract(caller(identity), RetractRequest(envelopes=[envelope])).results
    return outcome


def _receipt(outcome: Outcome) -> Receipt:
    assert outcome.receipt is not None
    body = open_envelope(outcome.receipt)  # the signature holds for the key inside
    assert isinstance(body, Receipt)
    return body


def test_an_applied_retraction_carries_a_receipt_signed_by_the_coordinator(
    coordinator: Coordinator, ada: Identity, clock: FakeClock, tmp_path: Path
) -> None:
    published = seal(publication(ada, version=3), ada)
    coordinator.publish(caller(ada), PublishRequest(items=[PublishItem(envelope=published)]))
    clock.now = START + 42
    key = coordinator.info().coordinator_key

    outcome = _retract(coordinator, ada, version=3)

    assert outcome.status == "accepted"
    assert _receipt(outcome) == Receipt(
        format=FORMAT_VERSION, team=TEAM, item_id=ITEM, version=3, author_key=key,
        key_id=coordinator.identity.key_id, seq=1, member_key=ada.public_key_text,
        purged_at=START + 42,
    )  # fmt: skip
    assert key == coordinator.identity.public_key_text != ada.public_key_text


def test_a_retraction_sent_again_gets_the_receipt_of_when_it_was_applied(
    coordinator: Coordinator, ada: Identity, clock: FakeClock
) -> None:
    first = _retract(coordinator, ada, version=2)
    clock.now = START + 3600

    again = _retract(coordinator, ada, version=2)
    older = _retract(coordinator, ada, version=1)

    assert (again.status, older.status) == ("duplicate", "duplicate")
    assert _receipt(again) == _receipt(first)
    assert (_receipt(older).version, _receipt(older).purged_at) == (1, START)


def test_a_stale_or_rejected_retraction_carries_no_receipt(
    coordinator: Coordinator, ada: Identity, tmp_path: Path
) -> None:
    newer = seal(publication(ada, version=5), ada)
    coordinator.publish(caller(ada), PublishRequest(items=[PublishItem(envelope=newer)]))
    mallory = create_identity(tmp_path / "mallory")
    forged = seal(retraction(ada, version=9), ada)

    stale = _retract(coordinator, ada, version=4)
    (pushed,) = coordinator.retract(caller(mallory), RetractRequest(envelopes=[forged])).results

    assert (stale.status, stale.receipt) == ("stale", None)
    assert (pushed.status, pushed.receipt) == ("rejected", None)


def test_the_coordinator_key_is_made_once_private_and_kept_across_restarts(
    tmp_path: Path, ada: Identity
) -> None:
    data = tmp_path / "data"
    first = Coordinator(data, team=TEAM)
    key = first.info().coordinator_key
    receipt = _receipt(_retract(first, ada))
    first.close()
    restarted = Coordinator(data, team=TEAM)
    try:
        assert restarted.info().coordinator_key == key
        assert _receipt(_retract(restarted, ada)).author_key == key
    finally:
        restarted.close()
    assert receipt.author_key == key
    assert stat.S_IMODE((data / "identity.key").stat().st_mode) == 0o600


def test_a_receipt_over_the_wire_verifies_with_the_key_info_publishes(
    coordinator: Coordinator, ada: Identity
) -> None:
    tombstone = seal(retraction(ada), ada)
    with (
        running(coordinator_app(coordinator, token=None)) as url,
        signed_client(url, ada, team=TEAM) as client,
    ):
        key = client.get("/v1/info", Info).coordinator_key
        (outcome,) = client.post(
            "/v1/retract", RetractRequest(envelopes=[tombstone]), RetractResponse
        ).results

    receipt = _receipt(outcome)
    assert (receipt.author_key, receipt.item_id, receipt.version) == (key, ITEM, 1)
    assert receipt.member_key == ada.public_key_text
