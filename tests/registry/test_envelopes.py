"""Sealing and opening envelopes: every defect is a BadSignature, and the payload is canonical."""

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from memmesh.registry import (
    BadSignature,
    Envelope,
    Identity,
    Publication,
    Retraction,
    create_identity,
    open_envelope,
    seal,
)
from memmesh.registry.envelopes import FORMAT_VERSION, Audience, text_hash
from tests.registry._helpers import publication, retraction


def reason_of(envelope: Envelope) -> str:
    """The reason ``open_envelope`` gives for rejecting ``envelope``."""
    with pytest.raises(BadSignature) as caught:
        open_envelope(envelope)
    return caught.value.reason


def signed(identity: Identity, payload: bytes) -> Envelope:
    """An envelope whose signature is good for whatever bytes it carries."""
    return Envelope(payload=payload, signature=identity.sign(payload))


def payload_fields(envelope: Envelope) -> dict[str, Any]:
    """The payload as a plain mapping, to rebuild it with a change."""
    fields = json.loads(envelope.payload)
    assert isinstance(fields, dict)
    return fields


def test_a_sealed_publication_opens_to_the_same_body(identity: Identity) -> None:
    body = publication(identity)
    opened = open_envelope(seal(body, identity))
    assert isinstance(opened, Publication)
    assert opened == body


def test_a_sealed_retraction_opens_to_the_same_body(identity: Identity) -> None:
    body = retraction(identity, version=3, seq=7)
    opened = open_envelope(seal(body, identity))
    assert isinstance(opened, Retraction)
    assert opened == body


def test_non_ascii_text_round_trips(identity: Identity) -> None:
    body = publication(identity, text="Überprüfe die Zeitzone: 東京 ≠ UTC 🙂")
    opened = open_envelope(seal(body, identity))
    assert isinstance(opened, Publication)
    assert opened.text == "Überprüfe die Zeitzone: 東京 ≠ UTC 🙂"


def test_an_envelope_survives_its_json_wire_form(identity: Identity) -> None:
    envelope = seal(publication(identity), identity)
    wire = msgspec.json.encode(envelope)
    back = msgspec.json.decode(wire, type=Envelope)
    assert back == envelope
    assert back.digest == envelope.digest
    assert open_envelope(back) == publication(identity)


def test_the_payload_is_canonical(identity: Identity) -> None:
    first = seal(publication(identity), identity)
    second = seal(publication(identity), identity)
    assert first.payload == second.payload
    # Ed25519 is deterministic, so the whole envelope (and its digest) is too.
    assert first.signature == second.signature
    assert first.digest == second.digest
    # Re-encoding what was opened gives back the exact signed bytes.
    assert msgspec.json.encode(open_envelope(first)) == first.payload


def test_the_payload_names_its_type(identity: Identity) -> None:
    assert payload_fields(seal(publication(identity), identity))["type"] == "publication"
    assert payload_fields(seal(retraction(identity), identity))["type"] == "retraction"


def test_the_digest_covers_payload_and_signature(identity: Identity) -> None:
    envelope = seal(publication(identity), identity)
    other = seal(publication(identity, seq=2), identity)
    assert len(envelope.digest) == 64
    assert envelope.digest != other.digest


def test_a_flipped_payload_byte_is_rejected(identity: Identity) -> None:
    envelope = seal(publication(identity), identity)
    # Flip a letter inside the text, so the JSON still decodes and the signature must catch it.
    index = envelope.payload.index(b"webhooks 5 times") + 1
    payload = bytearray(envelope.payload)
    payload[index] ^= 0x01
    tampered = Envelope(payload=bytes(payload), signature=envelope.signature)
    assert reason_of(tampered) == "the signature does not verify"


def test_a_flipped_signature_bit_is_rejected(identity: Identity) -> None:
    envelope = seal(publication(identity), identity)
    signature = bytearray(envelope.signature)
    signature[10] ^= 0x80
    tampered = Envelope(payload=envelope.payload, signature=bytes(signature))
    assert reason_of(tampered) == "the signature does not verify"


