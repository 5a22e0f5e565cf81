"""The coordinator migrates its own tables in its store file, keeping what older ones stored."""

import sqlite3
import time
from pathlib import Path

from memmesh.coordinator import Coordinator
from memmesh.coordinator._tables import COORDINATOR_SCHEMA
from memmesh.coordinator.protocol import ChangesRequest, PublishItem, PublishRequest, RetractRequest
from memmesh.local import Schema
from memmesh.local.store import DB_FILENAME, Store
from memmesh.net.search import SearchRequest
from memmesh.registry import Identity, create_identity
from memmesh.registry.envelopes import (
    Envelope,
    Publication,
    Receipt,
    Retraction,
    open_envelope,
    seal,
)
from tests._signed import NOBODY, caller
from tests.registry._helpers import TEAM, publication, retraction

KEPT = "01JABCDEFGHJKMNPQRSTVWX001"
GONE = "01JABCDEFGHJKMNPQRSTVWX002"
KEPT_TEXT = "The quokka ledger rotates its signing keys every Tuesday at noon"
GONE_TEXT = "Deploys to the marmot cluster need the canary flag set first"
# The coordinator's tables as its schema version 1 made them.
_VERSION_1 = Schema(owner="coordinator", migrations=COORDINATOR_SCHEMA.sqlite[:1])


def _old_coordinator_file(data: Path, ada: Identity) -> tuple[Envelope, Envelope]:
    """A coordinator file as a version-1 coordinator left it: ``KEPT`` published with its
    copy under its item id, ``GONE`` published then retracted (its copy purged), cursors 4
    and 9. Returns the publication and the tombstone."""
    store = Store(data, author="coordinator", durable=True, lexicon=True)
    try:
        store.migrate(_VERSION_1)
        fingerprint = store.embedder.fingerprint
        kept = seal(publication(ada, item_id=KEPT, text=KEPT_TEXT, embedder=fingerprint), ada)
        gone = seal(publication(ada, item_id=GONE, text=GONE_TEXT, seq=2), ada)
        tombstone = seal(retraction(ada, item_id=GONE, seq=3), ada)
        for envelope in (kept, gone):
            body = open_envelope(envelope)
            assert isinstance(body, Publication)
            store.put(
                item_id=body.item_id, text=body.text, kind=body.kind, project=body.project,
                tags=body.tags, author=body.author, created_at=body.published_at, vector=None,
            )  # fmt: skip
        store.purge(GONE)
    finally:
        store.close()
    conn = sqlite3.connect(data / DB_FILENAME)
    with conn:
        for kind, item_id, envelope, cursor in (
            ("publication", KEPT, kept, 4),
            ("retraction", GONE, tombstone, 9),
        ):
            conn.execute(
                "INSERT INTO coord_envelopes "
                "(item_id, kind, version, author_key, payload, signature, cursor) "
                "VALUES (?, ?, 1, ?, ?, ?, ?)",
                (item_id, kind, ada.public_key_text, envelope.payload, envelope.signature, cursor),
            )
    conn.close()
    return kept, tombstone


