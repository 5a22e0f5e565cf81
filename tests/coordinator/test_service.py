"""The coordinator's rules, called directly on a real `Coordinator` over a real SQLite file."""

import sqlite3
from pathlib import Path
from typing import Any

import msgspec
import pytest

from memmesh.coordinator import Coordinator
from memmesh.coordinator.protocol import (
    ChangesRequest,
    ChangesResponse,
    Info,
    Outcome,
    PublishItem,
    PublishRequest,
    RetractRequest,
)
from memmesh.coordinator.service import MAX_PRESENCE_TTL
from memmesh.local import _recall
from memmesh.net.presence import PresenceRequest, PresenceResponse
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.registry import Identity, create_identity
from memmesh.registry.envelopes import (
    Envelope,
    Publication,
    open_envelope,
    seal,
    text_hash,
)
from tests._clock import FakeClock
from tests._signed import NOBODY, author_of, caller
from tests.coordinator._served import cache_read
from tests.registry._helpers import TEAM, flip_bit, publication, retraction
from tests.team._team import presence_for

NOW = 1_700_000_000.0
ITEM = "01JABCDEFGHJKMNPQRSTVWXYZ0"
QUOKKA = "The quokka ledger rotates its signing keys every Tuesday at noon"
QUOKKA_PHRASE = b"quokka ledger rotates its signing keys"
SIGNATURE_FAILS = "envelope rejected: the signature does not verify"
TEXTS = (
    "The billing service retries webhooks five times with exponential backoff",
    "Deploys to the marmot cluster need the canary flag set first",
    "The flaky pelican test suite must run with a fixed random seed",
    "Our axolotl queue drops messages larger than one megabyte",
    "Always pin the narwhal SDK to the exact patch version",
)
Row = tuple[Any, ...]
Snapshot = tuple[Info, ChangesResponse, list[Row], list[Row]]


class _Killed(BaseException):
    """Stands for the process dying at this exact instant (nothing below catches it)."""


@pytest.fixture
def identity(tmp_path: Path) -> Identity:
    return create_identity(tmp_path / "ada")


@pytest.fixture
def other_identity(tmp_path: Path) -> Identity:
    return create_identity(tmp_path / "mallory")


def _item_id(n: int) -> str:
    return f"01JABCDEFGHJKMNPQRSTVWX{n:03d}"


def _pub(c: Coordinator, identity: Identity, *, text: str = QUOKKA, **changes: Any) -> Publication:
    """A publication in the coordinator's own vector space (so its vector is used)."""
    return publication(identity, text=text, embedder=c.store.embedder.fingerprint, **changes)


def _vector(c: Coordinator, text: str) -> list[float]:
    vector: list[float] = c.store.embedder.embed([text])[0].tolist()
    return vector


def _publish(c: Coordinator, envelope: Envelope, vector: list[float] | None = None) -> Outcome:
    """Publish ``envelope`` as its author would (signing the request with the key inside)."""
    request = PublishRequest(items=[PublishItem(envelope=envelope, vector=vector)])
    (outcome,) = c.publish(author_of(envelope), request).results
    return outcome


def _retract(c: Coordinator, envelope: Envelope) -> Outcome:
    """Retract ``envelope`` as its author would; the receipt is checked elsewhere."""
    (outcome,) = c.retract(author_of(envelope), RetractRequest(envelopes=[envelope])).results
    return msgspec.structs.replace(outcome, receipt=None)


def _heartbeat(c: Coordinator, envelope: Envelope) -> PresenceResponse:
    """Send the heartbeat as its member would; the roster in the answer is checked elsewhere."""
    answer = c.heartbeat(author_of(envelope), PresenceRequest(envelope=envelope))
    return msgspec.structs.replace(answer, roster=None)


def _search(c: Coordinator, query: str, **fields: Any) -> SearchResponse:
    return c.search(NOBODY, SearchRequest(query=query, project="billing", **fields))


def _found(c: Coordinator, query: str) -> list[str]:
    """Item ids a lexical search returns, each checked against its signature."""
    return [open_envelope(hit.envelope).item_id for hit in _search(c, query).hits]


def _snapshot(c: Coordinator) -> Snapshot:
    """Everything a request could have changed: counts, the feed, the cache, presence."""
    with cache_read(c) as conn:
        items = conn.execute(
            "SELECT id, text, kind, project, tags, author, status, content_hash, vector "
            "FROM items ORDER BY id"
        ).fetchall()
    with c.store.read() as conn:
        presence = conn.execute(
            "SELECT key_id, payload, signature, expires_at FROM coord_presence ORDER BY key_id"
        ).fetchall()
    return c.info(), c.changes(ChangesRequest(limit=500)), items, presence


