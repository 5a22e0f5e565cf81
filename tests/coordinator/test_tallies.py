"""Tallies at the coordinator: a member's signed counts on a teammate's live item, kept newest
first per (reporter, item) and fed to the item's author only; never about one's own item,
another key's word, a retracted item, or past the bounds."""

import json
from pathlib import Path

import httpx
import msgspec
import pytest

from memmesh.coordinator import Coordinator
from memmesh.coordinator.holdings import Holdings
from memmesh.coordinator.protocol import (
    MyTalliesRequest,
    MyTalliesResponse,
    Outcome,
    PublishItem,
    PublishRequest,
    RetractRequest,
    TalliesRequest,
    TalliesResponse,
)
from memmesh.net.errors import Refused
from memmesh.net.presence import PresenceRequest
from memmesh.net.signing import coordinator_audience
from memmesh.registry import Identity, create_identity
from memmesh.registry.envelopes import Envelope, Tally, open_envelope, seal
from tests._signed import SignedAuth, caller
from tests.coordinator._served import TOKEN, Served
from tests.registry._helpers import TEAM, flip_bit, publication, retraction, tally

ITEM = "01JABCDEFGHJKMNPQRSTVWXYZ0"
OTHER = "01JABCDEFGHJKMNPQRSTVWXYZ1"


@pytest.fixture
def people(tmp_path: Path) -> dict[str, Identity]:
    return {name: create_identity(tmp_path / name) for name in ("ada", "bob", "carol")}


@pytest.fixture
def published(coordinator: Coordinator, people: dict[str, Identity]) -> Coordinator:
    """Ada published ITEM (version 2) and OTHER."""
    ada = people["ada"]
    items = [
        PublishItem(envelope=seal(publication(ada, item_id=ITEM, version=2), ada)),
        PublishItem(envelope=seal(publication(ada, item_id=OTHER, text="Other words"), ada)),
    ]
    results = coordinator.publish(caller(ada), PublishRequest(items=items)).results
    assert [r.status for r in results] == ["accepted", "accepted"]
    return coordinator


def _send(c: Coordinator, sender: Identity, *envelopes: Envelope) -> list[Outcome]:
    return c.tally(caller(sender), TalliesRequest(envelopes=list(envelopes))).results


def _report(c: Coordinator, reporter: Identity, subject: Identity, **changes: object) -> Outcome:
    changes.setdefault("item_id", ITEM)
    (outcome,) = _send(c, reporter, seal(tally(reporter, subject, **changes), reporter))
    return outcome


def _mine(c: Coordinator, author: Identity, cursor: int = 0, limit: int = 100) -> MyTalliesResponse:
    return c.tallies_about(caller(author), MyTalliesRequest(cursor=cursor, limit=limit))


def _bodies(page: MyTalliesResponse) -> list[Tally]:
    opened = [open_envelope(change.envelope) for change in page.tallies]
    assert all(isinstance(body, Tally) for body in opened)
    return opened  # type: ignore[return-value]


def test_a_tally_on_a_teammate_s_live_item_reaches_its_author_only(
    published: Coordinator, people: dict[str, Identity]
) -> None:
    ada, bob, carol = people["ada"], people["bob"], people["carol"]

    outcome = _report(published, bob, ada, worked=2, failed=1)

    assert (outcome.item_id, outcome.version, outcome.status) == (ITEM, 1, "accepted")
    (kept,) = _bodies(_mine(published, ada))
    assert (kept.key_id, kept.item_id, kept.worked, kept.failed, kept.seq) == (
        bob.key_id, ITEM, 2, 1, 3,
    )  # fmt: skip
    assert _mine(published, bob).tallies == []
    assert _mine(published, carol).tallies == []


def test_only_the_newest_tally_of_a_reporter_on_an_item_is_kept(
    published: Coordinator, people: dict[str, Identity]
) -> None:
    ada, bob, carol = people["ada"], people["bob"], people["carol"]
    assert _report(published, bob, ada, worked=1).status == "accepted"
    first = _mine(published, ada)

    assert _report(published, bob, ada, worked=2, failed=1).status == "accepted"
    older = _report(published, bob, ada, worked=1, failed=1)
    again = _report(published, bob, ada, worked=2, failed=1)
    assert _report(published, carol, ada, worked=0, partial=1).status == "accepted"

    assert (older.status, again.status) == ("stale", "duplicate")
    page = _mine(published, ada)
    assert [(t.key_id, t.seq) for t in _bodies(page)] == [(bob.key_id, 3), (carol.key_id, 1)]
    # The newer tally moved past the cursor the author had read up to: it is fed again.
    assert [t.seq for t in _bodies(_mine(published, ada, first.next_cursor))] == [3, 1]


