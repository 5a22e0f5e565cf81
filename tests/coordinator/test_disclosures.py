"""The disclosure log: an author learns who was served which of its own items, and when; never
another author's, never the query."""

from pathlib import Path

import pytest

from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.coordinator._disclosures import DisclosureLog
from memmesh.coordinator.protocol import (
    Disclosure,
    DisclosuresRequest,
    DisclosuresResponse,
    PublishItem,
    PublishRequest,
)
from memmesh.net.errors import Refused
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.registry import Identity, create_identity
from memmesh.registry.envelopes import seal
from tests._clock import START, FakeClock
from tests._servers import running
from tests._signed import add_member, caller, make_admin, signed_client
from tests.registry._helpers import TEAM, publication

ADA_ITEM = "01JABCDEFGHJKMNPQRSTVWX001"
ADA_OTHER = "01JABCDEFGHJKMNPQRSTVWX002"
BOB_ITEM = "01JABCDEFGHJKMNPQRSTVWX003"
# A word no item holds: if the query were kept anywhere, it would be in the file.
QUERY = "quokka ledger zyzzogeton"


@pytest.fixture
def team(coordinator: Coordinator, tmp_path: Path) -> dict[str, Identity]:
    """Ada (admin), Bob and Carol; Ada published two items, Bob one."""
    people = {name: create_identity(tmp_path / name) for name in ("ada", "bob", "carol")}
    make_admin(coordinator, people["ada"], "ada")
    add_member(coordinator, people["ada"], people["bob"], "bob")
    add_member(coordinator, people["ada"], people["carol"], "carol")
    for name, item, text in [
        ("ada", ADA_ITEM, "The quokka ledger rotates its keys on Tuesdays"),
        ("ada", ADA_OTHER, "The quokka ledger lives in the billing database"),
        ("bob", BOB_ITEM, "The quokka ledger is backed up nightly"),
    ]:
        who = people[name]
        envelope = seal(publication(who, item_id=item, text=text), who)
        coordinator.publish(caller(who), PublishRequest(items=[PublishItem(envelope=envelope)]))
    return people


def _search(c: Coordinator, asker: Identity) -> list[str]:
    answer = c.search(caller(asker), SearchRequest(query=QUERY, project="billing"))
    return sorted(hit.envelope.digest for hit in answer.hits)


def _disclosed(c: Coordinator, author: Identity, **fields: object) -> list[Disclosure]:
    return c.disclosures(caller(author), DisclosuresRequest(**fields)).entries  # type: ignore[arg-type]


def test_an_author_sees_who_was_served_its_own_items_only(
    coordinator: Coordinator, team: dict[str, Identity], clock: FakeClock
) -> None:
    clock.now = START + 7
    assert len(_search(coordinator, team["carol"])) == 3

    adas = _disclosed(coordinator, team["ada"])
    bobs = _disclosed(coordinator, team["bob"])

    carol = team["carol"].key_id
    assert sorted((d.item_id, d.asker_key_id, d.asker_name, d.served_at) for d in adas) == [
        (ADA_ITEM, carol, "carol", START + 7),
        (ADA_OTHER, carol, "carol", START + 7),
    ]
    assert [(d.item_id, d.asker_name) for d in bobs] == [(BOB_ITEM, "carol")]


def test_an_author_s_own_searches_are_not_disclosures(
    coordinator: Coordinator, team: dict[str, Identity]
) -> None:
    _search(coordinator, team["ada"])

    assert _disclosed(coordinator, team["ada"]) == []
    assert [d.asker_name for d in _disclosed(coordinator, team["bob"])] == ["ada"]


def test_disclosures_of_one_item_newest_first(
    coordinator: Coordinator, team: dict[str, Identity], clock: FakeClock
) -> None:
    _search(coordinator, team["bob"])
    clock.now = START + 60
    _search(coordinator, team["carol"])

    entries = _disclosed(coordinator, team["ada"], item_id=ADA_ITEM)

    assert [(d.item_id, d.asker_name, d.served_at) for d in entries] == [
        (ADA_ITEM, "carol", START + 60),
        (ADA_ITEM, "bob", START),
    ]
    assert len(_disclosed(coordinator, team["ada"], limit=1)) == 1


