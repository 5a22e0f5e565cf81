"""Tallies: a member's signed, bounded counts of how a teammate's item worked, never text."""

import json
from typing import Any

import msgspec
import pytest

from memmesh.registry import BadSignature, Envelope, Identity, open_envelope, seal
from memmesh.registry.envelopes import MAX_TALLY, Tally
from tests.registry._helpers import tally


def _resealed(identity: Identity, envelope: Envelope, **changes: Any) -> Envelope:
    """The envelope's payload with ``changes``, signed again by ``identity``."""
    fields = json.loads(envelope.payload) | changes
    payload = msgspec.json.encode(fields)
    return Envelope(payload=payload, signature=identity.sign(payload))


def test_a_sealed_tally_opens_to_the_same_body(
    identity: Identity, other_identity: Identity
) -> None:
    body = tally(identity, other_identity, worked=2, failed=1)
    opened = open_envelope(seal(body, identity))
    assert isinstance(opened, Tally)
    assert opened == body
    assert opened.seq == 3


def test_a_tally_carries_no_text_field(identity: Identity, other_identity: Identity) -> None:
    fields = json.loads(seal(tally(identity, other_identity), identity).payload)
    assert set(fields) == {
        "type", "format", "team", "item_id", "version", "author_key", "key_id", "seq",
        "subject_key_id", "worked", "failed", "partial", "reported_at",
    }  # fmt: skip
    with pytest.raises(BadSignature, match="malformed"):
        open_envelope(_resealed(identity, seal(tally(identity, other_identity), identity),
                                text="the item's words"))  # fmt: skip


@pytest.mark.parametrize("field", ["worked", "failed", "partial"])
def test_a_count_beyond_the_bound_is_refused(
    identity: Identity, other_identity: Identity, field: str
) -> None:
    counts = {"worked": 0, "failed": 0, "partial": 0} | {field: MAX_TALLY}
    at_bound = seal(tally(identity, other_identity, **counts), identity)
    assert isinstance(open_envelope(at_bound), Tally)
    over = _resealed(identity, at_bound, **{field: MAX_TALLY + 1, "seq": MAX_TALLY + 1})
    with pytest.raises(BadSignature, match="malformed"):
        open_envelope(over)
    negative = _resealed(identity, at_bound, **{field: -1})
    with pytest.raises(BadSignature, match="malformed"):
        open_envelope(negative)


@pytest.mark.parametrize(
    ("worked", "seq", "reason"),
    [(2, 5, "the sum of its counts"), (0, 1, "the sum of its counts"), (0, 0, "start at 1")],
    ids=["more than its counts", "no counts", "zero"],
)
def test_a_tally_whose_seq_is_not_its_counts_total_or_zero_is_refused(
    identity: Identity, other_identity: Identity, worked: int, seq: int, reason: str
) -> None:
    envelope = seal(tally(identity, other_identity, worked=worked, seq=seq), identity)
    with pytest.raises(BadSignature, match=reason):
        open_envelope(envelope)


def test_a_tally_signed_by_another_key_than_the_reporter_s_is_refused(
    identity: Identity, other_identity: Identity
) -> None:
    forged = _resealed(other_identity, seal(tally(identity, other_identity), identity))
    with pytest.raises(BadSignature):
        open_envelope(forged)


def test_a_malformed_subject_key_id_is_refused(
    identity: Identity, other_identity: Identity
) -> None:
    envelope = seal(tally(identity, other_identity, subject_key_id="x" * 500), identity)
    with pytest.raises(BadSignature, match="malformed"):
        open_envelope(envelope)


def test_a_tally_is_never_taken_for_a_receipt(identity: Identity, other_identity: Identity) -> None:
    from memmesh.registry.receipts import check_receipt
    from tests.registry._helpers import retraction

    envelope = seal(tally(other_identity, identity), other_identity)
    with pytest.raises(BadSignature, match="not a receipt"):
        check_receipt(
            envelope, retraction(identity), member_key=identity.public_key_text,
            coordinator_key=None,
        )  # fmt: skip


def test_a_tally_served_as_a_search_hit_or_a_presence_is_dropped(
    identity: Identity, other_identity: Identity
) -> None:
    from collections import Counter

    from memmesh.net.search import SearchHit
    from memmesh.peer.trust import TrustedRoster
    from memmesh.team._checks import verified_hit, verified_presence
    from tests.registry._helpers import make_policy

    envelope = seal(tally(other_identity, identity), other_identity)
    dropped: Counter[str] = Counter()
    hit = SearchHit(envelope=envelope, score=1.0, cosine=1.0, lexical=1.0)
    roster = TrustedRoster(None, [])
    policy = make_policy()
    assert (
        verified_hit(hit, policy, roster, dropped, comparable=True, source="x", from_peer=False)
        is None
    )
    assert verified_presence(envelope, policy, dropped, "presence") is None
    assert dropped == {"bad_signature": 1, "bad_presence": 1}
