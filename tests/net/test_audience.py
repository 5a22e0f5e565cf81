"""What a member signs for: a coordinator bound to the pin the member holds, else to its URL's
origin as team.yaml writes it; a peer by its member id alone."""

import pytest

from memmesh.net.audience import arrival_origins, client_audience, origin_of
from memmesh.net.signing import coordinator_audience, peer_audience

PIN = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://Team-Host.example/", "https://team-host.example:443"),
        ("http://127.0.0.1:8400/prefix", "http://127.0.0.1:8400"),
        ("https://[::1]:8400", "https://[::1]:8400"),
        ("HTTP://localhost", "http://localhost:80"),
    ],
)
def test_an_origin_is_written_one_way_whatever_the_url_looks_like(url: str, origin: str) -> None:
    assert origin_of(url) == origin


def test_a_coordinators_audience_is_bound_to_the_pin_or_else_to_the_origin() -> None:
    team = coordinator_audience("acme")
    assert client_audience(team, "https://team-host:8400", PIN) == f"coordinator:acme@{PIN}"
    assert (
        client_audience(team, "https://team-host:8400/")
        == "coordinator:acme@https://team-host:8400"
    )


def test_a_peers_audience_names_it_already_and_is_left_as_it_is() -> None:
    peer = peer_audience("q6fm2lg45g2noqwe")
    assert client_audience(peer, "https://10.0.0.7:8410", PIN) == peer


def test_a_request_reaching_loopback_names_it_by_each_loopback_name_and_others_by_address() -> None:
    assert arrival_origins("http", ("127.0.0.1", 8400)) == [
        "http://127.0.0.1:8400",
        "http://localhost:8400",
        "http://[::1]:8400",
    ]
    assert arrival_origins("https", ("10.0.0.7", 8400)) == ["https://10.0.0.7:8400"]
    assert arrival_origins("http", None) == []