def test_the_query_is_never_kept(
    coordinator: Coordinator, team: dict[str, Identity], database: str | None
) -> None:
    _search(coordinator, team["carol"])
    coordinator.close()

    files = coordinator.store.cache.path.parent.glob("memory.db*")
    assert all(b"zyzzogeton" not in path.read_bytes() for path in files)
    reopened = Coordinator(coordinator.store.home, team=TEAM, database=database)
    try:
        assert len(_disclosed(reopened, team["ada"])) == 2  # the rows were written at close
    finally:
        reopened.close()


def test_the_log_keeps_only_the_newest_rows(coordinator: Coordinator) -> None:
    log = DisclosureLog(coordinator.store, clock=FakeClock(), limit=5)
    for n in range(8):
        log.record("asker", [("author", f"item-{n}")])
        log.flush()

    entries = log.entries("author", None, 100)

    assert [row.item_id for row in entries] == [f"item-{n}" for n in (7, 6, 5, 4, 3)]


def test_a_flood_of_searches_evicts_only_the_flooder_s_own_rows(coordinator: Coordinator) -> None:
    # Beyond the bound, the rows that go are those of the (author, asker) with the most: a member
    # who searches without end cannot push out what an author was told about anyone else.
    log = DisclosureLog(coordinator.store, clock=FakeClock(), limit=6)
    log.record("carol", [("ada", "ada-secret")])
    log.record("mallory", [("ada", "ada-secret")])
    log.record("carol", [("bob", "bob-item")])
    log.flush()
    for n in range(40):
        log.record("mallory", [("bob", f"bob-{n}"), ("ada", "ada-other")])
        log.flush()

    told_ada = [(row.asker_key, row.item_id) for row in log.entries("ada", None, 100)]
    told_bob = [(row.asker_key, row.item_id) for row in log.entries("bob", None, 100)]

    assert ("carol", "ada-secret") in told_ada
    assert ("carol", "bob-item") in told_bob
    assert ("mallory", "bob-39") in told_bob  # the flood is in the log too, newest first
    with coordinator.store.read() as tx:
        assert tx.execute("SELECT count(*) FROM coord_disclosures").fetchone()[0] == 6


def test_rows_wait_in_memory_and_are_written_in_one_batch(coordinator: Coordinator) -> None:
    log = DisclosureLog(coordinator.store, clock=FakeClock(), every=3600)
    log.record("asker", [("author", "item-1"), ("author", "item-2")])

    with coordinator.store.read() as tx:
        before = tx.execute("SELECT count(*) FROM coord_disclosures").fetchone()[0]
    log.close()
    with coordinator.store.read() as tx:
        after = tx.execute("SELECT count(*) FROM coord_disclosures").fetchone()[0]

    assert (before, after) == (0, 2)


def test_disclosures_over_the_wire_are_the_signer_s_own(
    coordinator: Coordinator, team: dict[str, Identity], tmp_path: Path
) -> None:
    with running(coordinator_app(coordinator, token=None)) as url:
        with signed_client(url, team["carol"], team=TEAM) as client:
            client.post("/v1/search", SearchRequest(query=QUERY, project="billing"), SearchResponse)
        with signed_client(url, team["bob"], team=TEAM) as client:
            bobs = client.post("/v1/disclosures", DisclosuresRequest(), DisclosuresResponse)
        stranger = create_identity(tmp_path / "mallory")
        with (
            signed_client(url, stranger, team=TEAM) as client,
            pytest.raises(Refused) as refused,
        ):
            client.post("/v1/disclosures", DisclosuresRequest(), DisclosuresResponse)

    assert [(d.item_id, d.asker_name) for d in bobs.entries] == [(BOB_ITEM, "carol")]
    assert refused.value.http_status == 403


def test_a_cap_per_asker_keeps_every_asker_in_view_whatever_one_searched(
    coordinator: Coordinator, team: dict[str, Identity], clock: FakeClock
) -> None:
    _search(coordinator, team["carol"])
    for n in range(1, 31):
        clock.now = START + n
        _search(coordinator, team["bob"])

    capped = _disclosed(coordinator, team["ada"], limit=20, per_asker=5)
    flooded = _disclosed(coordinator, team["ada"], limit=20)

    assert [d.asker_name for d in capped[:5]] == ["bob"] * 5
    assert {d.asker_name for d in capped[5:]} == {"carol"}
    assert [d.served_at for d in capped] == sorted((d.served_at for d in capped), reverse=True)
    assert min(d.served_at for d in capped[:5]) >= START + 28  # bob's newest
    assert {d.asker_name for d in flooded} == {"bob"}  # without the cap, the newest 20
