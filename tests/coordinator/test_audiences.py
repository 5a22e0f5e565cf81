"""The coordinator serves an item only to the members its audience admits, as the signed roster
stands at each request, by every route: a member outside the audience, one taken out of its
group, and one outside a project's read grant ask by search, feed, info, tallies and
disclosures and get nothing, not even a count. A real coordinator on each of its databases,
served by uvicorn, asked with signed requests sent by hand (no CLI in between)."""

from pathlib import Path

import msgspec
import pytest

from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.coordinator.protocol import (
    TALLY_NOT_LIVE,
    Change,
    ChangesRequest,
    ChangesResponse,
    DisclosuresRequest,
    DisclosuresResponse,
    Info,
    PublishItem,
    PublishRequest,
    PublishResponse,
    TalliesRequest,
    TalliesResponse,
)
from memmesh.net.client import Client
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.registry import Identity
from memmesh.registry import roster_chain as chain
from memmesh.registry.envelopes import Audience, Envelope, Publication, open_envelope, seal
from tests._servers import running
from tests._signed import make_admin, signed_client
from tests.coordinator._served import TOKEN, Served
from tests.coordinator._signed_team import SignedTeam, post, signed_team
from tests.registry._helpers import TEAM, publication, retraction, tally

OPEN_ID = "01JAUDIENCE000000000000001"
SECRET_ID = "01JAUDIENCE000000000000002"
OPEN_TEXT = "The quokka ledger rotates its signing keys every Tuesday"
SECRET_TEXT = "The quokka ledger master key lives in vault path kv/quokka/ledger-master"
BACKEND = Audience.of(["backend"])


class Team:
    """ada (admin, root), bob and cy; ada and bob are the group ``backend``."""

    def __init__(self, signed: SignedTeam) -> None:
        self.signed = signed
        self.served = signed.served
        self.ada = signed.root
        self.bob = signed.member("bob")
        self.cy = signed.member("cy")
        self.signed.post(
            chain.group(
                signed.state, self.ada, name="backend", add=[self.ada.key_id, self.bob.key_id]
            )
        )
        self.seq = 0

    def body(self, author: Identity, item_id: str, text: str, **fields: object) -> Publication:
        self.seq += 1
        fingerprint = self.served.coordinator.store.embedder.fingerprint
        return publication(
            author, item_id=item_id, text=text, seq=self.seq, embedder=fingerprint, **fields
        )

    def publish(self, author: Identity, *bodies: Publication) -> PublishResponse:
        items = [PublishItem(envelope=seal(body, author)) for body in bodies]
        return post(
            self.served, author, "/v1/publish", PublishRequest(items=items), PublishResponse
        )

    def search(self, who: Identity, query: str = "quokka ledger", **fields: object) -> list[str]:
        request = SearchRequest(query=query, project="billing", **fields)  # type: ignore[arg-type]
        answer = post(self.served, who, "/v1/search", request, SearchResponse)
        return [_item(hit.envelope) for hit in answer.hits]

    def feed(self, who: Identity, cursor: int = 0, limit: int = 100) -> ChangesResponse:
        request = ChangesRequest(cursor=cursor, limit=limit)
        return post(self.served, who, "/v1/changes", request, ChangesResponse)

    def info(self, who: Identity) -> Info:
        with self.served.client(who) as client:
            return client.get("/v1/info", Info)


@pytest.fixture
def team(served: Served, data: Path) -> Team:
    return Team(signed_team(served, data))


def _item(envelope: Envelope) -> str:
    return open_envelope(envelope).item_id


def _seen(changes: list[Change]) -> list[tuple[str, str]]:
    return [(change.kind, change.item_id) for change in changes]


def _found(client: Client) -> list[str]:
    """What a search of ``client``'s signer finds."""
    request = SearchRequest(query="quokka ledger", project="billing")
    return [_item(hit.envelope) for hit in client.post("/v1/search", request, SearchResponse).hits]


def _fed(client: Client) -> list[str]:
    """The items of the feed ``client``'s signer reads."""
    answer = client.post("/v1/changes", ChangesRequest(), ChangesResponse)
    return [change.item_id for change in answer.changes]


