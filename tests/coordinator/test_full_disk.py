"""A coordinator whose store cannot grow (its disk full): SQLite's own SQLITE_FULL, made real
by capping the store file's pages (``PRAGMA max_page_count``) under the coordinator's running
server. A member is told 507 with a message that names no file, the coordinator's log names
the file, and reads still answer."""

import logging
from pathlib import Path

import pytest

from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.coordinator.protocol import (
    Info,
    PublishItem,
    PublishRequest,
    PublishResponse,
    RetractRequest,
    RetractResponse,
)
from memmesh.local.errors import StoreFull
from memmesh.local.ids import new_id
from memmesh.net.errors import Refused
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.wire import MAX_BATCH
from memmesh.registry import create_identity
from memmesh.registry.envelopes import seal
from tests._servers import running
from tests._signed import signed_client
from tests.registry._helpers import TEAM, publication, retraction

TOKEN = "t"
LEDGER = "The quokka ledger rotates its signing keys every Tuesday at noon"


def _fill(coordinator: Coordinator) -> None:
    """From now on the store file may not grow by a single page."""
    with coordinator.store.transaction() as tx:
        pages = tx.execute("PRAGMA page_count").fetchone()[0]
        tx.execute(f"PRAGMA max_page_count = {pages}")


@pytest.mark.parametrize("database", [None], ids=["sqlite"])  # SQLite's own files
def test_a_full_disk_is_a_507_naming_no_file_and_the_log_names_it(
    coordinator: Coordinator, data: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ada = create_identity(tmp_path / "ada")
    envelope = seal(publication(ada, text=LEDGER), ada)
    # Tombstones of ids never published: each one a new row, more than the free room left.
    tombstones = [seal(retraction(ada, item_id=new_id()), ada) for _ in range(MAX_BATCH)]
    retract = RetractRequest(envelopes=tombstones)
    with (
        running(coordinator_app(coordinator, token=TOKEN)) as url,
        signed_client(url, ada, team=TEAM, token=TOKEN) as client,
    ):
        client.post("/v1/publish", PublishRequest(items=[PublishItem(envelope=envelope)]),
                    PublishResponse)  # fmt: skip
        _fill(coordinator)
        with (
            caplog.at_level(logging.ERROR, logger="memmesh.net"),
            pytest.raises(Refused) as refused,
        ):
            client.post("/v1/retract", retract, RetractResponse)
        query = SearchRequest(query="quokka ledger", project="billing")
        found = client.post("/v1/search", query, SearchResponse)
        info = client.get("/v1/info", Info)

    assert refused.value.http_status == StoreFull.status == 507
    assert refused.value.message == (
        "this daemon's disk is full: nothing was written; try again later (HTTP 507)"
    )
    assert str(data / "memory.db") in caplog.text
    assert [hit.envelope for hit in found.hits] == [envelope]
    assert info.published == 1


@pytest.mark.parametrize("database", [None], ids=["sqlite"])  # SQLite's own files
def test_a_publish_that_finds_the_disk_full_is_a_507_not_an_item_s_rejection(
    coordinator: Coordinator, tmp_path: Path
) -> None:
    ada = create_identity(tmp_path / "ada")
    first = seal(publication(ada, text=LEDGER), ada)
    # Long texts, each its own row and index entries: more than the room a full file has left.
    more = [
        PublishItem(
            envelope=seal(
                publication(
                    ada, item_id=new_id(), seq=n + 2, text=f"{LEDGER} {n} " + "wombat " * 900
                ),
                ada,
            )
        )
        for n in range(20)
    ]
    with (
        running(coordinator_app(coordinator, token=TOKEN)) as url,
        signed_client(url, ada, team=TEAM, token=TOKEN) as client,
    ):
        client.post("/v1/publish", PublishRequest(items=[PublishItem(envelope=first)]),
                    PublishResponse)  # fmt: skip
        _fill(coordinator)
        with pytest.raises(Refused) as refused:
            client.post("/v1/publish", PublishRequest(items=more), PublishResponse)
        info = client.get("/v1/info", Info)

    assert refused.value.http_status == 507
    assert info.published == 1