def _copy_of(c: Coordinator, identity: Identity, item_id: str = ITEM) -> str:
    """The store id of the searchable copy of ``identity``'s item ``item_id``."""
    with c.store.read() as conn:
        (copy,) = conn.execute(
            "SELECT copy_id FROM coord_envelopes WHERE author_key = ? AND item_id = ?",
            (identity.public_key_text, item_id),
        ).fetchone()
    return str(copy)


def _presence(identity: Identity, *, expires_at: float, team: str = TEAM) -> Envelope:
    return presence_for(
        identity, "http://127.0.0.1:8410", team=team, name="ada", expires_at=expires_at
    )


def _database_bytes(c: Coordinator) -> bytes:
    """The database file after a checkpoint has moved every WAL page into it."""
    with c.store.read() as conn:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    assert busy == 0
    wal = c.store.cache.path.with_name(c.store.cache.path.name + "-wal")
    return c.store.cache.path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


# -- publish and search ----------------------------------------------------------------------


def test_valid_publication_is_accepted_and_found_by_hybrid_search(
    coordinator: Coordinator, identity: Identity
) -> None:
    envelope = seal(_pub(coordinator, identity), identity)
    # The vector beside the envelope is stored as sent: here, the embedding of another text.
    sent_vector = _vector(coordinator, TEXTS[1])

    outcome = _publish(coordinator, envelope, sent_vector)

    assert outcome == Outcome(item_id=ITEM, version=1, status="accepted")
    answer = _search(
        coordinator,
        "quokka ledger signing keys",
        vector=sent_vector,
        embedder=coordinator.store.embedder.fingerprint,
    )
    assert answer.lexical_only is False
    assert answer.abstained is False
    assert answer.embedder == coordinator.store.embedder.fingerprint
    (hit,) = answer.hits
    assert hit.envelope == envelope
    assert open_envelope(hit.envelope) == _pub(coordinator, identity)
    # The query vector is the item's stored vector: the cosine half saw both.
    assert hit.cosine == pytest.approx(1.0, abs=1e-5)
    assert hit.lexical > 0
    info = coordinator.info()
    assert (info.published, info.tombstones, info.online) == (1, 0, 0)


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"embedder": "some-model-v3-d768"}, id="another-embedder"),
        pytest.param({}, id="no-vector"),
    ],
)
def test_search_without_a_usable_query_vector_ranks_by_its_own_embedding_of_the_text(
    coordinator: Coordinator, identity: Identity, fields: dict[str, Any]
) -> None:
    envelope = seal(_pub(coordinator, identity), identity)
    _publish(coordinator, envelope, _vector(coordinator, TEXTS[1]))
    if fields:
        fields["vector"] = _vector(coordinator, TEXTS[1])
    query = "quokka ledger signing keys"
    own = _search(
        coordinator, query, vector=coordinator.store.embedder.embed_query(query).tolist(),
        embedder=coordinator.store.embedder.fingerprint,
    )  # fmt: skip

    answer = _search(coordinator, query, **fields)

    assert answer.lexical_only is False
    (hit,) = answer.hits
    assert hit.envelope == envelope
    # The foreign vector was not used: it is the item's own vector, so it would score 1.0.
    # The coordinator's own embedding of the query was, as if the asker had sent it.
    assert hit.cosine < 0.99
    assert answer == own


def test_search_with_a_vector_of_the_wrong_size_ranks_by_its_own_embedding_of_the_text(
    coordinator: Coordinator, identity: Identity
) -> None:
    _publish(coordinator, seal(_pub(coordinator, identity), identity))

    answer = _search(
        coordinator,
        "quokka ledger",
        vector=[0.5] * 7,
        embedder=coordinator.store.embedder.fingerprint,
    )

    assert answer.lexical_only is False
    assert answer == _search(coordinator, "quokka ledger")
    assert [open_envelope(h.envelope).item_id for h in answer.hits] == [ITEM]


def test_search_filters_by_author_name(coordinator: Coordinator, identity: Identity) -> None:
    _publish(coordinator, seal(_pub(coordinator, identity, author="ada"), identity))

    assert _found(coordinator, "quokka ledger") == [ITEM]
    assert _search(coordinator, "quokka ledger", authors=["ada"]).hits != []
    answer = _search(coordinator, "quokka ledger", authors=["grace"])
    assert answer.hits == []
    assert answer.abstained is True


