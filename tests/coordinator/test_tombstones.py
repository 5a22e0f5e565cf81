"""Tombstones on the coordinator: a key's tombstones are held to its own share (one member
cannot fill the team's quota by retracting ids it never published), a retraction that comes
before its publication still wins, and a purge takes a key's tombstones with its items without
letting any retracted item come back. A real coordinator served on 127.0.0.1, signed
requests."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from memmesh.coordinator import Coordinator, _usage
from memmesh.coordinator.protocol import (
    ChangesRequest,
    ChangesResponse,
    MemberRevoke,
    Outcome,
    PublishItem,
    PublishRequest,
    PublishResponse,
    RetractRequest,
    RetractResponse,
    RevokeResponse,
)
from memmesh.net.client import Client
from memmesh.net.errors import Refused
from memmesh.net.quotas import Quotas
from memmesh.registry import Identity
from memmesh.registry.envelopes import Envelope, seal
from tests._clock import FakeClock
from tests.coordinator._served import Served
from tests.registry._helpers import TEAM, publication, retraction

# Each member keeps at most 4 items (live or retracted), the team 10.
QUOTAS = Quotas(member_items=4, total_items=10)
FULL = "never published here, and this member's share of the coordinator is full"


@pytest.fixture
def coordinator(data: Path, clock: FakeClock) -> Iterator[Coordinator]:
    """The served coordinator, with small quotas."""
    opened = Coordinator(data, team=TEAM, quotas=QUOTAS, clock=clock)
    try:
        yield opened
    finally:
        opened.close()


def _id(n: int) -> str:
    return f"01JTOMBSTONESAAAAAAAAA{n:04d}"


def _published(identity: Identity, n: int, version: int = 1) -> Envelope:
    body = publication(
        identity, item_id=_id(n), text=f"Note {n} on the quokka ledger", version=version
    )
    return seal(body, identity)


def _tombstone(identity: Identity, n: int, version: int = 1) -> Envelope:
    return seal(retraction(identity, item_id=_id(n), version=version), identity)


def _publish(client: Client, *envelopes: Envelope) -> list[Outcome]:
    request = PublishRequest(items=[PublishItem(envelope=e) for e in envelopes])
    return client.post("/v1/publish", request, PublishResponse).results


def _retract(client: Client, *envelopes: Envelope) -> list[Outcome]:
    return client.post(
        "/v1/retract", RetractRequest(envelopes=list(envelopes)), RetractResponse
    ).results


def _held(served: Served, identity: Identity) -> int:
    """The items the coordinator counts for ``identity``'s key (checked against its rows)."""
    with served.coordinator.store.read() as tx:
        counted = _usage.of(tx, identity.public_key_text).items
        assert _usage.recount(tx).get(identity.public_key_text, _usage.Usage()).items == counted
    return counted


def _feed(client: Client) -> list[tuple[str, str, str]]:
    changes = client.post("/v1/changes", ChangesRequest(), ChangesResponse).changes
    return [
        (c.kind, c.item_id, c.envelope.signature.hex()[:8] if c.envelope else "") for c in changes
    ]


# -- the attack: retracting ids never published ----------------------------------------------


def test_retracting_ids_never_published_stops_at_the_member_s_share_and_a_teammate_still_publishes(
    served: Served, ada: Identity, bob: Identity
) -> None:
    # Bob tombstones 30 ids he never published: three times the team's whole quota.
    with served.client(bob) as client:
        outcomes = _retract(client, *(_tombstone(bob, n) for n in range(30)))

    assert [o.status for o in outcomes] == ["accepted"] * 4 + ["stale"] * 26
    assert {(o.reason, o.receipt) for o in outcomes[4:]} == {(FULL, None)}
    assert _held(served, bob) == 4
    with served.client(ada) as client:
        assert [o.status for o in _publish(client, *(_published(ada, n) for n in range(4)))] == [
            "accepted"
        ] * 4
    assert served.coordinator.info().tombstones == 4


