"""`peer_daemon`: a member's peer daemon set up, checked, announced and torn down, with real
stores, a real coordinator on loopback and real zeroconf on 127.0.0.1."""

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memmesh.coordinator.protocol import PresenceList
from memmesh.embed import HashingEmbedder
from memmesh.local.store import Store
from memmesh.net.client import Client
from memmesh.net.errors import BadUrl
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.server import free_port
from memmesh.net.signing import peer_audience
from memmesh.net.tls import pin_of
from memmesh.peer.discovery import Hint, browse
from memmesh.peer.serve import peer_daemon
from memmesh.policy import PolicyInvalid
from memmesh.registry.envelopes import Presence, open_envelope
from tests._servers import running
from tests._signed import signed_client
from tests.team._team import FINGERPRINT, NOWHERE, TOKEN, Member, Team, ask, team_on_loopback

LOCKS = "We chose Postgres advisory locks over Redis for the job scheduler"
BROKEN_POLICY = "version: 1\nteam: acme\nshare: [kinds\n"


class _Opener:
    """Opens ada's real store for the daemon, noting each store opened and closed."""

    def __init__(self, member: Member) -> None:
        self.member = member
        self.opened: list[Store] = []
        self.closed: list[Store] = []

    def __call__(self) -> Store:
        opener = self

        class _Noted(Store):
            def close(self) -> None:
                opener.closed.append(self)
                super().close()

        store = _Noted(self.member.home, author=self.member.name, lexicon=True)
        self.opened.append(store)
        return store


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Team]:
    monkeypatch.setenv("MEM_TEAM_TOKEN", TOKEN)
    with team_on_loopback(tmp_path) as members:
        yield members


def _presences(team: Team, asker: Member) -> list[Presence]:
    assert team.coordinator is not None
    with signed_client(team.coordinator, asker.identity, team=team.team, token=TOKEN) as client:
        listing = client.get("/v1/presence/list", PresenceList)
    bodies = [open_envelope(e) for e in listing.members]
    return [b for b in bodies if isinstance(b, Presence)]


def _recall(url: str, query: str, asker: Member, peer: Member) -> list[str]:
    """What ``peer``'s daemon at ``url`` answers ``asker``."""
    vector = HashingEmbedder().embed_query(query).tolist()
    request = SearchRequest(query=query, k=5, project="global", vector=vector, embedder=FINGERPRINT)
    audience = peer_audience(peer.key_id)
    with Client(url, token=None, identity=asker.identity, audience=audience) as client:
        answer = client.post("/v1/recall", request, SearchResponse)
    return [open_envelope(hit.envelope).item_id for hit in answer.hits]


def test_daemon_heartbeats_its_advertised_url_and_answers_from_published_items(
    team: Team,
) -> None:
    ada, bob = team.add("ada"), team.add("bob")
    item_id = ada.share(LOCKS)
    opener = _Opener(ada)
    advertised = "https://ada.invalid:8410"  # beyond loopback: the daemon serves https
    with peer_daemon(
        ada.home, opener, host="127.0.0.1", port=free_port(), advertise=advertised, heartbeat=0.1
    ) as daemon:
        assert (daemon.key_id, daemon.url, daemon.coordinator) == (
            ada.key_id,
            advertised,
            team.coordinator,
        )
        team.wait_for_presence(ada)
        assert [p.peer_url for p in _presences(team, ada) if p.key_id == ada.key_id] == [advertised]
        with running(daemon.app) as url:
            assert _recall(url, "which locks does the job scheduler use", bob, ada) == [item_id]


def test_leaving_the_daemon_stops_its_heartbeats_and_closes_its_store(team: Team) -> None:
    ada = team.add("ada")
    opener = _Opener(ada)
    with peer_daemon(ada.home, opener, host="127.0.0.1", port=free_port(), heartbeat=0.05) as d:
        team.wait_for_presence(ada)
        beats = d.heartbeat
    assert beats is not None
    sent = beats.sent
    assert sent >= 1
    assert opener.closed == opener.opened
    assert len(opener.opened) == 1
    time.sleep(0.3)  # six more beats, were it still running
    assert beats.sent == sent


def test_url_defaults_to_the_listen_address_and_no_coordinator_means_no_heartbeat(
    tmp_path: Path,
) -> None:
    ada = Team(tmp_path, None).add("ada")
    port = free_port()
    with peer_daemon(ada.home, _Opener(ada), host="127.0.0.1", port=port) as daemon:
        assert daemon.url == f"http://127.0.0.1:{port}"
        assert (daemon.coordinator, daemon.heartbeat, daemon.advertiser) == (None, None, None)


def test_an_invalid_policy_starts_nothing_and_opens_no_store(tmp_path: Path) -> None:
    ada = Team(tmp_path, NOWHERE).add("ada")
    (ada.home / "team.yaml").write_text(BROKEN_POLICY, encoding="utf-8")
    opener = _Opener(ada)
    with pytest.raises(PolicyInvalid), peer_daemon(ada.home, opener, host="127.0.0.1", port=1):
        pytest.fail("the daemon started")
    assert opener.opened == []