def test_search_answers_each_hit_with_its_own_envelope_best_first(
    coordinator: Coordinator,
    identity: Identity,
    other_identity: Identity,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every note shares the query's first words: an answer keeping all its candidates (not
    # only those near the best) shows each with its own envelope.
    monkeypatch.setattr(_recall, "MIN_SHARE_OF_BEST", 0.0)
    sent, by_ada = {}, set()
    for n, fact in enumerate(TEXTS):
        text = f"Quokka ledger note: {fact}"
        signer, author = (identity, "ada") if n % 2 else (other_identity, "grace")
        body = _pub(coordinator, identity=signer, text=text, item_id=_item_id(n), author=author)
        sent[body.item_id] = seal(body, signer)
        _publish(coordinator, sent[body.item_id], _vector(coordinator, text))
        if author == "ada":
            by_ada.add(body.item_id)
    query = "quokka ledger note about the marmot cluster"

    answer = _search(coordinator, query, k=10)
    only_ada = _search(coordinator, query, k=1, authors=["ada"])

    assert len(answer.hits) == len(TEXTS)
    assert [hit.score for hit in answer.hits] == sorted(
        (hit.score for hit in answer.hits), reverse=True
    )
    for hit in answer.hits:
        assert hit.envelope == sent[open_envelope(hit.envelope).item_id]
    ada_first = next(h for h in answer.hits if open_envelope(h.envelope).item_id in by_ada)
    assert only_ada.hits == [ada_first]


# -- rejections change nothing -----------------------------------------------------------------


def test_forged_signature_is_rejected_and_changes_nothing(
    coordinator: Coordinator, identity: Identity
) -> None:
    other = _pub(coordinator, identity, item_id=_item_id(1), text=TEXTS[0])
    _publish(coordinator, seal(other, identity))
    before = _snapshot(coordinator)
    genuine = seal(_pub(coordinator, identity), identity)
    forged = Envelope(payload=genuine.payload, signature=flip_bit(genuine.signature, 7))

    outcome = _publish(coordinator, forged)

    assert outcome.status == "rejected"
    assert outcome.reason == SIGNATURE_FAILS
    assert _snapshot(coordinator) == before
    assert _found(coordinator, "quokka ledger") == []


def test_altered_text_under_the_old_signature_is_rejected_and_changes_nothing(
    coordinator: Coordinator, identity: Identity
) -> None:
    genuine = seal(_pub(coordinator, identity), identity)
    assert _publish(coordinator, genuine).status == "accepted"
    before = _snapshot(coordinator)
    altered_text = "The quokka ledger never rotates its signing keys"
    # Version 2 with a matching content hash: only the signature can tell it was not signed.
    altered = msgspec.structs.replace(
        _pub(coordinator, identity),
        version=2,
        text=altered_text,
        content_hash=text_hash(altered_text),
    )
    tampered = Envelope(payload=msgspec.json.encode(altered), signature=genuine.signature)

    outcome = _publish(coordinator, tampered)

    assert outcome.status == "rejected"
    assert outcome.reason == SIGNATURE_FAILS
    assert _snapshot(coordinator) == before
    (hit,) = _search(coordinator, "quokka ledger").hits
    assert hit.envelope == genuine


def test_retraction_signed_by_another_key_touches_only_that_key_s_item(
    coordinator: Coordinator, identity: Identity, other_identity: Identity
) -> None:
    envelope = seal(_pub(coordinator, identity), identity)
    _publish(coordinator, envelope)
    stranger = seal(retraction(other_identity, version=2**53), other_identity)

    outcome = _retract(coordinator, stranger)

    # The tombstone is the stranger's own: it binds (their key, the id) and nothing else.
    assert outcome == Outcome(item_id=ITEM, version=2**53, status="accepted")
    (hit,) = _search(coordinator, "quokka ledger").hits
    assert hit.envelope == envelope
    newer = seal(_pub(coordinator, identity, version=2, seq=3), identity)
    assert _publish(coordinator, newer).status == "accepted"
    assert [c.envelope for c in coordinator.changes(ChangesRequest()).changes] == [
        stranger,
        newer,
    ]


@pytest.mark.parametrize("version", [1, 2], ids=["same-version", "newer-version"])
def test_publication_of_an_existing_item_id_by_another_key_is_that_key_s_own_item(
    coordinator: Coordinator, identity: Identity, other_identity: Identity, version: int
) -> None:
    envelope = seal(_pub(coordinator, identity), identity)
    _publish(coordinator, envelope)
    hijack_text = "The quokka ledger keys are stored in the wiki"
    hijack = seal(
        _pub(coordinator, other_identity, text=hijack_text, version=version), other_identity
    )

    outcome = _publish(coordinator, hijack)

    assert (outcome.status, outcome.reason) == ("accepted", "")
    # Each hit is served with the envelope its own author signed.
    served = {hit.envelope.payload: hit.envelope for hit in _search(coordinator, "quokka").hits}
    assert served == {envelope.payload: envelope, hijack.payload: hijack}
    newer = seal(_pub(coordinator, identity, version=version + 1, seq=3), identity)
    assert _publish(coordinator, newer).status == "accepted"
    info = coordinator.info()
    assert (info.published, info.tombstones) == (2, 0)


def test_replayed_older_version_is_stale_and_changes_nothing(
    coordinator: Coordinator, identity: Identity
) -> None:
    first = seal(_pub(coordinator, identity), identity)
    newer_text = "The quokka ledger rotates its signing keys every Friday at dawn"
    second = seal(_pub(coordinator, identity, text=newer_text, version=2, seq=2), identity)
    assert _publish(coordinator, first).status == "accepted"
    assert _publish(coordinator, second).status == "accepted"
    before = _snapshot(coordinator)

    outcome = _publish(coordinator, first)

    assert outcome.status == "stale"
    assert outcome.version == 1
    assert _snapshot(coordinator) == before
    (hit,) = _search(coordinator, "quokka ledger").hits
    assert hit.envelope == second
    assert [(c.item_id, c.version) for c in coordinator.changes(ChangesRequest()).changes] == [
        (ITEM, 2)
    ]


def test_same_envelope_twice_is_a_duplicate_and_changes_nothing(
    coordinator: Coordinator, identity: Identity
) -> None:
    envelope = seal(_pub(coordinator, identity), identity)
    assert _publish(coordinator, envelope).status == "accepted"
    before = _snapshot(coordinator)

    again = coordinator.publish(
        author_of(envelope),
        PublishRequest(items=[PublishItem(envelope=envelope), PublishItem(envelope=envelope)]),
    )

    assert [o.status for o in again.results] == ["duplicate", "duplicate"]
    assert _snapshot(coordinator) == before


def test_another_envelope_with_the_same_version_is_rejected(
    coordinator: Coordinator, identity: Identity
) -> None:
    envelope = seal(_pub(coordinator, identity), identity)
    _publish(coordinator, envelope)
    before = _snapshot(coordinator)
    other_text = "The quokka ledger rotates nothing at all"

    outcome = _publish(coordinator, seal(_pub(coordinator, identity, text=other_text), identity))

    assert outcome.status == "rejected"
    assert outcome.reason == "a different envelope has this version"
    assert _snapshot(coordinator) == before


def test_retraction_sent_to_the_publish_route_is_rejected(
    coordinator: Coordinator, identity: Identity
) -> None:
    before = _snapshot(coordinator)

    outcome = _publish(coordinator, seal(retraction(identity), identity))

    assert (outcome.status, outcome.reason) == ("rejected", "not a publication")
    assert _snapshot(coordinator) == before


def test_new_version_of_an_older_item_replaces_it_in_search(
    coordinator: Coordinator, identity: Identity
) -> None:
    _publish(coordinator, seal(_pub(coordinator, identity), identity), _vector(coordinator, QUOKKA))
    later = _pub(coordinator, identity, text=TEXTS[0], item_id=_item_id(1))
    _publish(coordinator, seal(later, identity), _vector(coordinator, TEXTS[0]))
    assert _found(coordinator, "quokka ledger signing keys")[0] == ITEM
    revised = "The quokka ledger rotates its signing keys every Friday at dawn"

    v2 = seal(_pub(coordinator, identity, text=revised, version=2), identity)
    assert _publish(coordinator, v2, _vector(coordinator, revised)).status == "accepted"

    vector = _vector(coordinator, QUOKKA)  # the old text's vector still finds the item
    fingerprint = coordinator.store.embedder.fingerprint
    for fields in ({}, {"vector": vector, "embedder": fingerprint}):
        found = _search(coordinator, "quokka ledger signing keys", **fields).hits
        # One hit for the item, its new version, still first.
        [hit] = [h for h in found if open_envelope(h.envelope).item_id == ITEM]
        assert (hit.envelope, found[0]) == (v2, hit)
        assert hit.cosine < 0.99  # scored by the new version's vector, not the old one's


def test_new_version_the_cache_refuses_keeps_the_live_version(
    coordinator: Coordinator, identity: Identity
) -> None:
    envelope = seal(_pub(coordinator, identity), identity)
    _publish(coordinator, envelope)
    before = _snapshot(coordinator)

    outcome = _publish(
        coordinator, seal(_pub(coordinator, identity, version=2, kind="bogus"), identity)
    )

    assert outcome.status == "rejected"
    assert _snapshot(coordinator) == before


def test_new_version_the_cache_refuses_never_lifts_a_tombstone(
    coordinator: Coordinator, identity: Identity
) -> None:
    first = seal(_pub(coordinator, identity), identity)
    _publish(coordinator, first)
    _retract(coordinator, seal(retraction(identity), identity))
    refused = seal(_pub(coordinator, identity, version=2, seq=3, kind="bogus"), identity)
    assert _publish(coordinator, refused).status == "rejected"

    replay = _publish(coordinator, first)

    assert replay.status == "stale"
    assert _found(coordinator, "quokka ledger") == []
    assert coordinator.info().tombstones == 1


# -- retraction ------------------------------------------------------------------------------
@pytest.mark.parametrize("database", [None], ids=["sqlite"])  # SQLite's own files
def test_retraction_purges_text_and_vector_and_keeps_only_the_tombstone(
    coordinator: Coordinator, identity: Identity
) -> None:
    envelope = seal(_pub(coordinator, identity), identity)
    _publish(coordinator, envelope, _vector(coordinator, QUOKKA))
    # The check below can see the text: it is in the file while the item is published.
    assert QUOKKA_PHRASE in _database_bytes(coordinator)
    tombstone = seal(retraction(identity), identity)

    outcome = _retract(coordinator, tombstone)

    assert outcome == Outcome(item_id=ITEM, version=1, status="accepted")
    with cache_read(coordinator) as conn:
        text, tags, status, vector = conn.execute(
            "SELECT text, tags, status, vector FROM items WHERE id = ?",
            (_copy_of(coordinator, identity),),
        ).fetchone()
        (fts_matches,) = conn.execute(
            "SELECT count(*) FROM items_fts WHERE items_fts MATCH 'quokka'"
        ).fetchone()
    assert (text, tags, status) == ("", "[]", "archived")
    assert not any(bytes(vector))
    assert fts_matches == 0
    answer = _search(
        coordinator,
        "quokka ledger signing keys",
        vector=_vector(coordinator, QUOKKA),
        embedder=coordinator.store.embedder.fingerprint,
    )
    assert (answer.hits, answer.abstained) == ([], True)
    (change,) = coordinator.changes(ChangesRequest()).changes
    assert (change.kind, change.item_id, change.version) == ("retraction", ITEM, 1)
    assert change.envelope == tombstone
    info = coordinator.info()
    assert (info.published, info.tombstones) == (0, 1)
    stored = _database_bytes(coordinator)
    assert QUOKKA_PHRASE not in stored
    assert envelope.payload not in stored


def test_retraction_purges_the_text_whatever_the_sqlite_build_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, identity: Identity
) -> None:
    real_connect = sqlite3.connect

    def connect_as_a_default_build(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn: sqlite3.Connection = real_connect(*args, **kwargs)
        conn.execute("PRAGMA secure_delete = OFF")  # SQLite's compile-time default
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect_as_a_default_build)
    coordinator = Coordinator(tmp_path / "default-build", team=TEAM)
    try:
        _publish(coordinator, seal(_pub(coordinator, identity), identity))
        _retract(coordinator, seal(retraction(identity), identity))
        assert QUOKKA_PHRASE not in _database_bytes(coordinator)
    finally:
        coordinator.close()