def test_a_member_outside_the_audience_gets_nothing_by_any_route(team: Team) -> None:
    ada, bob, cy = team.ada, team.bob, team.cy
    published = team.publish(
        ada,
        team.body(ada, OPEN_ID, OPEN_TEXT),
        team.body(ada, SECRET_ID, SECRET_TEXT, audience=BACKEND),
    )
    assert [r.status for r in published.results] == ["accepted", "accepted"]

    # Search: the best k are k items cy may read, whatever ranks above them.
    assert team.search(cy, "quokka master key vault", k=1) == [OPEN_ID]
    assert team.search(cy) == [OPEN_ID]
    assert sorted(team.search(bob)) == sorted([OPEN_ID, SECRET_ID])
    # The feed: the open item only, and positions that are cy's own.
    open_cursor = team.feed(ada).changes[0].cursor
    outside = team.feed(cy)
    assert _seen(outside.changes) == [("publication", OPEN_ID)]
    assert (outside.next_cursor, outside.head, outside.more) == (open_cursor, open_cursor, False)
    after = team.feed(cy, cursor=open_cursor)
    assert (after.changes, after.next_cursor, after.head, after.more) == (
        [],
        open_cursor,
        open_cursor,
        False,
    )
    assert _seen(team.feed(bob).changes) == [("publication", OPEN_ID), ("publication", SECRET_ID)]
    # Info counts what the caller may see.
    assert (team.info(cy).published, team.info(cy).tombstones) == (1, 0)
    assert team.info(bob).published == 2
    # A tally on the item is refused as one on an id that was never published.
    on_secret = seal(tally(cy, ada, item_id=SECRET_ID), cy)
    on_nothing = seal(tally(cy, ada, item_id="01JAUDIENCE0000000000NONE0"), cy)
    refused = post(
        team.served,
        cy,
        "/v1/tallies",
        TalliesRequest(envelopes=[on_secret, on_nothing]),
        TalliesResponse,
    )
    assert [(r.status, r.reason) for r in refused.results] == [("rejected", TALLY_NOT_LIVE)] * 2
    # Disclosures: the author reads who was served; cy is told only of its own items.
    disclosed = post(team.served, ada, "/v1/disclosures", DisclosuresRequest(), DisclosuresResponse)
    served = {(e.item_id, e.asker_name) for e in disclosed.entries}
    assert (SECRET_ID, "bob") in served
    assert (SECRET_ID, "cy") not in served
    assert {(OPEN_ID, "cy"), (OPEN_ID, "bob")} <= served  # by search, and by the feed
    for asked in (DisclosuresRequest(), DisclosuresRequest(item_id=SECRET_ID)):
        mine = post(team.served, cy, "/v1/disclosures", asked, DisclosuresResponse)
        assert mine.entries == []


def test_a_search_ranks_only_what_the_caller_may_read_in_every_project_it_covers(
    team: Team,
) -> None:
    ada, bob, cy = team.ada, team.bob, team.cy
    in_web = "01JAUDIENCE000000000000003"
    team.publish(
        ada,
        team.body(ada, OPEN_ID, OPEN_TEXT),
        team.body(ada, SECRET_ID, SECRET_TEXT, project="global", audience=BACKEND),
        team.body(ada, in_web, f"{SECRET_TEXT} on web", project="web", audience=BACKEND),
    )

    for fields in ({"k": 1}, {"k": 1, "all_projects": True}, {"all_projects": True}):
        assert team.search(cy, "quokka master key vault", **fields) == [OPEN_ID], fields
    assert team.search(bob, "quokka master key vault", k=1) == [SECRET_ID]
    assert set(team.search(bob, all_projects=True)) == {OPEN_ID, SECRET_ID, in_web}
    # What changes after a search is ranked by the next one, both ways.
    newer = "01JAUDIENCE000000000000004"
    team.publish(ada, team.body(ada, newer, "The quokka master key vault moved to kv/ops"))
    assert team.search(cy, "quokka master key vault", k=1) == [newer]
    team.publish(ada, team.body(ada, newer, SECRET_TEXT, version=2, audience=BACKEND))
    assert team.search(cy, "quokka master key vault", k=1) == [OPEN_ID]