def test_a_member_cannot_tally_its_own_item(
    published: Coordinator, people: dict[str, Identity]
) -> None:
    ada = people["ada"]
    outcome = _report(published, ada, ada, worked=20)
    assert (outcome.status, outcome.reason) == ("rejected", "a member does not tally its own item")
    assert _mine(published, ada).tallies == []


def test_a_tally_signed_by_another_key_than_the_caller_s_is_rejected(
    published: Coordinator, people: dict[str, Identity]
) -> None:
    ada, bob, carol = people["ada"], people["bob"], people["carol"]
    bobs = seal(tally(bob, ada, item_id=ITEM), bob)
    (outcome,) = _send(published, carol, bobs)
    assert outcome.status == "rejected"
    assert "a member pushes only its own envelopes" in outcome.reason
    assert _mine(published, ada).tallies == []


def test_a_forged_tally_is_rejected(published: Coordinator, people: dict[str, Identity]) -> None:
    ada, bob = people["ada"], people["bob"]
    good = seal(tally(bob, ada, item_id=ITEM, worked=5), bob)
    forged = Envelope(payload=good.payload, signature=flip_bit(good.signature, 3))
    fields = json.loads(good.payload) | {"worked": 20, "seq": 20}
    altered = Envelope(payload=msgspec.json.encode(fields), signature=good.signature)

    results = _send(published, bob, forged, altered)

    assert [r.status for r in results] == ["rejected", "rejected"]
    assert _mine(published, ada).tallies == []


def test_a_tally_on_an_item_the_coordinator_does_not_hold_live_is_rejected(
    published: Coordinator, people: dict[str, Identity]
) -> None:
    ada, bob, carol = people["ada"], people["bob"], people["carol"]
    unknown = _report(published, bob, ada, item_id="01JABCDEFGHJKMNPQRSTVWXYZ9")
    wrong_author = _report(published, bob, carol)
    future = _report(published, bob, ada, version=3)

    assert unknown.status == wrong_author.status == future.status == "rejected"
    assert unknown.reason == "no live item of that member has this id"
    assert future.reason == "that version of the item is not published"
    assert _mine(published, ada).tallies == []


def test_a_retraction_drops_the_item_s_tallies_and_refuses_later_ones(
    published: Coordinator, people: dict[str, Identity]
) -> None:
    ada, bob = people["ada"], people["bob"]
    assert _report(published, bob, ada, worked=1).status == "accepted"
    assert _report(published, bob, ada, item_id=OTHER, failed=1).status == "accepted"

    tombstone = seal(retraction(ada, item_id=ITEM, version=2), ada)
    (retracted,) = published.retract(caller(ada), RetractRequest(envelopes=[tombstone])).results
    later = _report(published, bob, ada, worked=2)

    assert retracted.status == "accepted"
    assert later.status == "rejected"
    assert [t.item_id for t in _bodies(_mine(published, ada))] == [OTHER]
    with published.store.read() as tx:
        rows = tx.execute("SELECT item_id FROM coord_tallies").fetchall()
    assert rows == [(OTHER,)]


def test_tallies_on_items_the_operator_purged_are_no_longer_fed(
    published: Coordinator, people: dict[str, Identity]
) -> None:
    ada, bob = people["ada"], people["bob"]
    assert _report(published, bob, ada, worked=1).status == "accepted"
    Holdings(published.store).purge(ada.public_key_text)
    assert _mine(published, ada).tallies == []


def test_a_tally_of_another_team_is_rejected(
    published: Coordinator, people: dict[str, Identity]
) -> None:
    outcome = _report(published, people["bob"], people["ada"], team="other")
    assert (outcome.status, outcome.reason) == (
        "rejected", f"this coordinator serves team {TEAM!r}, not 'other'",
    )  # fmt: skip