def test_replayed_publication_after_the_tombstone_is_stale_and_never_returns(
    coordinator: Coordinator, identity: Identity
) -> None:
    envelope = seal(_pub(coordinator, identity), identity)
    _publish(coordinator, envelope)
    _retract(coordinator, seal(retraction(identity), identity))
    before = _snapshot(coordinator)

    replays = [_publish(coordinator, envelope) for _ in range(2)]

    assert [(o.status, o.reason) for o in replays] == [("stale", "retracted")] * 2
    assert _snapshot(coordinator) == before
    assert _found(coordinator, "quokka ledger") == []


def test_retraction_of_an_older_version_is_stale(
    coordinator: Coordinator, identity: Identity
) -> None:
    _publish(coordinator, seal(_pub(coordinator, identity), identity))
    newer = seal(_pub(coordinator, identity, text=TEXTS[0] + " quokka", version=2), identity)
    _publish(coordinator, newer)
    before = _snapshot(coordinator)

    outcome = _retract(coordinator, seal(retraction(identity, version=1), identity))

    assert outcome.status == "stale"
    assert _snapshot(coordinator) == before


def test_same_retraction_twice_is_a_duplicate(coordinator: Coordinator, identity: Identity) -> None:
    _publish(coordinator, seal(_pub(coordinator, identity), identity))
    tombstone = seal(retraction(identity), identity)
    assert _retract(coordinator, tombstone).status == "accepted"
    before = _snapshot(coordinator)

    assert _retract(coordinator, tombstone).status == "duplicate"
    assert _snapshot(coordinator) == before


