"""The coordinator's quotas: a member, or the team, past its limit is refused whole, before
anything is stored; what adds nothing always goes through; the figures follow every write."""

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memmesh.coordinator import Coordinator, _usage, coordinator_app, quotas, service
from memmesh.coordinator.errors import QuotaExceeded
from memmesh.coordinator.protocol import MemberRevoke, PublishItem, PublishRequest, RetractRequest
from memmesh.net.quotas import Quotas
from memmesh.net.signing import coordinator_audience
from memmesh.net.wire import encode
from memmesh.registry import Identity, create_identity
from memmesh.registry.envelopes import Envelope, seal
from tests._clock import FakeClock
from tests._servers import running
from tests._signed import SignedAuth, add_member, caller, make_admin
from tests.coordinator._served import cache_read
from tests.registry._helpers import TEAM, publication, retraction

TEXT = "The billing service retries webhooks five times."  # 48 bytes


@pytest.fixture
def ada(tmp_path: Path) -> Identity:
    return create_identity(tmp_path / "ada")


@pytest.fixture
def bob(ada: Identity, tmp_path: Path) -> Identity:
    """A second member (after ``ada``, whose key is made first)."""
    return create_identity(tmp_path / "bob")


@pytest.fixture
def limited(data: Path, clock: FakeClock) -> Iterator[Coordinator]:
    """A coordinator that keeps 3 items and 120 bytes of text per member, 5 and 200 in all."""
    quotas = Quotas(member_items=3, member_bytes=120, total_items=5, total_bytes=200)
    opened = Coordinator(data, team=TEAM, quotas=quotas, clock=clock)
    try:
        yield opened
    finally:
        opened.close()


def _envelope(identity: Identity, n: int, text: str = "item {n}", **changes: Any) -> Envelope:
    item_id = f"01JABCDEFGHJKMNPQRSTVWX{n:03d}"
    body = publication(identity, item_id=item_id, text=text.format(n=n), **changes)
    return seal(body, identity)


def _publish(c: Coordinator, identity: Identity, *envelopes: Envelope) -> list[str]:
    request = PublishRequest(items=[PublishItem(envelope=e) for e in envelopes])
    return [outcome.status for outcome in c.publish(caller(identity), request).results]


def _stored(c: Coordinator) -> int:
    """Rows the coordinator holds, in its envelopes and in its store."""
    with c.store.read() as tx:
        (envelopes,) = tx.execute("SELECT count(*) FROM coord_envelopes").fetchone()
    with cache_read(c) as tx:
        (items,) = tx.execute("SELECT count(*) FROM items").fetchone()
    assert envelopes == items
    return int(envelopes)


def _figures(c: Coordinator) -> dict[str, _usage.Usage]:
    """The figures the triggers keep, checked against a count of the table itself."""
    with c.store.read() as tx:
        kept = _usage.keys(tx)
        assert kept == {key: usage for key, usage in _usage.recount(tx).items() if usage.items}
    return kept


def test_a_member_past_its_item_quota_is_refused_whole_and_nothing_is_stored(
    limited: Coordinator, ada: Identity
) -> None:
    assert _publish(limited, ada, _envelope(ada, 1), _envelope(ada, 2)) == ["accepted"] * 2

    with pytest.raises(QuotaExceeded) as refused:
        _publish(limited, ada, _envelope(ada, 3), _envelope(ada, 4))

    assert refused.value.message == (
        "this member's share of the coordinator is full: it holds 2 items and this batch adds "
        "2, past the limit of 3; nothing of the batch was stored. Retract items no longer "
        "needed, or ask the coordinator's operator to raise --member-items"
    )
    assert (refused.value.status, refused.value.code) == (413, "quota_exceeded")
    assert _stored(limited) == 2
    assert _publish(limited, ada, _envelope(ada, 3)) == ["accepted"]  # exactly the limit


def test_a_member_past_its_text_quota_is_refused(limited: Coordinator, ada: Identity) -> None:
    assert (
        _publish(limited, ada, _envelope(ada, 1, TEXT), _envelope(ada, 2, TEXT)) == ["accepted"] * 2
    )

    with pytest.raises(QuotaExceeded) as refused:
        _publish(limited, ada, _envelope(ada, 3, TEXT))

    assert (refused.value.scope, refused.value.what) == ("member", "bytes")
    assert (refused.value.held, refused.value.adding, refused.value.limit) == (96, 48, 120)
    assert _stored(limited) == 2


