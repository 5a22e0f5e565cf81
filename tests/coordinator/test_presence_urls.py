"""The coordinator lists a presence only when its peer URL is sound: nobody can make members
send the team token to an address no peer could honestly announce."""

from pathlib import Path

import pytest

from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.coordinator.protocol import PresenceList
from memmesh.net.presence import PresenceRequest, PresenceResponse
from memmesh.registry import Identity, create_identity
from tests._clock import START, FakeClock
from tests._servers import running
from tests._signed import caller, signed_client
from tests.coordinator._served import TOKEN as SERVED_TOKEN
from tests.coordinator._served import Served
from tests.registry._helpers import TEAM
from tests.team._team import presence_for

TOKEN = "t"
UNSOUND = {
    "http://[::1": "it is not a URL (Invalid IPv6 URL)",
    "http://ada:secret@127.0.0.1:8410": "it names a user or password",
    "http://127.0.0.1:8410/collect": "it has a path",
    "http://127.0.0.1:8410?x=1": "it has a query",
    "http://127.0.0.1:8410#x": "it has a fragment",
    "gopher://127.0.0.1:8410": "only http:// and https:// URLs are contacted",
    "http://127.0.0.1:0": "the port must be a number from 1 to 65535",
    "http://127.0.0.1:99999": "the port must be a number from 1 to 65535",
}


@pytest.fixture
def identity(tmp_path: Path) -> Identity:
    return create_identity(tmp_path / "ada")


def _beat(identity: Identity, url: str) -> PresenceRequest:
    return PresenceRequest(
        envelope=presence_for(identity, url, team=TEAM, name="ada", expires_at=START + 60)
    )


@pytest.mark.parametrize("url", list(UNSOUND))
def test_heartbeat_with_an_unsound_peer_url_is_rejected_and_never_listed(
    coordinator: Coordinator, identity: Identity, url: str
) -> None:
    answer = coordinator.heartbeat(caller(identity), _beat(identity, url))

    assert (answer.status, answer.reason) == (
        "rejected",
        f"{url!r} is not a usable URL: {UNSOUND[url]}",
    )
    assert coordinator.presence().members == []
    assert coordinator.info().online == 0


def test_unsound_heartbeat_leaves_the_member_s_sound_one_listed(
    coordinator: Coordinator, identity: Identity
) -> None:
    sound = _beat(identity, "http://127.0.0.1:8410")
    assert coordinator.heartbeat(caller(identity), sound).status == "accepted"

    assert (
        coordinator.heartbeat(caller(identity), _beat(identity, "http://[::1")).status == "rejected"
    )
    assert coordinator.presence().members == [sound.envelope]


def test_heartbeat_with_an_unsound_peer_url_is_rejected_over_the_wire(
    coordinator: Coordinator, identity: Identity
) -> None:
    with (
        running(coordinator_app(coordinator, token=TOKEN)) as url,
        signed_client(url, identity, team=TEAM, token=TOKEN) as client,
    ):
        answer = client.post("/v1/presence", _beat(identity, "http://[::1"), PresenceResponse)
        listed = client.get("/v1/presence/list", PresenceList)

    assert (answer.status, answer.reason) == (
        "rejected",
        "'http://[::1' is not a usable URL: it is not a URL (Invalid IPv6 URL)",
    )
    assert listed.members == []


UNFETCHABLE = {
    "http://169.254.169.254": "it is link-local, where cloud metadata services answer",
    "http://[fe80::1]:8410": "it is link-local, where cloud metadata services answer",
    "http://[::ffff:169.254.169.254]": "it is link-local, where cloud metadata services answer",
    "http://metadata.google.internal": "it names a cloud metadata service",
    "http://100.100.100.200": "it names a cloud metadata service",
    "http://0.0.0.0:8410": "it is unspecified (0.0.0.0 or ::), no address to reach a peer at",
    "http://[::]:8410": "it is unspecified (0.0.0.0 or ::), no address to reach a peer at",
    "http://224.0.0.1:8410": "it is multicast or broadcast",
}
BEYOND = "while the coordinator serves beyond this machine, a peer on loopback is reachable by none"


def test_a_presence_at_a_metadata_or_unspecified_address_is_refused_with_a_code(
    served: Served, identity: Identity
) -> None:
    with signed_client(served.url, identity, team=TEAM, token=SERVED_TOKEN) as client:
        answers = {
            url: client.post("/v1/presence", _beat(identity, url), PresenceResponse)
            for url in UNFETCHABLE
        }
        loopback = client.post(
            "/v1/presence", _beat(identity, "http://127.0.0.1:8410"), PresenceResponse
        )
        listed = client.get("/v1/presence/list", PresenceList)

    assert {url: (a.status, a.code, a.reason) for url, a in answers.items()} == {
        url: ("rejected", "bad_url", f"{url!r} is not a usable URL: {problem}")
        for url, problem in UNFETCHABLE.items()
    }
    assert (loopback.status, loopback.code) == ("accepted", "")  # this coordinator: loopback
    assert listed.members == [_beat(identity, "http://127.0.0.1:8410").envelope]


def test_a_coordinator_beyond_loopback_refuses_a_presence_on_loopback(
    tmp_path: Path, identity: Identity, clock: FakeClock
) -> None:
    beyond = Coordinator(tmp_path / "beyond", team=TEAM, clock=clock, loopback_peers=False)
    try:
        for url in ("http://127.0.0.1:22", "http://localhost:8410", "http://[::1]:8410"):
            answer = beyond.heartbeat(caller(identity), _beat(identity, url))
            assert (answer.status, answer.code, answer.reason) == (
                "rejected", "bad_url", f"{url!r} is not a usable URL: {BEYOND}",
            )  # fmt: skip
        sound = beyond.heartbeat(caller(identity), _beat(identity, "http://10.0.0.7:8410"))
        assert sound.status == "accepted"
    finally:
        beyond.close()