def test_republishing_after_a_retraction_is_a_new_version(
    coordinator: Coordinator, identity: Identity
) -> None:
    _publish(coordinator, seal(_pub(coordinator, identity), identity))
    _retract(coordinator, seal(retraction(identity), identity))
    again = seal(_pub(coordinator, identity, version=2, seq=3), identity)

    assert _publish(coordinator, again).status == "accepted"
    (hit,) = _search(coordinator, "quokka ledger").hits
    assert hit.envelope == again
    info = coordinator.info()
    assert (info.published, info.tombstones) == (1, 0)


def test_crash_between_storing_the_envelope_and_the_cache_heals_on_resend(
    monkeypatch: pytest.MonkeyPatch, data: Path, identity: Identity
) -> None:
    coordinator = Coordinator(data, team=TEAM)
    envelope = seal(_pub(coordinator, identity), identity)

    def die(*args: Any) -> None:
        raise _Killed

    monkeypatch.setattr(coordinator.store, "put_copy", die)
    with pytest.raises(_Killed):
        _publish(coordinator, envelope)
    coordinator.close()
    restarted = Coordinator(data, team=TEAM)
    try:
        assert _publish(restarted, envelope).status in ("accepted", "duplicate")
        assert _found(restarted, "quokka ledger") == [ITEM]
    finally:
        restarted.close()