def test_a_version_1_coordinator_file_keeps_every_item_tombstone_and_cursor(
    tmp_path: Path,
) -> None:
    ada = create_identity(tmp_path / "ada")
    mallory = create_identity(tmp_path / "mallory")
    data = tmp_path / "coordinator"
    kept, tombstone = _old_coordinator_file(data, ada)

    coordinator = Coordinator(data, team=TEAM)
    try:
        feed = coordinator.changes(ChangesRequest()).changes
        assert [(c.cursor, c.kind, c.item_id, c.envelope) for c in feed] == [
            (4, "publication", KEPT, kept),
            (9, "retraction", GONE, tombstone),
        ]
        info = coordinator.info()
        assert (info.published, info.tombstones) == (1, 1)
        (hit,) = coordinator.search(
            NOBODY, SearchRequest(query="quokka ledger", project="billing")
        ).hits
        assert hit.envelope == kept
        # The retracted marmot item is not found, even by its own word.
        marmot = coordinator.search(NOBODY, SearchRequest(query="marmot", project="billing"))
        assert [hit.envelope for hit in marmot.hits if hit.envelope != kept] == []
        # The rules hold on the old rows: a replay is a duplicate, the tombstone holds.
        gone_again = seal(publication(ada, item_id=GONE, text=GONE_TEXT, seq=2), ada)
        (replayed, revived) = coordinator.publish(
            caller(ada),
            PublishRequest(items=[PublishItem(envelope=kept), PublishItem(envelope=gone_again)]),
        ).results
        assert (replayed.status, revived.status) == ("duplicate", "stale")
        # A stranger's envelopes for the same ids are the stranger's own items.
        squat = seal(retraction(mallory, item_id=KEPT, version=2**53), mallory)
        (squatted,) = coordinator.retract(
            caller(mallory), RetractRequest(envelopes=[squat])
        ).results
        assert squatted.status == "accepted"
        (hit,) = coordinator.search(
            NOBODY, SearchRequest(query="quokka ledger", project="billing")
        ).hits
        assert hit.envelope == kept
        # Ada's retraction of the old item purges the copy the old coordinator made.
        ada_retracts = seal(retraction(ada, item_id=KEPT, seq=4), ada)
        (retracted,) = coordinator.retract(
            caller(ada), RetractRequest(envelopes=[ada_retracts])
        ).results
        assert retracted.status == "accepted"
        with coordinator.store.read() as conn:
            texts = dict(conn.execute("SELECT id, text FROM items"))
        assert texts == {KEPT: "", GONE: ""}
    finally:
        coordinator.close()
    assert len(list(data.glob(f"{DB_FILENAME}.coordinator-v1-*.bak"))) == 1


def test_a_new_pair_s_copy_id_is_never_an_item_id_and_differs_per_key(tmp_path: Path) -> None:
    ada = create_identity(tmp_path / "ada")
    mallory = create_identity(tmp_path / "mallory")
    coordinator = Coordinator(tmp_path / "coordinator", team=TEAM)
    try:
        longest = "x" * 64  # as long as an item id may be
        bodies: list[Publication | Retraction] = [
            publication(ada, item_id=longest),
            publication(mallory, item_id=longest),
            retraction(ada, item_id=KEPT),
        ]
        for body, identity in zip(bodies, (ada, mallory, ada), strict=True):
            envelope = seal(body, identity)
            if isinstance(body, Publication):
                coordinator.publish(
                    caller(identity), PublishRequest(items=[PublishItem(envelope=envelope)])
                )
            else:
                coordinator.retract(caller(identity), RetractRequest(envelopes=[envelope]))
        with coordinator.store.read() as conn:
            rows = conn.execute(
                "SELECT author_key, item_id, copy_id FROM coord_envelopes"
            ).fetchall()
            copies = [item_id for (item_id,) in conn.execute("SELECT id FROM items")]
    finally:
        coordinator.close()
    copy_ids = [copy for _, _, copy in rows]
    assert len(set(copy_ids)) == 3
    assert all(len(copy) > 64 for copy in copy_ids)
    keys = {ada.public_key_text: ada.key_id, mallory.public_key_text: mallory.key_id}
    assert all(copy.startswith(keys[key] + ".") for key, _, copy in rows)
    # Each publication has its copy; the retraction of an id never published made none.
    assert sorted(copies) == sorted(copy for _, item_id, copy in rows if item_id == longest)


def test_a_tombstone_stored_before_receipts_is_answered_with_the_time_of_the_migration(
    tmp_path: Path,
) -> None:
    ada = create_identity(tmp_path / "ada")
    data = tmp_path / "coordinator"
    _, tombstone = _old_coordinator_file(data, ada)
    before = time.time()

    coordinator = Coordinator(data, team=TEAM)
    try:
        (again,) = coordinator.retract(caller(ada), RetractRequest(envelopes=[tombstone])).results
    finally:
        coordinator.close()

    assert again.status == "duplicate"
    assert again.receipt is not None
    receipt = open_envelope(again.receipt)
    assert isinstance(receipt, Receipt)
    assert (receipt.item_id, receipt.member_key) == (GONE, ada.public_key_text)
    assert before - 1 <= receipt.purged_at <= time.time() + 1