def test_a_public_address_needs_no_token_since_the_daemon_serves_https_there(
    tmp_path: Path,
) -> None:
    # A peer knows askers by their signed keys; beyond loopback it always serves https.
    ada = Team(tmp_path, NOWHERE).add("ada")
    assert "MEM_TEAM_TOKEN" not in os.environ
    public = "0.0.0.0"  # noqa: S104 (never bound: the daemon is only set up)
    with peer_daemon(
        ada.home, _Opener(ada), host=public, port=8410, advertise="https://ada.example:8410"
    ) as daemon:
        assert daemon.settings.scheme == "https"


def test_discovery_announces_the_daemon_on_the_given_interfaces_with_its_scheme(
    tmp_path: Path,
) -> None:
    ada = Team(tmp_path, NOWHERE).add("ada", discovery=True)
    port = free_port()
    with peer_daemon(
        ada.home, _Opener(ada), host="127.0.0.1", port=port, interfaces=["127.0.0.1"], tls=True
    ) as daemon:
        assert daemon.advertiser is not None
        heard: list[Hint] = []
        for _ in range(3):  # multicast may lose an answer
            heard += browse(["127.0.0.1"], 2.0)
            if any(h.key_id == ada.key_id for h in heard):
                break
    assert Hint(url=f"https://127.0.0.1:{port}", key_id=ada.key_id, name="ada") in heard


def test_an_unsound_advertised_url_is_refused_before_the_store_opens(tmp_path: Path) -> None:
    ada = Team(tmp_path, NOWHERE).add("ada")
    opener = _Opener(ada)
    refused = pytest.raises(BadUrl, match="it names a user or password")
    with (
        refused,
        peer_daemon(
            ada.home, opener, host="127.0.0.1", port=1, advertise="http://ada:pw@127.0.0.1:8410"
        ),
    ):
        pytest.fail("the daemon started")
    assert opener.opened == []


def test_an_ipv6_listen_address_is_announced_in_brackets(tmp_path: Path) -> None:
    ada = Team(tmp_path, None).add("ada")
    port = free_port()
    with peer_daemon(ada.home, _Opener(ada), host="::1", port=port) as daemon:
        assert daemon.url == f"http://[::1]:{port}"


@pytest.mark.usefixtures("team_token")
def test_a_daemon_asked_for_tls_serves_https_and_pins_its_certificate_in_its_presence(
    tmp_path: Path,
) -> None:
    ada = Team(tmp_path, NOWHERE).add("ada")
    item_id = ada.remember(LOCKS)
    ada.publish(item_id)
    bob = Member("bob", tmp_path / "bob", team=ada.team, coordinator=NOWHERE)
    ada.trust(bob)
    bob.trust(ada)
    port = free_port()
    with peer_daemon(ada.home, _Opener(ada), host="127.0.0.1", port=port, tls=True) as daemon:
        assert daemon.url == f"https://127.0.0.1:{port}"
        assert daemon.certificate is not None
        with running(daemon.app, port=port, tls=daemon.certificate):
            bob.write_policy(peers=[daemon.url])
            result = ask(bob)
        presence = open_envelope(daemon.peer.presence())

    certificate = ada.home / "tls" / "tls.crt"
    assert isinstance(presence, Presence)
    assert presence.tls_pin == pin_of(certificate.read_bytes()) == daemon.certificate.pin
    assert [(h.id, h.source) for h in result.hits] == [(item_id, "peer ada")]


@pytest.mark.usefixtures("team_token")
def test_a_daemon_listening_beyond_loopback_serves_tls_unasked(tmp_path: Path) -> None:
    ada = Team(tmp_path, NOWHERE).add("ada")
    public = "0.0.0.0"  # noqa: S104 (never bound: the daemon is only set up)
    with peer_daemon(
        ada.home, _Opener(ada), host=public, port=8410, advertise="https://ada.example:8410"
    ) as daemon:
        assert daemon.settings.scheme == "https"
        assert daemon.url == "https://ada.example:8410"
        presence = open_envelope(daemon.peer.presence())
    assert isinstance(presence, Presence)
    assert presence.tls_pin == pin_of((ada.home / "tls" / "tls.crt").read_bytes())


def test_a_plain_http_url_for_a_daemon_serving_tls_is_refused(tmp_path: Path) -> None:
    ada = Team(tmp_path, NOWHERE).add("ada")
    opener = _Opener(ada)
    refused = pytest.raises(BadUrl, match="this peer serves https")
    with (
        refused,
        peer_daemon(
            ada.home, opener, host="127.0.0.1", port=1, tls=True, advertise="http://127.0.0.1:1"
        ),
    ):
        pytest.fail("the daemon started")
    assert opener.opened == []