def test_altered_text_with_the_old_signature_is_rejected(identity: Identity) -> None:
    original = publication(identity)
    envelope = seal(original, identity)
    altered = msgspec.structs.replace(
        original,
        text="Webhooks are never retried",
        content_hash=text_hash("Webhooks are never retried"),
    )
    forged = Envelope(payload=msgspec.json.encode(altered), signature=envelope.signature)
    assert reason_of(forged) == "the signature does not verify"


def test_a_signature_by_another_key_is_rejected(
    identity: Identity, other_identity: Identity
) -> None:
    envelope = seal(publication(identity), identity)
    forged = Envelope(payload=envelope.payload, signature=other_identity.sign(envelope.payload))
    assert reason_of(forged) == "the signature does not verify"


def test_another_member_cannot_claim_my_key(identity: Identity, other_identity: Identity) -> None:
    # The payload names my key and id, but the bytes were signed by someone else.
    payload = msgspec.json.encode(publication(identity))
    assert reason_of(signed(other_identity, payload)) == "the signature does not verify"


def test_a_key_id_that_does_not_match_the_author_key_is_rejected(
    identity: Identity, other_identity: Identity
) -> None:
    body = publication(identity, key_id=other_identity.key_id)
    assert reason_of(seal(body, identity)) == "the key id does not match the author's key"


def test_a_content_hash_that_does_not_match_the_text_is_rejected(identity: Identity) -> None:
    body = publication(identity, content_hash=text_hash("some other text"))
    assert reason_of(seal(body, identity)) == "the content hash does not match the text"


@pytest.mark.parametrize("make", [publication, retraction], ids=["publication", "retraction"])
def test_version_zero_is_rejected(identity: Identity, make: Any) -> None:
    body = make(identity, version=0)
    assert reason_of(seal(body, identity)) == "version and sequence numbers start at 1"


def test_sequence_number_zero_is_rejected(identity: Identity) -> None:
    body = publication(identity, seq=0)
    assert reason_of(seal(body, identity)) == "version and sequence numbers start at 1"


def test_an_unknown_field_is_rejected(identity: Identity) -> None:
    fields = payload_fields(seal(publication(identity), identity))
    fields["vector"] = [0.1, 0.2]
    reason = reason_of(signed(identity, json.dumps(fields).encode()))
    assert reason.startswith("the payload is malformed")
    assert "vector" in reason


def test_the_same_fields_without_the_unknown_one_are_accepted(identity: Identity) -> None:
    # The control for the test above: re-serialising by itself does not break the payload.
    fields = payload_fields(seal(publication(identity), identity))
    assert open_envelope(signed(identity, json.dumps(fields).encode())) == publication(identity)


def test_an_unknown_body_type_is_rejected(identity: Identity) -> None:
    fields = payload_fields(seal(retraction(identity), identity))
    fields["type"] = "presence"
    reason = reason_of(signed(identity, json.dumps(fields).encode()))
    assert reason.startswith("the payload is malformed")


def test_a_missing_field_is_rejected(identity: Identity) -> None:
    fields = payload_fields(seal(publication(identity), identity))
    del fields["content_hash"]
    reason = reason_of(signed(identity, json.dumps(fields).encode()))
    assert reason.startswith("the payload is malformed")
    assert "content_hash" in reason


def test_a_number_given_as_text_is_rejected(identity: Identity) -> None:
    fields = payload_fields(seal(publication(identity), identity))
    fields["version"] = "1"
    reason = reason_of(signed(identity, json.dumps(fields).encode()))
    assert reason.startswith("the payload is malformed")


@pytest.mark.parametrize("version", [FORMAT_VERSION + 1, 0, -1])
def test_a_wrong_format_version_is_rejected(identity: Identity, version: int) -> None:
    body = publication(identity, format=version)
    assert reason_of(seal(body, identity)) == f"unsupported envelope format {version}"


def test_an_oversized_payload_is_rejected(identity: Identity) -> None:
    body = publication(identity, text="x" * (64 * 1024))
    envelope = seal(body, identity)
    assert len(envelope.payload) > 64 * 1024
    assert reason_of(envelope) == "the payload is too large"


