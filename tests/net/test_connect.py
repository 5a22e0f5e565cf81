"""A member's client signs for the very coordinator team.yaml names: the pin it holds, else the
origin of its URL. Real coordinators on 127.0.0.1."""

from pathlib import Path

import pytest

from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.coordinator.protocol import Info
from memmesh.net.connect import coordinator_client
from memmesh.net.errors import Refused
from memmesh.net.tls import ensure_certificate
from memmesh.policy.config import Policy
from memmesh.registry.identity import create_identity
from tests._servers import running

TEAM = "acme"


def test_a_member_holding_the_pin_is_answered_by_whatever_address_it_reaches_it(
    tmp_path: Path,
) -> None:
    coordinator = Coordinator(tmp_path / "data", team=TEAM)
    certificate = ensure_certificate(tmp_path / "data" / "tls", ["127.0.0.1"])
    ada = create_identity(tmp_path / "ada")
    try:
        # Told a --url members do not use: the pin still names it.
        app = coordinator_app(coordinator, token=None, url="https://elsewhere.example")
        with running(app, tls=certificate) as url:
            pinned = Policy(team=TEAM, coordinator=url, coordinator_pin=certificate.pin)
            with coordinator_client(pinned, ada) as client:
                info = client.get("/v1/info", Info)
            unpinned = Policy(team=TEAM, coordinator=url.replace("https:", "http:"))
            with coordinator_client(unpinned, ada) as client:
                assert client.audience == f"coordinator:{TEAM}@{url.replace('https:', 'http:')}"
    finally:
        coordinator.close()

    assert info.team == TEAM


def test_a_member_without_a_pin_is_refused_by_a_coordinator_named_by_another_url(
    tmp_path: Path,
) -> None:
    coordinator = Coordinator(tmp_path / "data", team=TEAM)
    ada = create_identity(tmp_path / "ada")
    try:
        app = coordinator_app(coordinator, token=None, url="https://elsewhere.example")
        with running(app) as url:
            client = coordinator_client(Policy(team=TEAM, coordinator=url), ada)
            with client, pytest.raises(Refused) as refused:
                client.get("/v1/info", Info)
    finally:
        coordinator.close()

    assert (refused.value.http_status, refused.value.error_code) == (401, "wrong_audience")
