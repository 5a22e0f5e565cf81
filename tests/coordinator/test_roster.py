"""The roster, from an attacker's side, over a real server: once it has a member only members
are served, a revoked key is refused everywhere at once, and only admins change it."""

from pathlib import Path
from typing import Any

import pytest

from memmesh.coordinator import Coordinator
from memmesh.coordinator.invites import new_secret, secret_digest
from memmesh.coordinator.protocol import (
    ChangesRequest,
    ChangesResponse,
    DisclosuresRequest,
    Info,
    InviteRequest,
    MemberAdd,
    MemberRevoke,
    PresenceList,
    PublishItem,
    PublishRequest,
    PublishResponse,
    RetractRequest,
    RetractResponse,
    RevokeResponse,
    Roster,
    RosterMember,
)
from memmesh.net.client import Client
from memmesh.net.errors import Forbidden, Refused
from memmesh.net.presence import PresenceRequest, PresenceResponse
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.registry import Identity, create_identity
from memmesh.registry.envelopes import open_envelope, seal
from tests._clock import START
from tests._signed import caller
from tests.coordinator._served import TOKEN, Served
from tests.registry._helpers import TEAM, publication, retraction
from tests.team._team import presence_for

QUOKKA = "The quokka ledger rotates its signing keys every Tuesday at noon"
NOT_A_MEMBER = f"this key is not a member of team {TEAM!r} (HTTP 403)"
NOT_AN_ADMIN = f"only an admin of team {TEAM!r} may do this (HTTP 403)"
REVOKED = "this key was revoked on 2023-11-14 22:13 UTC (HTTP 403)"


def _pub(served: Served, identity: Identity, **changes: Any) -> PublishRequest:
    fingerprint = served.coordinator.store.embedder.fingerprint
    body = publication(identity, text=QUOKKA, embedder=fingerprint, **changes)
    return PublishRequest(items=[PublishItem(envelope=seal(body, identity))])


def _search(client: Client) -> list[str]:
    answer = client.post(
        "/v1/search", SearchRequest(query="quokka ledger", project="billing"), SearchResponse
    )
    return [open_envelope(hit.envelope).key_id for hit in answer.hits]


def _members_routes(identity: Identity) -> list[tuple[str, Any]]:
    """Every route for members, each with a body it accepts (``None``: a GET)."""
    beat = presence_for(identity, "http://127.0.0.1:8410", team=TEAM, name="x", expires_at=START)
    return [
        ("/v1/info", None),
        ("/v1/members", None),
        ("/v1/presence/list", None),
        ("/v1/openapi.json", None),
        ("/v1/changes", ChangesRequest()),
        ("/v1/search", SearchRequest(query="quokka")),
        ("/v1/publish", PublishRequest(items=[PublishItem(envelope=beat)])),
        ("/v1/retract", RetractRequest(envelopes=[beat])),
        ("/v1/presence", PresenceRequest(envelope=beat)),
        ("/v1/disclosures", DisclosuresRequest()),
        ("/v1/members/add", MemberAdd(name="eve", key=identity.public_key_text)),
        ("/v1/members/revoke", MemberRevoke(member="ada")),
        (
            "/v1/invites",
            InviteRequest(name="eve", digest=secret_digest(new_secret()), expires_at=START + 60),
        ),
    ]


def _call(client: Client, path: str, body: Any) -> object:
    """GET ``path``, or POST ``body`` to it."""
    return client.get(path, dict) if body is None else client.post(path, body, dict)


def _refusals(client: Client, routes: list[tuple[str, Any]]) -> dict[str, tuple[int, str]]:
    refused = {}
    for path, body in routes:
        with pytest.raises(Refused) as caught:
            _call(client, path, body)
        refused[path] = (caught.value.http_status, caught.value.message)
    return refused


# -- who is admitted -------------------------------------------------------------------------


def test_any_signer_is_served_while_the_roster_is_empty(served: Served) -> None:
    mallory = served.key("mallory")
    with served.client(mallory) as client:
        published = client.post("/v1/publish", _pub(served, mallory), PublishResponse)
        info = client.get("/v1/info", Info)
        roster = client.get("/v1/members", Roster)

    assert [r.status for r in published.results] == ["accepted"]
    assert info.roster is False
    assert roster == Roster(members=[], enforced=False)


