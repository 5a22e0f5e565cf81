"""Retracted text on the coordinator's disk, read from outside: after a retraction or a revoke
with purge, no file of its data folder (the database, its WAL and shared-memory files, and
anything else there) holds a retracted sentence or any odd word of it, while it runs and after
a restart. On PostgreSQL, no file of the database's own folder holds one either once a
checkpoint wrote its pages; its WAL keeps them until it is recycled (docs/security.md)."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.coordinator._postgres import PostgresStore
from memmesh.coordinator.protocol import (
    MemberRevoke,
    PublishItem,
    PublishRequest,
    PublishResponse,
    RetractRequest,
    RetractResponse,
    RevokeResponse,
)
from memmesh.net.client import Client
from memmesh.net.errors import Refused
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.registry import Identity, create_identity
from memmesh.registry.envelopes import Publication, open_envelope, seal
from tests._clock import FakeClock
from tests._servers import running
from tests._signed import add_member, make_admin, signed_client
from tests._traces import SecretItem, all_needles, found_anywhere, secret_items, traces
from tests.coordinator._served import TOKEN, Served
from tests.registry._helpers import TEAM, publication, retraction

SECRETS = secret_items(20)
KEPT = secret_items(5, seed=8, long_one=False)


def _left(served: Served, data: Path, items: list[SecretItem]) -> dict[str, list[str]]:
    """Where ``items`` left a needle on the coordinator's disk: its data folder (its search
    cache brought up to the database first) and, on PostgreSQL, the files of its database
    once the tables that held purged texts were rewritten and a checkpoint wrote its pages,
    its WAL aside."""
    store = served.coordinator.store
    store.follow()
    found = traces(data, items)
    if isinstance(store, PostgresStore):
        store.erase()  # as the process's follower does, every few seconds
        with psycopg.connect(store.url, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
            row = conn.execute(
                "SELECT oid FROM pg_database WHERE datname = current_database()"
            ).fetchone()
        assert row is not None
        folder = Path(parse_qs(urlsplit(store.url).query)["host"][0]) / "base" / str(row[0])
        found |= {f"postgresql:{name}": hits for name, hits in traces(folder, items).items()}
    return found


def _seen(served: Served, data: Path, items: list[SecretItem]) -> set[str]:
    """Every needle of ``items`` found by :func:`_left`."""
    return {hit for hits in _left(served, data, items).values() for hit in hits}


def _item_id(n: int) -> str:
    return f"01JABCDEFGHJKMNPQRSTVW{n:04d}"


def _publish(client: Client, identity: Identity, items: list[SecretItem], first: int) -> None:
    """Publish ``items`` as ``identity``'s, under ids from ``first`` on, in one request."""
    envelopes = [
        seal(
            publication(
                identity, text=item.text, tags=(item.tag,), item_id=_item_id(first + n),
                seq=first + n + 1, embedder="hashing-test",
            ),
            identity,
        )
        for n, item in enumerate(items)
    ]  # fmt: skip
    request = PublishRequest(items=[PublishItem(envelope=e) for e in envelopes])
    answer = client.post("/v1/publish", request, PublishResponse)
    assert [o.status for o in answer.results] == ["accepted"] * len(items)


def _retract(client: Client, identity: Identity, count: int, first: int) -> None:
    """Retract ``identity``'s ``count`` items from ``first`` on, in one request (as a sync
    sends a batch)."""
    envelopes = [
        seal(retraction(identity, item_id=_item_id(first + n), seq=1000 + first + n), identity)
        for n in range(count)
    ]
    answer = client.post("/v1/retract", RetractRequest(envelopes=envelopes), RetractResponse)
    assert [o.status for o in answer.results] == ["accepted"] * count


def _found(client: Client, item: SecretItem) -> bool:
    """Whether a search for the item's own rare word brings back a text holding that word (the
    answer may also hold neighbours found by meaning)."""
    answer = client.post(
        "/v1/search", SearchRequest(query=item.word, project="billing"), SearchResponse
    )
    bodies = [open_envelope(hit.envelope) for hit in answer.hits]
    return any(isinstance(b, Publication) and item.word in b.text for b in bodies)


def test_a_retraction_leaves_no_retracted_sentence_or_word_in_any_file_of_the_data_folder(
    served: Served, data: Path, bob: Identity
) -> None:
    with served.client(bob) as client:
        _publish(client, bob, SECRETS + KEPT, 0)
        # The scan sees text where it is: every item is in the folder while it is published,
        # and the search lexicon has loaded every word.
        assert _seen(served, data, SECRETS + KEPT) >= all_needles(SECRETS + KEPT)
        assert _found(client, SECRETS[1])

        _retract(client, bob, len(SECRETS), 0)

        assert not _found(client, SECRETS[1])
        assert _left(served, data, SECRETS) == {}
        assert _seen(served, data, KEPT) >= all_needles(KEPT)  # the rest is still there


