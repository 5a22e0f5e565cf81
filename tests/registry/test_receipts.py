"""Retraction receipts: the coordinator's signed word that it purged a retracted item, kept
beside the log only when it is a receipt for one of our own retractions, and checked again by
:meth:`Registry.verify`."""

from pathlib import Path
from typing import Any

import msgspec
import pytest

from memmesh.local.store import Store
from memmesh.policy.config import Policy
from memmesh.registry import BadSignature, Entry, Identity, Registry, create_identity, publish
from memmesh.registry import retract as retract_items
from memmesh.registry.envelopes import FORMAT_VERSION, Envelope, Receipt, open_envelope, seal
from tests.registry._helpers import TEAM, flip_bit


@pytest.fixture
def coordinator(tmp_path: Path) -> Identity:
    """The coordinator's own key, which signs receipts."""
    return create_identity(tmp_path / "coordinator-home")


def _retracted(store: Store, registry: Registry, policy: Policy, text: str) -> Entry:
    item, _ = store.remember(text, kind="decision")
    publish(registry, policy, [item.id])
    [entry] = retract_items(registry, [item.id])
    return entry


@pytest.fixture
def retraction(store: Store, registry: Registry, policy: Policy) -> Entry:
    return _retracted(store, registry, policy, "The billing service retries webhooks 5 times")


def receipt_for(coordinator: Identity, entry: Entry, member: Identity, **changes: Any) -> Envelope:
    """The receipt ``coordinator`` signs for ``member``'s retraction ``entry``."""
    fields: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "team": TEAM,
        "item_id": entry.item_id,
        "version": entry.version,
        "author_key": coordinator.public_key_text,
        "key_id": coordinator.key_id,
        "seq": 1,
        "member_key": member.public_key_text,
        "purged_at": 1_700_000_200.0,
    }
    fields.update(changes)
    return seal(Receipt(**fields), coordinator)


def test_a_receipt_for_one_of_our_retractions_is_kept_and_verifies(
    registry: Registry, identity: Identity, coordinator: Identity, retraction: Entry
) -> None:
    assert [e.item_id for e in registry.unreceipted()] == [retraction.item_id]
    envelope = receipt_for(coordinator, retraction, identity)

    registry.keep_receipt(retraction, envelope)

    [kept] = registry.receipts()
    assert (kept.item_id, kept.version, kept.coordinator_key, kept.envelope) == (
        retraction.item_id,
        retraction.version,
        coordinator.public_key_text,
        envelope,
    )
    assert registry.unreceipted() == []
    assert registry.verify() == []
    registry.keep_receipt(retraction, envelope)  # the same receipt again changes nothing
    assert len(registry.receipts()) == 1


