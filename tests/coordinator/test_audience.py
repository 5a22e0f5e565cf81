"""A coordinator takes only requests signed for itself: by the pin of its certificate, by the
origin of its --url (a reverse proxy's address), or without --url by the address it listens
on; a member on an older memmesh (signing for any coordinator of the team) is told to upgrade.
A real coordinator served by uvicorn on 127.0.0.1."""

from pathlib import Path

import httpx
import pytest

from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.net.audience import bound_audience
from memmesh.net.signing import coordinator_audience, sign_request
from memmesh.net.tls import ensure_certificate
from memmesh.registry.identity import Identity, create_identity
from tests._servers import running
from tests.registry._helpers import TEAM

PROXY = "https://memmesh.example.com"
PIN = "sha256:" + "ab" * 32


@pytest.fixture
def member(tmp_path: Path) -> Identity:
    return create_identity(tmp_path / "member")


def _info(url: str, member: Identity, audience: str) -> httpx.Response:
    headers = sign_request(member, "GET", "/v1/info", b"", audience)
    return httpx.get(f"{url}/v1/info", headers=headers)


def _named(audience: str) -> str:
    return bound_audience(coordinator_audience(TEAM), audience)


def test_behind_a_proxy_it_takes_its_url_and_its_pin_not_the_address_it_listens_on(
    coordinator: Coordinator, member: Identity
) -> None:
    app = coordinator_app(coordinator, token=None, url=PROXY + "/", pin=PIN)
    with running(app) as url:
        by_proxy = _info(url, member, _named("https://memmesh.example.com:443"))
        by_pin = _info(url, member, _named(PIN))
        by_listener = _info(url, member, _named(url))

    assert (by_proxy.status_code, by_pin.status_code) == (200, 200)
    assert by_listener.status_code == 401
    error = by_listener.json()["error"]
    assert error["code"] == "wrong_audience"
    assert "coordinator:testers@https://memmesh.example.com:443" in error["message"]
    assert "--url" in error["message"]


def test_without_a_url_it_takes_the_address_it_listens_on_by_any_name_of_loopback(
    coordinator: Coordinator, member: Identity
) -> None:
    with running(coordinator_app(coordinator, token=None)) as url:
        port = url.rsplit(":", 1)[1]
        answers = [
            _info(url, member, _named(f"http://{host}:{port}")).status_code
            for host in ("127.0.0.1", "localhost", "[::1]")
        ]
        elsewhere = _info(url, member, _named("http://127.0.0.1:1"))

    assert answers == [200, 200, 200]
    assert (elsewhere.status_code, elsewhere.json()["error"]["code"]) == (401, "wrong_audience")


def test_it_takes_the_pin_of_the_certificate_its_data_folder_keeps(
    coordinator: Coordinator, member: Identity
) -> None:
    kept = ensure_certificate(coordinator.store.home / "tls", ["127.0.0.1"])
    with running(coordinator_app(coordinator, token=None)) as url:
        answered = _info(url, member, _named(kept.pin))
        other_pin = _info(url, member, _named(PIN))

    assert answered.status_code == 200
    assert (other_pin.status_code, other_pin.json()["error"]["code"]) == (401, "wrong_audience")


def test_a_member_on_an_older_memmesh_is_told_to_upgrade(
    coordinator: Coordinator, member: Identity
) -> None:
    with running(coordinator_app(coordinator, token=None)) as url:
        old = _info(url, member, coordinator_audience(TEAM))
        another_team = _info(url, member, coordinator_audience("other"))

    assert old.status_code == 401
    assert old.json()["error"]["code"] == "outdated_audience"
    assert "upgrade memmesh" in old.json()["error"]["message"]
    assert (another_team.status_code, another_team.json()["error"]["code"]) == (
        401,
        "wrong_audience",
    )


def test_an_unsigned_or_forged_request_learns_nothing_of_the_coordinators_names(
    coordinator: Coordinator, member: Identity
) -> None:
    with running(coordinator_app(coordinator, token=None, url=PROXY, pin=PIN)) as url:
        headers = sign_request(member, "GET", "/v1/info", b"", _named("http://127.0.0.1:1"))
        forged = httpx.get(f"{url}/v1/info", headers={**headers, "x-memmesh-signature": "AAAA"})

    assert forged.status_code == 401
    assert forged.json()["error"]["code"] == "unauthorized"
    assert PIN not in forged.text
    assert "example.com" not in forged.text