def test_crash_between_storing_the_tombstone_and_the_purge_heals_on_resend(
    monkeypatch: pytest.MonkeyPatch, data: Path, identity: Identity
) -> None:
    coordinator = Coordinator(data, team=TEAM)
    _publish(coordinator, seal(_pub(coordinator, identity), identity))
    tombstone = seal(retraction(identity), identity)

    def die(*args: Any) -> None:
        raise _Killed

    monkeypatch.setattr(coordinator.store, "purge_copy", die)
    with pytest.raises(_Killed):
        _retract(coordinator, tombstone)
    coordinator.close()
    restarted = Coordinator(data, team=TEAM)
    try:
        assert _retract(restarted, tombstone).status in ("accepted", "duplicate")
        with cache_read(restarted) as conn:
            (text,) = conn.execute(
                "SELECT text FROM items WHERE id = ?", (_copy_of(restarted, identity),)
            ).fetchone()
        assert text == ""
        assert QUOKKA_PHRASE not in _database_bytes(restarted)
    finally:
        restarted.close()


# -- team and roster -------------------------------------------------------------------------


def test_coordinator_for_one_team_refuses_every_envelope_of_another(
    tmp_path: Path, identity: Identity, clock: FakeClock
) -> None:
    coordinator = Coordinator(tmp_path / "acme", team="acme", clock=clock)
    try:
        before = _snapshot(coordinator)
        expected = f"this coordinator serves team 'acme', not {TEAM!r}"

        published = _publish(coordinator, seal(_pub(coordinator, identity), identity))
        retracted = _retract(coordinator, seal(retraction(identity), identity))
        heartbeat = _heartbeat(coordinator, _presence(identity, expires_at=NOW + 60))

        assert (published.status, published.reason) == ("rejected", expected)
        assert (retracted.status, retracted.reason) == ("rejected", expected)
        assert (heartbeat.status, heartbeat.reason) == ("rejected", expected)
        assert _snapshot(coordinator) == before
        assert coordinator.info().team == "acme"

        ours = _pub(coordinator, identity, team="acme")
        assert _publish(coordinator, seal(ours, identity)).status == "accepted"
    finally:
        coordinator.close()


def test_a_member_pushing_another_key_s_envelopes_is_rejected_and_changes_nothing(
    coordinator: Coordinator, identity: Identity, other_identity: Identity
) -> None:
    before = _snapshot(coordinator)
    mallory = caller(other_identity)
    adas = seal(_pub(coordinator, identity), identity)
    tombstone = seal(retraction(identity), identity)
    beat = _presence(identity, expires_at=NOW + 60)
    reason = (
        f"a member pushes only its own envelopes: this one is signed by {identity.key_id}, "
        f"the request by {other_identity.key_id}"
    )

    (published,) = coordinator.publish(
        mallory, PublishRequest(items=[PublishItem(envelope=adas)])
    ).results
    (retracted,) = coordinator.retract(mallory, RetractRequest(envelopes=[tombstone])).results
    heartbeat = coordinator.heartbeat(mallory, PresenceRequest(envelope=beat))

    assert (published.status, published.reason) == ("rejected", reason)
    assert (retracted.status, retracted.reason, retracted.receipt) == ("rejected", reason, None)
    assert (heartbeat.status, heartbeat.reason) == ("rejected", reason)
    assert _snapshot(coordinator) == before


# -- each item is its author's ---------------------------------------------------------------


def test_a_stranger_s_first_retraction_of_an_unsynced_id_does_not_stop_its_author(
    coordinator: Coordinator, identity: Identity, other_identity: Identity
) -> None:
    # Mallory learnt the id before Ada synced, and tombstones it as far ahead as versions go.
    squat = seal(retraction(other_identity, version=2**53), other_identity)
    assert _retract(coordinator, squat).status == "accepted"

    envelope = seal(_pub(coordinator, identity), identity)
    outcome = _publish(coordinator, envelope)

    assert outcome == Outcome(item_id=ITEM, version=1, status="accepted")
    (hit,) = _search(coordinator, "quokka ledger").hits
    assert hit.envelope == envelope
    newer = seal(_pub(coordinator, identity, version=2, seq=3), identity)
    assert _publish(coordinator, newer).status == "accepted"
    # Ada's own tombstone still works, and the squatter's stays only the squatter's.
    tombstone = seal(retraction(identity, version=2, seq=4), identity)
    assert _retract(coordinator, tombstone).status == "accepted"
    assert _publish(coordinator, newer).status == "stale"
    feed = coordinator.changes(ChangesRequest()).changes
    assert [(c.kind, c.item_id, c.envelope) for c in feed] == [
        ("retraction", ITEM, squat),
        ("retraction", ITEM, tombstone),
    ]