def test_the_team_past_its_total_is_refused_though_each_member_is_within(
    limited: Coordinator, ada: Identity, bob: Identity
) -> None:
    assert _publish(limited, ada, *(_envelope(ada, n) for n in range(3))) == ["accepted"] * 3
    assert _publish(limited, bob, _envelope(bob, 1), _envelope(bob, 2)) == ["accepted"] * 2

    with pytest.raises(QuotaExceeded) as refused:
        _publish(limited, bob, _envelope(bob, 3))

    assert refused.value.message.startswith("the coordinator is full: it holds 5 items")
    assert refused.value.message.endswith("ask the coordinator's operator to raise --total-items")
    assert _stored(limited) == 5


def test_what_adds_nothing_goes_through_a_full_quota(limited: Coordinator, ada: Identity) -> None:
    first = [_envelope(ada, n, TEXT[:30]) for n in range(3)]
    assert _publish(limited, ada, *first) == ["accepted"] * 3
    shorter = _envelope(ada, 0, "shorter", version=2)
    retracted = seal(retraction(ada, item_id="01JABCDEFGHJKMNPQRSTVWX001", version=1), ada)

    assert _publish(limited, ada, first[1], shorter) == ["duplicate", "accepted"]
    (outcome,) = limited.retract(caller(ada), RetractRequest(envelopes=[retracted])).results
    assert outcome.status == "accepted"
    # The tombstone still holds its place: the item quota stays full.
    with pytest.raises(QuotaExceeded):
        _publish(limited, ada, _envelope(ada, 9))
    assert _figures(limited)[ada.public_key_text] == _usage.Usage(3, 30 + 7)


def test_each_item_is_checked_again_as_it_is_stored(
    limited: Coordinator, ada: Identity, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request racing another passes the first check on figures that are stale by the
    time its items are stored: each item is checked again in the write lock."""
    checks: list[Any] = []

    def first_passes(*args: Any) -> None:
        checks.append(args)
        if len(checks) > 1:
            quotas.check(*args)

    monkeypatch.setattr(service, "check", first_passes)
    envelopes = [_envelope(ada, n) for n in range(5)]

    with pytest.raises(QuotaExceeded):
        _publish(limited, ada, *envelopes)

    assert _stored(limited) == 3  # up to the limit, never past it


def test_the_figures_follow_every_kind_of_write(
    coordinator: Coordinator, ada: Identity, bob: Identity
) -> None:
    make_admin(coordinator, ada)
    add_member(coordinator, ada, bob, "bob")
    assert (
        _publish(coordinator, ada, _envelope(ada, 1, TEXT), _envelope(ada, 2)) == ["accepted"] * 2
    )
    assert _publish(coordinator, ada, _envelope(ada, 1, "café", version=2)) == ["accepted"]
    assert _publish(coordinator, bob, _envelope(bob, 1), _envelope(bob, 2)) == ["accepted"] * 2
    never = seal(retraction(ada, item_id="01JNEVERPUBLISHED000000000"), ada)
    assert coordinator.retract(caller(ada), RetractRequest(envelopes=[never])).results[0]

    assert _figures(coordinator) == {
        ada.public_key_text: _usage.Usage(3, 5 + 6),
        bob.public_key_text: _usage.Usage(2, 12),
    }
    coordinator.membership.revoke(caller(ada), MemberRevoke(member="bob", purge=True))
    assert bob.public_key_text not in _figures(coordinator)


def test_figures_are_counted_again_when_their_triggers_were_lost(
    data: Path, clock: FakeClock, ada: Identity
) -> None:
    with contextlib.closing(Coordinator(data, team=TEAM, clock=clock)) as first:
        _publish(first, ada, _envelope(ada, 1, TEXT))
    db = sqlite3.connect(data / "memory.db")
    with db:  # as a later migration rebuilding coord_envelopes would leave it
        db.execute("DROP TRIGGER coord_usage_insert")
        db.execute("UPDATE coord_usage SET items = 0, text_bytes = 0")
    db.close()

    with contextlib.closing(Coordinator(data, team=TEAM, clock=clock)) as second:
        assert _figures(second) == {ada.public_key_text: _usage.Usage(1, 48)}
        _publish(second, ada, _envelope(ada, 2, TEXT))
        assert _figures(second) == {ada.public_key_text: _usage.Usage(2, 96)}


def test_a_publish_past_the_quota_is_answered_413_over_http(
    limited: Coordinator, ada: Identity
) -> None:
    _publish(limited, ada, *(_envelope(ada, n) for n in range(3)))
    body = encode(PublishRequest(items=[PublishItem(envelope=_envelope(ada, 7))]))
    with running(coordinator_app(limited, token=None)) as url:
        answer = httpx.post(
            f"{url}/v1/publish",
            content=body,
            auth=SignedAuth(ada, coordinator_audience(TEAM)),
            timeout=10,
        )
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "quota_exceeded"
    assert answer.json()["error"]["message"].startswith("this member's share of the coordinator")
    assert _stored(limited) == 3