def test_a_stranger_key_is_refused_on_every_route_once_the_roster_has_a_member(
    served: Served, ada: Identity
) -> None:
    mallory = served.key("mallory")
    routes = _members_routes(mallory)

    with served.client(mallory) as client:
        refused = _refusals(client, routes)

    assert refused == dict.fromkeys([path for path, _ in routes], (403, NOT_A_MEMBER))
    assert served.coordinator.info().published == 0
    with served.client(ada) as client:
        assert client.get("/v1/info", Info).roster is True


def test_an_unsigned_request_is_refused_even_with_the_token(served: Served, ada: Identity) -> None:
    with Client(served.url, token=TOKEN) as client, pytest.raises(Refused) as refused:
        client.get("/v1/info", Info)

    assert refused.value.http_status == 401


def test_a_revoked_key_is_refused_on_every_route(
    served: Served, ada: Identity, bob: Identity
) -> None:
    with served.client(ada) as client:
        client.post("/v1/members/revoke", MemberRevoke(member="bob"), RevokeResponse)
    routes = _members_routes(bob)

    with served.client(bob) as client:
        refused = _refusals(client, routes)

    assert refused == dict.fromkeys([path for path, _ in routes], (403, REVOKED))


def test_a_revoke_in_one_worker_holds_in_another_at_once(
    served: Served, ada: Identity, bob: Identity, database: str | None
) -> None:
    # A second process's coordinator over the same data, as `--workers 2` runs it.
    other = Coordinator(
        served.root / "coordinator", team=TEAM, clock=served.clock, database=database
    )
    try:
        other.admit(caller(bob))
        with served.client(ada) as client:
            client.post("/v1/members/revoke", MemberRevoke(member=bob.key_id), RevokeResponse)
        with pytest.raises(Forbidden) as refused:
            other.admit(caller(bob))
    finally:
        other.close()

    assert refused.value.message == REVOKED.removesuffix(" (HTTP 403)")


def test_a_member_cannot_push_another_member_s_envelopes(
    served: Served, ada: Identity, bob: Identity
) -> None:
    with served.client(ada) as client:
        client.post("/v1/publish", _pub(served, ada), PublishResponse)
    adas_tombstone = seal(retraction(ada), ada)
    adas_beat = presence_for(ada, "http://127.0.0.1:8410", team=TEAM, name="ada")
    own_words = (
        f"a member pushes only its own envelopes: this one is signed by {ada.key_id}, "
        f"the request by {bob.key_id}"
    )

    with served.client(bob) as client:
        published = client.post("/v1/publish", _pub(served, ada, version=2), PublishResponse)
        retracted = client.post(
            "/v1/retract", RetractRequest(envelopes=[adas_tombstone]), RetractResponse
        )
        beat = client.post("/v1/presence", PresenceRequest(envelope=adas_beat), PresenceResponse)
        found = _search(client)
        listed = client.get("/v1/presence/list", PresenceList)

    assert [(r.status, r.reason, r.receipt) for r in published.results] == [
        ("rejected", own_words, None)
    ]
    assert [(r.status, r.reason, r.receipt) for r in retracted.results] == [
        ("rejected", own_words, None)
    ]
    assert (beat.status, beat.reason) == ("rejected", own_words)
    assert found == [ada.key_id]  # still Ada's version 1, still live
    assert listed.members == []


# -- what only admins do ---------------------------------------------------------------------


def test_a_member_who_is_not_an_admin_cannot_invite_add_or_revoke(
    served: Served, ada: Identity, bob: Identity
) -> None:
    eve = served.key("eve")
    before = served.coordinator.membership.roster()
    routes = [
        ("/v1/members/add", MemberAdd(name="eve", key=eve.public_key_text, admin=True)),
        ("/v1/members/revoke", MemberRevoke(member="ada", purge=True)),
        (
            "/v1/invites",
            InviteRequest(
                name="eve", digest=secret_digest(new_secret()), expires_at=START + 60, admin=True
            ),
        ),
    ]

    with served.client(bob) as client:
        refused = _refusals(client, routes)

    assert refused == dict.fromkeys([path for path, _ in routes], (403, NOT_AN_ADMIN))
    assert served.coordinator.membership.roster() == before