def test_a_payload_just_under_the_limit_is_accepted(identity: Identity) -> None:
    overhead = len(msgspec.json.encode(publication(identity, text="")))
    text = "x" * (64 * 1024 - overhead - 64)
    envelope = seal(publication(identity, text=text), identity)
    assert len(envelope.payload) <= 64 * 1024
    opened = open_envelope(envelope)
    assert isinstance(opened, Publication)
    assert opened.text == text


@pytest.mark.parametrize(
    "payload",
    [b"", b"not json", b"{", b"[]", b"null", b'"publication"', b"\xff\xfe\x00"],
    ids=["empty", "text", "truncated", "list", "null", "string", "binary"],
)
def test_a_non_json_or_non_object_payload_is_rejected(identity: Identity, payload: bytes) -> None:
    assert reason_of(signed(identity, payload)).startswith("the payload is malformed")


def test_a_malformed_author_key_is_rejected(identity: Identity) -> None:
    fields = payload_fields(seal(publication(identity), identity))
    fields["author_key"] = "AAAA"
    reason = reason_of(signed(identity, json.dumps(fields).encode()))
    assert reason == "the public key is not 32 bytes"


def test_sealing_another_member_s_body_is_a_programming_error(
    identity: Identity, tmp_path: Path
) -> None:
    stranger = create_identity(tmp_path / "stranger")
    with pytest.raises(AssertionError, match="signing another member's body"):
        seal(publication(stranger), identity)


@pytest.mark.parametrize("moment", [-1.0, 1e300, 253_402_300_800.0])
def test_a_time_no_date_can_show_is_rejected(identity: Identity, moment: float) -> None:
    # Listings and messages format these times as dates: none may overflow there.
    envelope = seal(publication(identity, published_at=moment), identity)
    assert "published_at" in reason_of(envelope)


def test_the_last_second_of_year_9999_is_a_time_still_accepted(identity: Identity) -> None:
    body = publication(identity, published_at=253_402_300_799.0)
    assert open_envelope(seal(body, identity)) == body


def test_an_envelope_met_again_is_not_verified_again(
    identity: Identity, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same publication reaches a member from the coordinator and from its author's peer,
    # in one recall-team and the next: one signature check is enough for its exact bytes.
    from memmesh.registry import envelopes
    from memmesh.registry.identity import verify_signature as real

    checked: list[bytes] = []

    def counted(key: Any, signature: bytes, payload: bytes) -> None:
        checked.append(payload)
        real(key, signature, payload)

    monkeypatch.setattr(envelopes, "verify_signature", counted)
    envelope = seal(publication(identity, text="verified once per process"), identity)
    first = open_envelope(envelope)
    again = open_envelope(Envelope(payload=bytes(envelope.payload), signature=envelope.signature))

    assert again == first
    assert checked == [envelope.payload]


def test_a_verified_payload_under_another_signature_is_still_refused(identity: Identity) -> None:
    envelope = seal(publication(identity, text="verified, then replayed"), identity)
    open_envelope(envelope)
    forged = bytes([envelope.signature[0] ^ 1]) + envelope.signature[1:]
    changed = envelope.payload.replace(b"replayed", b"rewritten")

    assert (
        reason_of(Envelope(payload=envelope.payload, signature=forged))
        == "the signature does not verify"
    )
    assert (
        reason_of(Envelope(payload=changed, signature=envelope.signature))
        == "the signature does not verify"
    )


@pytest.mark.parametrize(
    "widened",
    [None, Audience.of(["backend", "frontend"]), Audience.of(["backend"], ["abcdefghijklmnop"])],
)
def test_an_audience_widened_after_signing_is_rejected(
    identity: Identity, widened: Audience | None
) -> None:
    original = publication(identity, audience=Audience.of(["backend"]))
    envelope = seal(original, identity)
    bent = msgspec.structs.replace(original, audience=widened)
    forged = Envelope(payload=msgspec.json.encode(bent), signature=envelope.signature)

    opened = open_envelope(envelope)
    assert isinstance(opened, Publication)
    assert opened.audience == Audience(groups=("backend",))
    assert reason_of(forged) == "the signature does not verify"


def test_a_publication_for_the_whole_team_is_signed_as_before(identity: Identity) -> None:
    assert b"audience" not in seal(publication(identity), identity).payload