def _publish_secrets_and_kept(served: Served, ada: Identity, bob: Identity) -> None:
    """Bob publishes the items to be purged, Ada the ones that must stay."""
    with served.client(bob) as client:
        _publish(client, bob, SECRETS, 0)
    with served.client(ada) as client:
        _publish(client, ada, KEPT, 100)


def test_revoking_a_member_with_purge_leaves_none_of_its_text_in_any_file(
    served: Served, data: Path, ada: Identity, bob: Identity
) -> None:
    _publish_secrets_and_kept(served, ada, bob)
    with served.client(ada) as client:
        assert _found(client, SECRETS[1])

        revoked = client.post(
            "/v1/members/revoke", MemberRevoke(member="bob", purge=True), RevokeResponse
        )

        assert revoked.purged == len(SECRETS)
        assert not _found(client, SECRETS[1])
    assert _left(served, data, SECRETS) == {}
    assert _seen(served, data, KEPT) >= all_needles(KEPT)


def test_an_operator_s_purge_of_a_key_leaves_none_of_its_text_in_any_file(
    served: Served, data: Path, ada: Identity, bob: Identity
) -> None:
    _publish_secrets_and_kept(served, ada, bob)

    assert served.coordinator.holdings.purge(bob.public_key_text) == len(SECRETS)

    assert _left(served, data, SECRETS) == {}
    assert _seen(served, data, KEPT) >= all_needles(KEPT)


def test_a_retraction_takes_the_text_of_every_earlier_version_off_the_disk_too(
    served: Served, data: Path, bob: Identity
) -> None:
    first, second = SECRETS[1], SECRETS[2]
    with served.client(bob) as client:
        for version, item in enumerate((first, second), start=1):
            body = publication(
                bob, text=item.text, tags=(item.tag,), version=version, seq=version,
                embedder="hashing-test",
            )  # fmt: skip
            request = PublishRequest(items=[PublishItem(envelope=seal(body, bob))])
            client.post("/v1/publish", request, PublishResponse)
        tombstone = seal(retraction(bob, version=2, seq=3), bob)
        client.post("/v1/retract", RetractRequest(envelopes=[tombstone]), RetractResponse)

    assert _left(served, data, [first, second]) == {}


@contextmanager
def _serving(data: Path, clock: FakeClock) -> Iterator[tuple[Coordinator, str]]:
    coordinator = Coordinator(data, team=TEAM, clock=clock)
    try:
        with running(coordinator_app(coordinator, token=TOKEN)) as url:
            yield coordinator, url
    finally:
        coordinator.close()


def test_nothing_retracted_or_purged_is_on_disk_after_a_restart(
    tmp_path: Path, data: Path, clock: FakeClock
) -> None:
    ada, bob = create_identity(tmp_path / "ada"), create_identity(tmp_path / "bob")
    with _serving(data, clock) as (coordinator, url):
        make_admin(coordinator, ada, "ada")
        add_member(coordinator, ada, bob, "bob")
        with signed_client(url, bob, team=TEAM, token=TOKEN) as client:
            _publish(client, bob, SECRETS[:10], 0)
        with signed_client(url, ada, team=TEAM, token=TOKEN) as client:
            _publish(client, ada, SECRETS[10:] + KEPT, 100)
            _retract(client, ada, 10, 100)
            client.post("/v1/members/revoke", MemberRevoke(member="bob", purge=True),
                        RevokeResponse)  # fmt: skip
    after_stop = traces(data, SECRETS)
    with _serving(data, clock) as (_, url):
        with signed_client(url, ada, team=TEAM, token=TOKEN) as client:
            assert not _found(client, SECRETS[12])
            assert _found(client, KEPT[0])
        while_serving_again = traces(data, SECRETS)
    assert (after_stop, while_serving_again, traces(data, SECRETS)) == ({}, {}, {})
    assert found_anywhere(data, KEPT) == all_needles(KEPT)


class _Killed(BaseException):
    """Stands for the process dying at this exact instant."""


def test_a_scrub_cut_short_by_a_crash_is_done_when_the_coordinator_starts_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, data: Path, clock: FakeClock
) -> None:
    ada = create_identity(tmp_path / "ada")
    with _serving(data, clock) as (coordinator, url):

        def die() -> bool:
            raise _Killed

        with signed_client(url, ada, team=TEAM, token=TOKEN) as client:
            _publish(client, ada, SECRETS + KEPT, 0)
            monkeypatch.setattr(coordinator.store, "scrub", die)
            with pytest.raises(Refused):  # it died mid-request: no answer of its own
                _retract(client, ada, len(SECRETS), 0)
    # The retraction committed; what its scrub would have removed is owed, and paid at start.
    with _serving(data, clock):
        assert traces(data, SECRETS) == {}
    assert found_anywhere(data, KEPT) == all_needles(KEPT)