def test_each_publication_the_feed_serves_is_a_disclosure_and_a_hidden_change_is_not(
    team: Team,
) -> None:
    ada, bob, cy = team.ada, team.bob, team.cy
    team.publish(ada, team.body(ada, OPEN_ID, OPEN_TEXT))
    team.publish(ada, team.body(ada, SECRET_ID, SECRET_TEXT))
    team.publish(ada, team.body(ada, SECRET_ID, SECRET_TEXT, version=2, audience=BACKEND))

    assert _seen(team.feed(bob).changes) == [("publication", OPEN_ID), ("publication", SECRET_ID)]
    assert _seen(team.feed(cy).changes) == [("publication", OPEN_ID), ("hidden", SECRET_ID)]
    team.feed(ada)  # an author's own items are not disclosures

    disclosed = post(team.served, ada, "/v1/disclosures", DisclosuresRequest(), DisclosuresResponse)
    assert sorted((e.item_id, e.asker_name) for e in disclosed.entries) == sorted(
        [(OPEN_ID, "bob"), (SECRET_ID, "bob"), (OPEN_ID, "cy")]
    )


def test_a_member_taken_out_of_the_group_is_refused_from_the_next_request(team: Team) -> None:
    ada, bob = team.ada, team.bob
    team.publish(ada, team.body(ada, SECRET_ID, SECRET_TEXT, audience=BACKEND))
    assert team.search(bob) == [SECRET_ID]
    roster_before = team.feed(bob).roster

    team.signed.post(chain.group(team.signed.state, ada, name="backend", remove=[bob.key_id]))

    assert team.search(bob) == []
    feed = team.feed(bob)
    # Nothing of it, not even hidden: the roster's mark moved, so bob's copy reads the feed
    # whole again and drops what it no longer holds.
    assert (feed.changes, feed.head, feed.roster != roster_before) == ([], 0, True)
    assert team.info(bob).published == 0
    on_secret = seal(tally(bob, ada, item_id=SECRET_ID), bob)
    refused = post(
        team.served, bob, "/v1/tallies", TalliesRequest(envelopes=[on_secret]), TalliesResponse
    )
    assert [r.reason for r in refused.results] == [TALLY_NOT_LIVE]


def test_a_project_read_grant_withholds_even_items_for_the_whole_team(team: Team) -> None:
    ada, bob, cy = team.ada, team.bob, team.cy
    team.signed.post(
        chain.grant(team.signed.state, ada, project="billing", read=BACKEND, publish=None)
    )
    team.publish(bob, team.body(bob, OPEN_ID, OPEN_TEXT))

    assert team.search(cy) == []
    assert team.search(cy, all_projects=True) == []
    assert team.feed(cy).changes == []
    assert team.info(cy).published == 0
    assert team.search(ada) == [OPEN_ID]
    assert team.search(bob) == [OPEN_ID]


def test_a_version_for_fewer_members_hides_the_item_from_those_it_leaves_out(team: Team) -> None:
    ada, bob, cy = team.ada, team.bob, team.cy
    team.publish(ada, team.body(ada, OPEN_ID, OPEN_TEXT))
    team.publish(ada, team.body(ada, OPEN_ID, SECRET_TEXT, version=2, audience=BACKEND))
    # Never for cy: for backend, then for bob alone.
    team.publish(ada, team.body(ada, SECRET_ID, SECRET_TEXT, audience=BACKEND))
    only_bob = Audience.of(members=[bob.key_id])
    team.publish(ada, team.body(ada, SECRET_ID, SECRET_TEXT, version=2, audience=only_bob))

    (hidden,) = team.feed(cy).changes
    assert (hidden.kind, hidden.item_id, hidden.version) == ("hidden", OPEN_ID, 2)
    assert (hidden.envelope, hidden.author_key) == (None, ada.public_key_text)
    assert team.search(cy) == []
    assert _seen(team.feed(bob).changes) == [("publication", OPEN_ID), ("publication", SECRET_ID)]

    # The text is purged, the reach stays: the tombstone reaches cy, whom version 1 reached.
    for item_id in (OPEN_ID, SECRET_ID):
        team.seq += 1
        gone = seal(retraction(ada, item_id=item_id, version=3, seq=team.seq), ada)
        with team.served.client(ada) as client:
            client.post("/v1/retract", {"envelopes": [gone]}, dict)
    assert _seen(team.feed(cy).changes) == [("retraction", OPEN_ID)]
    assert team.info(cy).tombstones == 1
    assert _seen(team.feed(bob).changes) == [("retraction", OPEN_ID), ("retraction", SECRET_ID)]