def test_a_key_s_tombstones_never_outnumber_its_item_limit(served: Served, ada: Identity) -> None:
    with served.client(ada) as client:
        _publish(client, *(_published(ada, n) for n in range(4)))
        # Retracting what it published replaces each item by its tombstone: always taken.
        retracted = _retract(client, *(_tombstone(ada, n) for n in range(4)))
        more = _retract(client, *(_tombstone(ada, n) for n in range(4, 8)))
        again = _retract(client, _tombstone(ada, 0))

    assert [o.status for o in retracted] == ["accepted"] * 4
    assert all(o.receipt is not None for o in retracted)
    assert [(o.status, o.reason) for o in more] == [("stale", FULL)] * 4
    assert (again[0].status, again[0].receipt is not None) == ("duplicate", True)
    assert _held(served, ada) == 4
    assert served.coordinator.info().tombstones == 4


def test_a_retraction_that_arrives_before_its_publication_keeps_the_item_retracted(
    served: Served, ada: Identity
) -> None:
    # Two syncs of one member raced: the retraction reached the coordinator first.
    with served.client(ada) as client:
        (first,) = _retract(client, _tombstone(ada, 1))
        (late,) = _publish(client, _published(ada, 1))

    assert (first.status, first.receipt is not None) == ("accepted", True)
    assert (late.status, late.reason) == ("stale", "retracted")
    assert _held(served, ada) == 1


# -- a purge takes the tombstones too --------------------------------------------------------


def test_revoke_with_purge_removes_the_member_s_tombstones_and_nothing_of_it_comes_back(
    served: Served, ada: Identity, bob: Identity
) -> None:
    old = _published(bob, 1)
    with served.client(bob) as client:
        _publish(client, old, _published(bob, 2))
        _retract(client, _tombstone(bob, 1), _tombstone(bob, 3))  # 3 was never published
    assert _held(served, bob) == 3
    with served.client(ada) as client:
        revoked = client.post(
            "/v1/members/revoke", MemberRevoke(member="bob", purge=True), RevokeResponse
        )
        feed = _feed(client)
        # A teammate cannot push bob's old envelope for him.
        (relayed,) = _publish(client, old)

    assert revoked.purged == 1  # the live item; its tombstones went with it
    assert feed == []
    assert _held(served, bob) == 0
    assert served.coordinator.info().tombstones == 0
    assert relayed.status == "rejected"
    # Bob replaying his retracted item, or anything he ever signed, is refused whole.
    with served.client(bob) as client, pytest.raises(Refused) as refused:
        _publish(client, old)
    assert refused.value.http_status == 403
    assert served.coordinator.info().published == 0


def test_an_operator_purge_removes_tombstones_and_the_versions_they_held_stay_refused(
    served: Served, ada: Identity, bob: Identity
) -> None:
    old = _published(bob, 1)
    with served.client(bob) as client:
        _publish(client, old)
        _retract(client, _tombstone(bob, 1), _tombstone(bob, 3))

    assert served.coordinator.holdings.purge(bob.public_key_text) == 0  # no live item

    assert _held(served, bob) == 0
    with served.client(bob) as client:
        # bob is still a member: what his tombstones beat stays beaten, and costs nothing.
        (replayed,) = _publish(client, old)
        resent = _retract(client, _tombstone(bob, 1), _tombstone(bob, 3))
        assert _held(served, bob) == 0
        (newer,) = _publish(client, _published(bob, 1, version=2))
        feed = _feed(client)

    assert (replayed.status, replayed.reason) == ("stale", "purged by the coordinator")
    assert [(o.status, o.reason) for o in resent] == [("stale", "purged by the coordinator")] * 2
    assert newer.status == "accepted"
    assert [(kind, item) for kind, item, _ in feed] == [("publication", _id(1))]
    assert _held(served, bob) == 1
