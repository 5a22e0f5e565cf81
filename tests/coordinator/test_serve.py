"""One way to start a coordinator: ``create_app(settings)``, which the CLI, the ASGI module and
anything else that serves one goes through. Served here by a real uvicorn server on 127.0.0.1
(with its lifespan, as `mem coordinator serve` and `uvicorn` run it), members signing for real."""

import contextlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.types import ASGIApp

from memmesh.coordinator.protocol import (
    DisclosuresRequest,
    Info,
    PublishItem,
    PublishRequest,
    PublishResponse,
)
from memmesh.coordinator.serve import CoordinatorSettings, create_app, open_coordinator
from memmesh.embed import get_embedder
from memmesh.net.errors import Refused
from memmesh.net.quotas import Quotas
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.server import free_port
from memmesh.registry import Identity, create_identity
from memmesh.registry.envelopes import seal
from tests._servers import CoordinatorProcess, in_a_thread
from tests._signed import caller, signed_client
from tests.coordinator._served import TOKEN
from tests.registry._helpers import TEAM, publication

ITEM = "01JABCDEFGHJKMNPQRSTVWX001"


@contextlib.contextmanager
def served(app: ASGIApp) -> Iterator[str]:
    """``app`` under uvicorn on 127.0.0.1 in a thread, its lifespan run; yields its URL."""
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="error", access_log=False, lifespan="on"
    )
    with in_a_thread(uvicorn.Server(config)):
        yield f"http://127.0.0.1:{port}"


def settings(data: Path, **changes: object) -> CoordinatorSettings:
    """A coordinator of the test team in ``data``, behind the test token, open to any signer
    while its roster is empty."""
    fields: dict[str, object] = {
        "data": data,
        "team": TEAM,
        "token": TOKEN,
        "open_without_roster": True,
        "loopback_peers": True,
    }
    return CoordinatorSettings(**{**fields, **changes})  # type: ignore[arg-type]


def publish(url: str, author: Identity, item_id: str = ITEM, *, token: str | None = TOKEN) -> None:
    """``author`` publishes one item to the coordinator at ``url``."""
    body = publication(author, item_id=item_id, text=f"The quokka ledger rotates keys ({item_id})")
    request = PublishRequest(items=[PublishItem(envelope=seal(body, author))])
    with signed_client(url, author, team=TEAM, token=token) as client:
        [result] = client.post("/v1/publish", request, PublishResponse).results
    assert result.status == "accepted", result


def search(url: str, asker: Identity, *, token: str | None = TOKEN) -> int:
    """How many hits ``asker`` is served for the items :func:`publish` makes."""
    request = SearchRequest(query="quokka ledger", project="billing")
    with signed_client(url, asker, team=TEAM, token=token) as client:
        return len(client.post("/v1/search", request, SearchResponse).hits)


def disclosed(of: CoordinatorSettings, author: Identity) -> int:
    """How many disclosures of ``author``'s items the coordinator's data folder holds."""
    with contextlib.closing(open_coordinator(of)) as coordinator:
        return len(coordinator.disclosures(caller(author), DisclosuresRequest()).entries)


def test_an_app_made_from_settings_serves_their_team_behind_their_token(tmp_path: Path) -> None:
    ada = create_identity(tmp_path / "ada")

    with served(create_app(settings(tmp_path / "coordinator", embedder="hashing"))) as url:
        health = httpx.get(f"{url}/healthz")
        with signed_client(url, ada, team=TEAM, token=TOKEN) as client:
            info = client.get("/v1/info", Info)
        with (
            signed_client(url, ada, team=TEAM, token=None) as client,
            pytest.raises(Refused) as tokenless,
        ):
            client.get("/v1/info", Info)
        with (
            signed_client(url, ada, team="another-team", token=TOKEN) as client,
            pytest.raises(Refused) as other_team,
        ):
            client.get("/v1/info", Info)

    assert health.status_code == 200
    assert (info.team, info.embedder, info.roster) == (
        TEAM,
        get_embedder("hashing").fingerprint,
        False,
    )
    assert (tokenless.value.http_status, other_team.value.http_status) == (401, 401)


def test_an_app_whose_settings_keep_an_empty_roster_closed_admits_no_stranger(
    tmp_path: Path,
) -> None:
    ada = create_identity(tmp_path / "ada")

    closed = settings(tmp_path / "coordinator", open_without_roster=False)

    with (
        served(create_app(closed)) as url,
        signed_client(url, ada, team=TEAM, token=TOKEN) as client,
        pytest.raises(Refused) as refused,
    ):
        client.get("/v1/info", Info)

    assert refused.value.http_status == 403


def test_an_app_holds_its_settings_quotas(tmp_path: Path) -> None:
    ada = create_identity(tmp_path / "ada")
    one_item = settings(tmp_path / "coordinator", quotas=Quotas(member_items=1))

    with served(create_app(one_item)) as url:
        publish(url, ada)
        with pytest.raises(Refused) as refused:
            publish(url, ada, "01JABCDEFGHJKMNPQRSTVWX002")

    assert (refused.value.http_status, refused.value.error_code) == (413, "quota_exceeded")


def test_the_coordinator_is_closed_when_the_server_shuts_down(tmp_path: Path) -> None:
    ada, bob = create_identity(tmp_path / "ada"), create_identity(tmp_path / "bob")
    opened = settings(tmp_path / "coordinator")

    with served(create_app(opened)) as url:
        publish(url, ada)
        assert search(url, bob) == 1
    # The disclosure rows kept in memory are written as the coordinator closes.
    assert disclosed(opened, ada) == 1


def test_the_settings_never_show_the_token_or_the_databases_password(tmp_path: Path) -> None:
    shown = repr(
        settings(tmp_path, token="s3cret-token", database="postgresql://memmesh:hunter2@db/memmesh")
    )

    assert "s3cret-token" not in shown
    assert "hunter2" not in shown
    assert f"team={TEAM!r}" in shown
    assert "postgresql://memmesh:***@db/memmesh" in shown


def test_every_worker_of_mem_coordinator_serve_closes_its_coordinator_when_stopped(
    tmp_path: Path,
) -> None:
    data = tmp_path / "coordinator"
    ada, bob = create_identity(tmp_path / "ada"), create_identity(tmp_path / "bob")
    process = CoordinatorProcess(data, team=TEAM, token=TOKEN, workers=2).start()
    try:
        publish(process.url, ada)
        assert search(process.url, bob) == 1
    finally:
        process.stop()
    assert process.process is not None
    assert process.process.returncode == 0, process.output()

    assert disclosed(settings(data), ada) == 1