def test_a_reporter_past_its_row_limit_is_rejected_but_still_updates_its_rows(
    published: Coordinator, people: dict[str, Identity]
) -> None:
    ada, bob = people["ada"], people["bob"]
    published.tallies.per_reporter = 1
    assert _report(published, bob, ada, worked=1).status == "accepted"
    refused = _report(published, bob, ada, item_id=OTHER, worked=1)
    assert (refused.status, refused.reason) == (
        "rejected", "this member's tallies are at the coordinator's limit (1)",
    )  # fmt: skip
    assert _report(published, bob, ada, worked=2).status == "accepted"


def test_the_feed_of_tallies_pages_by_cursor(
    published: Coordinator, people: dict[str, Identity], tmp_path: Path
) -> None:
    ada = people["ada"]
    reporters = [create_identity(tmp_path / f"r{n}") for n in range(5)]
    for reporter in reporters:
        assert _report(published, reporter, ada, worked=1).status == "accepted"

    seen: list[str] = []
    cursor, pages = 0, 0
    while True:
        page = _mine(published, ada, cursor, limit=2)
        pages += 1
        seen += [t.key_id for t in _bodies(page)]
        cursor = page.next_cursor
        if not page.more:
            break
    assert seen == [r.key_id for r in reporters]
    assert pages == 3
    assert _mine(published, ada, cursor).tallies == []


def test_tallies_sent_as_publications_retractions_or_presence_are_refused(
    published: Coordinator, people: dict[str, Identity]
) -> None:
    ada, bob = people["ada"], people["bob"]
    envelope = seal(tally(bob, ada, item_id=ITEM), bob)
    (as_publication,) = published.publish(
        caller(bob), PublishRequest(items=[PublishItem(envelope=envelope)])
    ).results
    (as_retraction,) = published.retract(caller(bob), RetractRequest(envelopes=[envelope])).results
    as_presence = published.heartbeat(caller(bob), PresenceRequest(envelope=envelope))

    assert (as_publication.status, as_publication.reason) == ("rejected", "not a publication")
    assert (as_retraction.status, as_retraction.reason) == ("rejected", "not a retraction")
    assert (as_presence.status, as_presence.reason) == ("rejected", "not a presence")
    assert published.info().published == 2
    assert published.info().tombstones == 0


def test_publications_sent_as_tallies_are_refused(
    published: Coordinator, people: dict[str, Identity]
) -> None:
    bob = people["bob"]
    envelope = seal(publication(bob, item_id=OTHER), bob)
    (outcome,) = _send(published, bob, envelope)
    assert (outcome.status, outcome.reason) == ("rejected", "not a tally")
    assert published.info().published == 2


def test_tallies_travel_over_http_and_the_routes_are_strict(
    served: Served, ada: Identity, bob: Identity
) -> None:
    with served.client(ada) as client:
        item = PublishItem(envelope=seal(publication(ada, item_id=ITEM), ada))
        client.post("/v1/publish", PublishRequest(items=[item]), msgspec.Struct)
    with served.client(bob) as client:
        request = TalliesRequest(envelopes=[seal(tally(bob, ada, item_id=ITEM, worked=2), bob)])
        (outcome,) = client.post("/v1/tallies", request, TalliesResponse).results
    with served.client(ada) as client:
        page = client.post("/v1/tallies/mine", MyTalliesRequest(), MyTalliesResponse)

    assert outcome.status == "accepted"
    assert [t.worked for t in _bodies(page)] == [2]
    bearer = {"authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=served.url, auth=SignedAuth(bob, coordinator_audience(TEAM))) as raw:
        extra = raw.post("/v1/tallies/mine", json={"cursor": 0, "extra": 1}, headers=bearer)
        empty = raw.post("/v1/tallies", json={"envelopes": []}, headers=bearer)
    assert extra.status_code == empty.status_code == 400


def test_an_unknown_caller_cannot_read_tallies(served: Served, bob: Identity) -> None:
    stranger = served.key("stranger")
    with served.client(stranger) as client, pytest.raises(Refused):
        client.post("/v1/tallies/mine", MyTalliesRequest(), MyTalliesResponse)