def test_a_stranger_publishing_an_id_first_does_not_lock_its_author_out(
    coordinator: Coordinator, identity: Identity, other_identity: Identity
) -> None:
    fake_text = "The quokka ledger signing keys live in the shared wiki page"
    fake = seal(_pub(coordinator, other_identity, text=fake_text, version=7), other_identity)
    assert _publish(coordinator, fake).status == "accepted"

    envelope = seal(_pub(coordinator, identity), identity)
    outcome = _publish(coordinator, envelope, _vector(coordinator, QUOKKA))

    assert outcome == Outcome(item_id=ITEM, version=1, status="accepted")
    # Every hit carries the envelope its own key signed: Mallory's text is never Ada's item.
    hits = _search(coordinator, "quokka ledger signing keys").hits
    by_author = {open_envelope(h.envelope).author_key: h.envelope for h in hits}
    assert by_author == {identity.public_key_text: envelope, other_identity.public_key_text: fake}
    assert _copy_of(coordinator, identity) != _copy_of(coordinator, other_identity)
    # Ada's retraction purges Ada's copy and nothing of Mallory's.
    assert _retract(coordinator, seal(retraction(identity), identity)).status == "accepted"
    (left,) = _search(coordinator, "quokka ledger signing keys").hits
    assert left.envelope == fake
    with cache_read(coordinator) as conn:
        texts = dict(conn.execute("SELECT id, text FROM items"))
    assert texts == {
        _copy_of(coordinator, identity): "",
        _copy_of(coordinator, other_identity): fake_text,
    }
    info = coordinator.info()
    assert (info.published, info.tombstones) == (1, 1)


def test_a_stranger_s_envelopes_never_change_the_author_s_versions(
    coordinator: Coordinator, identity: Identity, other_identity: Identity
) -> None:
    envelope = seal(_pub(coordinator, identity, version=3), identity)
    _publish(coordinator, envelope)
    for version in (1, 3, 4):
        stranger = _pub(coordinator, other_identity, text="Mallory's quokka", version=version)
        _publish(coordinator, seal(stranger, other_identity))

    # Ada's order is Ada's alone: her replay is a duplicate, her older version stale.
    assert _publish(coordinator, envelope).status == "duplicate"
    older = seal(_pub(coordinator, identity, version=2), identity)
    assert (_publish(coordinator, older).status, _publish(coordinator, older).reason) == (
        "stale",
        "a newer version is published",
    )


# -- presence --------------------------------------------------------------------------------


def test_heartbeat_is_listed_until_it_expires(
    coordinator: Coordinator, identity: Identity, clock: FakeClock
) -> None:
    beat = _presence(identity, expires_at=NOW + 90)

    answer = _heartbeat(coordinator, beat)

    assert (answer.status, answer.expires_at) == ("accepted", NOW + 90)
    assert coordinator.presence().members == [beat]
    assert coordinator.info().online == 1
    clock.now = NOW + 89.5
    assert coordinator.presence().members == [beat]
    clock.now = NOW + 90
    assert coordinator.presence().members == []
    assert coordinator.info().online == 0


def test_heartbeat_ttl_is_capped(
    coordinator: Coordinator, identity: Identity, clock: FakeClock
) -> None:
    beat = _presence(identity, expires_at=NOW + 10 * MAX_PRESENCE_TTL)

    answer = _heartbeat(coordinator, beat)

    assert (answer.status, answer.expires_at) == ("accepted", NOW + MAX_PRESENCE_TTL)
    clock.now = NOW + MAX_PRESENCE_TTL - 1
    assert coordinator.presence().members == [beat]
    clock.now = NOW + MAX_PRESENCE_TTL
    assert coordinator.presence().members == []


def test_expired_or_forged_heartbeat_is_not_listed(
    coordinator: Coordinator, identity: Identity
) -> None:
    expired = _heartbeat(coordinator, _presence(identity, expires_at=NOW - 1))
    genuine = _presence(identity, expires_at=NOW + 60)
    forged = _heartbeat(
        coordinator, Envelope(payload=genuine.payload, signature=flip_bit(genuine.signature, 3))
    )
    publication_as_presence = _heartbeat(coordinator, seal(_pub(coordinator, identity), identity))

    assert (expired.status, expired.reason) == ("stale", "already expired")
    assert (forged.status, forged.reason) == ("rejected", SIGNATURE_FAILS)
    assert (publication_as_presence.status, publication_as_presence.reason) == (
        "rejected",
        "not a presence",
    )
    assert coordinator.presence().members == []
    assert coordinator.info().online == 0