def test_the_feed_reads_past_any_number_of_rows_the_caller_may_not_see(team: Team) -> None:
    ada, cy = team.ada, team.cy
    hidden = [
        team.body(ada, f"01JHIDDEN00000000000000{n:03d}", f"{SECRET_TEXT} {n}", audience=BACKEND)
        for n in range(7)
    ]
    published = team.publish(ada, *hidden[:3], team.body(ada, OPEN_ID, OPEN_TEXT), *hidden[3:])
    assert [r.status for r in published.results] == ["accepted"] * 8, published

    first = team.feed(cy, limit=1)
    assert _seen(first.changes) == [("publication", OPEN_ID)]
    assert (first.more, first.next_cursor, first.head) == (False, 4, 4)
    # From a cursor among the rows cy may not see: an empty last page, and nothing moves.
    rest = team.feed(cy, cursor=2, limit=1)
    assert (_seen(rest.changes), rest.more, rest.next_cursor) == (
        [("publication", OPEN_ID)],
        False,
        4,
    )
    empty = team.feed(cy, cursor=5, limit=1)
    assert (empty.changes, empty.more, empty.next_cursor, empty.head) == ([], False, 5, 4)
    paged = [team.feed(ada, cursor=c, limit=3).next_cursor for c in (0, 3, 6)]
    assert paged == [3, 6, 8]


def test_a_reader_s_publish_and_one_the_grant_leaves_out_are_refused_and_not_stored(
    team: Team,
) -> None:
    ada, bob, cy = team.ada, team.bob, team.cy
    team.signed.post(chain.set_role(team.signed.state, ada, key=cy.public_key_text, role="reader"))
    only_ada = Audience.of(members=[ada.key_id])
    team.signed.post(
        chain.grant(team.signed.state, ada, project="billing", read=None, publish=only_ada)
    )

    (by_reader,) = team.publish(cy, team.body(cy, OPEN_ID, OPEN_TEXT, project="web")).results
    (left_out,) = team.publish(bob, team.body(bob, OPEN_ID, OPEN_TEXT)).results
    (elsewhere,) = team.publish(bob, team.body(bob, SECRET_ID, SECRET_TEXT, project="web")).results

    assert (by_reader.status, by_reader.code) == ("rejected", "reader")
    assert (left_out.status, left_out.code) == ("rejected", "not_granted")
    assert "billing" in left_out.reason
    assert (elsewhere.status, elsewhere.code) == ("accepted", "")
    assert _seen(team.feed(ada).changes) == [("publication", SECRET_ID)]
    assert team.info(ada).published == 1


def test_an_audience_the_roster_does_not_have_is_refused_and_not_stored(team: Team) -> None:
    ada, cy = team.ada, team.cy
    team.signed.post(chain.revoke(team.signed.state, ada, key=cy.public_key_text))
    ghosts = team.body(ada, OPEN_ID, OPEN_TEXT, audience=Audience.of(["ghosts"]))
    gone = team.body(ada, SECRET_ID, SECRET_TEXT, audience=Audience.of(members=[cy.key_id]))

    results = team.publish(ada, ghosts, gone).results

    assert [(r.status, r.code) for r in results] == [("rejected", "unknown_audience")] * 2
    assert "'ghosts'" in results[0].reason
    assert cy.key_id in results[1].reason
    assert team.feed(ada).changes == []