def test_an_admin_adds_a_member_who_is_then_served(served: Served, ada: Identity) -> None:
    carol = served.key("carol")
    with served.client(ada) as client:
        added = client.post(
            "/v1/members/add", MemberAdd(name="carol", key=carol.public_key_text), RosterMember
        )
    with served.client(carol) as client:
        roster = client.get("/v1/members", Roster)

    assert added == RosterMember(
        name="carol", key=carol.public_key_text, key_id=carol.key_id, admin=False, added_at=START
    )
    assert [(m.name, m.admin) for m in roster.members] == [("ada", True), ("carol", False)]
    assert roster.enforced is True


@pytest.mark.parametrize("clash", ["key", "name"])
def test_adding_a_key_or_an_active_name_twice_is_a_conflict(
    served: Served, ada: Identity, bob: Identity, clash: str
) -> None:
    other = served.key("other")
    request = (
        MemberAdd(name="robert", key=bob.public_key_text)
        if clash == "key"
        else MemberAdd(name="bob", key=other.public_key_text)
    )
    with served.client(ada) as client, pytest.raises(Refused) as refused:
        client.post("/v1/members/add", request, RosterMember)

    assert refused.value.http_status == 409
    assert len(served.coordinator.membership.roster().members) == 2


def test_the_name_of_a_revoked_member_is_free_but_its_key_is_not(
    served: Served, ada: Identity, bob: Identity
) -> None:
    new_bob = served.key("new-bob")
    with served.client(ada) as client:
        client.post("/v1/members/revoke", MemberRevoke(member="bob"), RevokeResponse)
        again = client.post(
            "/v1/members/add", MemberAdd(name="bob", key=new_bob.public_key_text), RosterMember
        )
        with pytest.raises(Refused) as refused:
            client.post(
                "/v1/members/add", MemberAdd(name="bobby", key=bob.public_key_text), RosterMember
            )

    assert again.key == new_bob.public_key_text
    assert refused.value.http_status == 409
    assert "revoked on 2023-11-14 22:13 UTC" in refused.value.message


def test_the_last_active_admin_cannot_be_revoked(
    served: Served, ada: Identity, bob: Identity
) -> None:
    with served.client(ada) as client:
        with pytest.raises(Refused) as refused:
            client.post("/v1/members/revoke", MemberRevoke(member="ada"), RevokeResponse)
        client.post("/v1/members/add", MemberAdd(name="cy", key=served.key("cy").public_key_text,
                                                 admin=True), RosterMember)  # fmt: skip
        revoked = client.post("/v1/members/revoke", MemberRevoke(member="ada"), RevokeResponse)

    assert (refused.value.http_status, refused.value.message) == (
        409,
        "ada is the team's last admin; make another admin first (HTTP 409)",
    )
    assert revoked.member.revoked_at == START


def test_revoking_someone_not_on_the_roster_is_not_found(served: Served, ada: Identity) -> None:
    with served.client(ada) as client, pytest.raises(Refused) as refused:
        client.post("/v1/members/revoke", MemberRevoke(member="nobody"), RevokeResponse)

    assert refused.value.http_status == 404


# -- revocation and what it removes ----------------------------------------------------------
@pytest.mark.parametrize("database", [None], ids=["sqlite"])  # SQLite's own files
def test_revoke_with_purge_removes_the_member_s_items_from_search_storage_and_feed(
    served: Served, ada: Identity, bob: Identity
) -> None:
    tombstone = seal(retraction(bob, item_id="01JABCDEFGHJKMNPQRSTVWX999"), bob)
    with served.client(bob) as client:
        client.post("/v1/publish", _pub(served, bob), PublishResponse)
        client.post("/v1/retract", RetractRequest(envelopes=[tombstone]), RetractResponse)
    with served.client(ada) as client:
        assert _search(client) == [bob.key_id]
        served.clock.now = START + 10
        revoked = client.post(
            "/v1/members/revoke", MemberRevoke(member=bob.public_key_text, purge=True),
            RevokeResponse,
        )  # fmt: skip
        found = _search(client)
        feed = client.post("/v1/changes", ChangesRequest(), ChangesResponse)
        roster = client.get("/v1/members", Roster)

    assert (revoked.member.name, revoked.member.revoked_at, revoked.purged) == (
        "bob",
        START + 10,
        1,
    )
    assert found == []
    assert feed.changes == []  # its tombstone went too: nothing bob signed is taken again
    assert [(m.name, m.revoked_at) for m in roster.members] == [("ada", None), ("bob", START + 10)]
    with served.coordinator.store.read() as tx:
        texts = tx.execute("SELECT text FROM items").fetchall()
        (wal,) = tx.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[:1]
    assert wal == 0
    assert texts == [("",)]
    assert b"quokka ledger rotates" not in served.coordinator.store.cache.path.read_bytes()