def test_newer_heartbeat_replaces_the_member_s_older_one(
    coordinator: Coordinator, identity: Identity, other_identity: Identity, clock: FakeClock
) -> None:
    first = _presence(identity, expires_at=NOW + 30)
    second = _presence(identity, expires_at=NOW + 120)
    other = _presence(other_identity, expires_at=NOW + 60)
    for beat in (first, other, second):
        assert _heartbeat(coordinator, beat).status == "accepted"

    listed = coordinator.presence().members
    assert sorted(e.digest for e in listed) == sorted([second.digest, other.digest])
    clock.now = NOW + 90
    assert coordinator.presence().members == [second]


# -- the changes feed ------------------------------------------------------------------------


def test_changes_pages_with_cursor_limit_and_more(
    coordinator: Coordinator, identity: Identity
) -> None:
    envelopes = [
        seal(_pub(coordinator, identity, item_id=_item_id(n), text=text, seq=n + 1), identity)
        for n, text in enumerate(TEXTS)
    ]
    for envelope in envelopes:
        assert _publish(coordinator, envelope).status == "accepted"

    pages: list[ChangesResponse] = []
    cursor = 0
    while True:
        page = coordinator.changes(ChangesRequest(cursor=cursor, limit=2))
        pages.append(page)
        cursor = page.next_cursor
        if not page.more:
            break

    assert [len(p.changes) for p in pages] == [2, 2, 1]
    assert [p.more for p in pages] == [True, True, False]
    feed = [change for page in pages for change in page.changes]
    assert [c.envelope for c in feed] == envelopes
    assert [c.kind for c in feed] == ["publication"] * 5
    cursors = [c.cursor for c in feed]
    assert cursors == sorted(set(cursors))
    assert [p.next_cursor for p in pages] == [cursors[1], cursors[3], cursors[4]]
    tail = coordinator.changes(ChangesRequest(cursor=cursors[-1], limit=2))
    assert (tail.changes, tail.next_cursor, tail.more) == ([], cursors[-1], False)
    exact = coordinator.changes(ChangesRequest(cursor=cursors[2], limit=2))
    assert ([c.cursor for c in exact.changes], exact.more) == (cursors[3:], False)

    # A retraction moves its item to the end of the feed, as a tombstone.
    tombstone = seal(retraction(identity, item_id=_item_id(0), seq=9), identity)
    _retract(coordinator, tombstone)
    (moved,) = coordinator.changes(ChangesRequest(cursor=cursors[-1])).changes
    assert (moved.kind, moved.item_id, moved.envelope) == ("retraction", _item_id(0), tombstone)
    whole = coordinator.changes(ChangesRequest(limit=500)).changes
    assert [c.item_id for c in whole] == [_item_id(n) for n in (1, 2, 3, 4, 0)]


# -- restart ---------------------------------------------------------------------------------


def test_restart_keeps_everything_acknowledged(
    data: Path, identity: Identity, clock: FakeClock
) -> None:
    first = Coordinator(data, team=TEAM, clock=clock)
    envelopes = [
        seal(_pub(first, identity, item_id=_item_id(n), text=text, seq=n + 1), identity)
        for n, text in enumerate(TEXTS[:3])
    ]
    for envelope, text in zip(envelopes, TEXTS, strict=False):
        _publish(first, envelope, _vector(first, text))
    _retract(first, seal(retraction(identity, item_id=_item_id(1), seq=7), identity))
    beat = _presence(identity, expires_at=NOW + 90)
    _heartbeat(first, beat)
    query = "exponential backoff five times"
    query_fields: dict[str, Any] = {
        "vector": _vector(first, query),
        "embedder": first.store.embedder.fingerprint,
    }
    before = _snapshot(first)
    answer_before = _search(first, query, **query_fields)
    first.close()

    restarted = Coordinator(data, team=TEAM, clock=clock)
    try:
        assert _snapshot(restarted) == before
        assert _search(restarted, query, **query_fields) == answer_before
        assert [open_envelope(h.envelope).item_id for h in answer_before.hits] == [_item_id(0)]
        assert restarted.presence().members == [beat]
        assert _publish(restarted, envelopes[0]).status == "duplicate"
        assert _publish(restarted, envelopes[1]).status == "stale"
        info = restarted.info()
        assert (info.published, info.tombstones, info.online) == (2, 1, 1)
    finally:
        restarted.close()