FORGERIES: dict[str, tuple[dict[str, Any], str]] = {
    "for_another_member": ({"member_key": "other"}, "it is for another member's retraction"),
    "for_another_version": ({"version": 7}, "it is for another retraction"),
    "for_another_item": ({"item_id": "01OTHERITEM"}, "it is for another retraction"),
    "of_another_team": ({"team": "elsewhere"}, "it is for another team"),
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_a_receipt_for_anything_but_that_retraction_is_refused_and_not_kept(
    registry: Registry,
    identity: Identity,
    other_identity: Identity,
    coordinator: Identity,
    retraction: Entry,
    forgery: str,
) -> None:
    changes, reason = FORGERIES[forgery]
    if changes.get("member_key") == "other":
        changes = {"member_key": other_identity.public_key_text}
    envelope = receipt_for(coordinator, retraction, identity, **changes)

    with pytest.raises(BadSignature) as refused:
        registry.keep_receipt(retraction, envelope)

    assert refused.value.reason == reason
    assert registry.receipts() == []


def test_a_receipt_whose_signature_fails_or_that_is_no_receipt_is_refused(
    registry: Registry, identity: Identity, coordinator: Identity, retraction: Entry
) -> None:
    genuine = receipt_for(coordinator, retraction, identity)
    broken = Envelope(payload=genuine.payload, signature=flip_bit(genuine.signature, 3))
    with pytest.raises(BadSignature, match="the signature does not verify"):
        registry.keep_receipt(retraction, broken)
    with pytest.raises(BadSignature, match="it is not a receipt"):
        registry.keep_receipt(retraction, retraction.envelope)
    assert registry.receipts() == []


def test_a_receipt_not_signed_by_the_coordinator_key_team_yaml_names_is_refused(
    store: Store, identity: Identity, coordinator: Identity, other_identity: Identity,
    retraction: Entry,
) -> None:  # fmt: skip
    pinned = Registry(store, identity, TEAM, coordinator_key=coordinator.key_id)
    impostor = receipt_for(other_identity, retraction, identity)
    with pytest.raises(BadSignature) as refused:
        pinned.keep_receipt(retraction, impostor)
    assert refused.value.reason == "it is not signed by the coordinator key team.yaml names"
    pinned.keep_receipt(retraction, receipt_for(coordinator, retraction, identity))
    assert len(pinned.receipts()) == 1


def test_verify_reports_a_kept_receipt_changed_on_disk(
    store: Store, registry: Registry, identity: Identity, coordinator: Identity,
    retraction: Entry,
) -> None:  # fmt: skip
    registry.keep_receipt(retraction, receipt_for(coordinator, retraction, identity))
    [kept] = registry.receipts()
    forged = Receipt(**{**msgspec.structs.asdict(_body(kept.envelope)), "purged_at": 1.0})
    changed = Envelope(payload=msgspec.json.encode(forged), signature=kept.envelope.signature)
    with store.transaction() as tx:
        tx.execute("UPDATE registry_receipts SET envelope = ?", (msgspec.json.encode(changed),))

    assert registry.verify() == [
        f"receipt for {retraction.item_id} v{retraction.version}: the signature does not verify"
    ]


def test_verify_reports_a_receipt_for_no_retraction_in_the_log_and_one_from_another_key(
    store: Store, registry: Registry, identity: Identity, coordinator: Identity,
    other_identity: Identity, retraction: Entry,
) -> None:  # fmt: skip
    registry.keep_receipt(retraction, receipt_for(coordinator, retraction, identity))
    stray = receipt_for(coordinator, retraction, identity, item_id="01NEVERRETRACTED")
    with store.transaction() as tx:
        tx.execute(
            "INSERT INTO registry_receipts VALUES (?, ?, ?, ?, ?)",
            ("01NEVERRETRACTED", 1, coordinator.public_key_text, msgspec.json.encode(stray), 1.0),
        )
    pinned = Registry(store, identity, TEAM, coordinator_key=other_identity.public_key_text)

    assert registry.verify() == [
        "receipt for 01NEVERRETRACTED v1: it is for no retraction in the log"
    ]
    assert sorted(pinned.verify()) == sorted(
        [
            "receipt for 01NEVERRETRACTED v1: it is for no retraction in the log",
            f"receipt for {retraction.item_id} v1: "
            "it is not signed by the coordinator key team.yaml names",
        ]
    )


def test_retractions_still_without_a_receipt_are_listed_oldest_first(
    store: Store, registry: Registry, policy: Policy, identity: Identity, coordinator: Identity
) -> None:
    first = _retracted(store, registry, policy, "The billing service retries webhooks 5 times")
    second = _retracted(store, registry, policy, "Invoices are exported nightly at two")
    assert [e.item_id for e in registry.unreceipted()] == [first.item_id, second.item_id]

    registry.keep_receipt(first, receipt_for(coordinator, first, identity))

    assert [e.item_id for e in registry.unreceipted()] == [second.item_id]


def _body(envelope: Envelope) -> Receipt:
    body = open_envelope(envelope)
    assert isinstance(body, Receipt)
    return body