def test_an_audience_on_a_team_whose_roster_is_not_signed_is_refused(served: Served) -> None:
    ada = served.key("ada")
    make_admin(served.coordinator, ada, "ada")
    fingerprint = served.coordinator.store.embedder.fingerprint
    body = publication(ada, embedder=fingerprint, audience=Audience.of(members=[ada.key_id]))
    request = PublishRequest(items=[PublishItem(envelope=seal(body, ada))])

    (result,) = post(served, ada, "/v1/publish", request, PublishResponse).results

    assert (result.status, result.code) == ("rejected", "unknown_audience")
    assert "not signed" in result.reason
    assert served.coordinator.info().published == 0


def test_an_envelope_edited_to_widen_its_audience_fails_verification(team: Team) -> None:
    ada, cy = team.ada, team.cy
    sealed = seal(team.body(ada, SECRET_ID, SECRET_TEXT, audience=BACKEND), ada)
    widened = [
        sealed.payload.replace(b',"audience":{"groups":["backend"]}', b""),
        sealed.payload.replace(
            b'"groups":["backend"]', b'"members":["' + cy.key_id.encode() + b'"]'
        ),
    ]
    for payload in widened:
        assert payload != sealed.payload
        forged = Envelope(payload=payload, signature=sealed.signature)
        request = PublishRequest(items=[PublishItem(envelope=forged)])
        (result,) = post(team.served, ada, "/v1/publish", request, PublishResponse).results
        assert result.status == "rejected"
        assert "signature" in result.reason
    assert team.feed(ada).changes == []


@pytest.mark.parametrize("database", ["postgresql"], indirect=True)
def test_a_group_change_posted_through_one_process_holds_in_another_at_once(
    team: Team, database: str | None, tmp_path: Path
) -> None:
    ada, bob = team.ada, team.bob
    team.publish(ada, team.body(ada, SECRET_ID, SECRET_TEXT, audience=BACKEND))
    other = Coordinator(tmp_path / "other", team=TEAM, clock=team.served.clock, database=database)
    try:
        with (
            running(coordinator_app(other, token=TOKEN)) as url,
            signed_client(url, bob, team=TEAM, token=TOKEN) as client,
        ):
            assert (_found(client), _fed(client)) == ([SECRET_ID], [SECRET_ID])
            team.signed.post(
                chain.group(team.signed.state, ada, name="backend", remove=[bob.key_id])
            )
            assert (_found(client), _fed(client)) == ([], [])
    finally:
        other.close()


def test_rows_stored_before_audiences_were_kept_in_columns_get_them_from_their_payloads(
    team: Team, database: str | None
) -> None:
    ada, cy = team.ada, team.cy
    team.publish(ada, team.body(ada, SECRET_ID, SECRET_TEXT, audience=BACKEND))
    coordinator = team.served.coordinator
    previous, table = (3, "schema_versions") if database is None else (1, "coord_schema_versions")
    with coordinator.store.transaction() as tx:
        tx.execute("DROP INDEX coord_envelopes_restricted")
        tx.execute("DROP INDEX coord_envelopes_project")
        tx.execute("DROP INDEX coord_envelopes_audience")
        for column in ("project", "audience", "reach"):
            tx.execute(f"ALTER TABLE coord_envelopes DROP COLUMN {column}")
        tx.execute(f"UPDATE {table} SET version = ? WHERE owner = 'coordinator'", (previous,))

    # Another process starts on the data as an upgraded coordinator would.
    again = Coordinator(
        coordinator.store.home, team=TEAM, clock=team.served.clock, database=database
    )
    try:
        with again.store.read() as tx:
            row = tx.execute("SELECT project, audience, reach FROM coord_envelopes").fetchone()
        assert (row[0], msgspec.json.decode(row[1], type=Audience), row[2] == row[1]) == (
            "billing",
            BACKEND,
            True,
        )
        with (
            running(coordinator_app(again, token=TOKEN)) as url,
            signed_client(url, cy, team=TEAM, token=TOKEN) as client,
        ):
            assert (_found(client), _fed(client)) == ([], [])
    finally:
        again.close()