def test_revoke_without_purge_keeps_the_items_but_refuses_the_key(
    served: Served, ada: Identity, bob: Identity
) -> None:
    with served.client(bob) as client:
        client.post("/v1/publish", _pub(served, bob), PublishResponse)
    with served.client(ada) as client:
        revoked = client.post("/v1/members/revoke", MemberRevoke(member="bob"), RevokeResponse)
        found = _search(client)

    assert revoked.purged == 0
    assert found == [bob.key_id]
    with served.client(bob) as client, pytest.raises(Refused) as refused:
        client.post("/v1/publish", _pub(served, bob, version=2), PublishResponse)
    assert refused.value.http_status == 403


def test_a_revoked_member_s_presence_is_no_longer_listed(
    served: Served, ada: Identity, bob: Identity
) -> None:
    beat = presence_for(bob, "http://127.0.0.1:8410", team=TEAM, name="bob", expires_at=START + 60)
    with served.client(bob) as client:
        answer = client.post("/v1/presence", PresenceRequest(envelope=beat), PresenceResponse)
    with served.client(ada) as client:
        before = client.get("/v1/presence/list", PresenceList)
        client.post("/v1/members/revoke", MemberRevoke(member="bob"), RevokeResponse)
        after = client.get("/v1/presence/list", PresenceList)

    assert answer.status == "accepted"
    assert answer.roster is not None
    assert [m.name for m in answer.roster.members] == ["ada", "bob"]
    assert before.members == [beat]
    assert after.members == []
    assert after.roster is not None
    assert [(m.name, m.revoked_at) for m in after.roster.members] == [
        ("ada", None),
        ("bob", START),
    ]


def test_a_coordinator_beyond_loopback_without_a_token_admits_nobody_before_its_first_member(
    tmp_path: Path,
) -> None:
    # A stranger who signs gets nothing before the first admin joins with the bootstrap code.
    stranger = create_identity(tmp_path / "stranger")
    coordinator = Coordinator(tmp_path / "data", team=TEAM, open_without_roster=False)
    try:
        with pytest.raises(Forbidden, match="has no members yet"):
            coordinator.membership.admit(caller(stranger))
    finally:
        coordinator.close()


@pytest.mark.parametrize(
    "name",
    [
        "bob\x1b[2K\rada (admin)",
        "bob\nada",
        "\u202eimda",
        "bob\u200b",
        "bob\x00",
        "\u0430da",  # a Cyrillic a: looks like "ada"
        "Ada Lovelace",  # not a name the member's items could carry as their author
    ],
)
def test_a_roster_name_with_control_or_invisible_characters_is_refused(
    served: Served, ada: Identity, name: str
) -> None:
    # Names are printed to every member's terminal (members, disclosures, recall authors): one
    # that moves the cursor, hides itself or flips the text could pass for another member.
    newcomer = served.key("newcomer")
    add = MemberAdd(name=name, key=newcomer.public_key_text)
    invite = InviteRequest(name=name, digest=secret_digest(new_secret()), expires_at=START + 60)
    with served.client(ada) as client:
        for path, body in (("/v1/members/add", add), ("/v1/invites", invite)):
            with pytest.raises(Refused) as refused:
                client.post(path, body, dict)
            assert refused.value.http_status == 400, path
    assert [m.name for m in served.coordinator.membership.roster().members] == ["ada"]
