"""The coordinator's presence list is bounded: keys holding only the team token (a coordinator
without a roster) cannot make the list every member fetches and verifies grow without end."""

from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memmesh.coordinator import Coordinator
from memmesh.net.presence import PresenceRequest
from memmesh.net.quotas import Quotas
from memmesh.net.signing import Caller
from memmesh.registry import Identity
from memmesh.registry.envelopes import FORMAT_VERSION, Presence, seal
from tests._clock import FakeClock
from tests.registry._helpers import TEAM

NOW = 1_700_000_000.0


def _beat(identity: Identity, coordinator: Coordinator, expires_at: float) -> str:
    body = Presence(
        format=FORMAT_VERSION, team=TEAM, item_id="", version=1,
        author_key=identity.public_key_text, key_id=identity.key_id, seq=1, name="m",
        peer_url="http://127.0.0.1:8410", embedder="hashing-v1-d384", expires_at=expires_at,
    )  # fmt: skip
    caller = Caller(key=identity.public_key_text, key_id=identity.key_id)
    answer = coordinator.heartbeat(caller, PresenceRequest(envelope=seal(body, identity)))
    return answer.status if answer.status == "accepted" else f"{answer.status}: {answer.reason}"


def test_a_new_key_past_the_presence_cap_is_refused_and_those_online_keep_beating(
    tmp_path: Path,
) -> None:
    clock = FakeClock(NOW)
    coordinator = Coordinator(tmp_path / "data", team=TEAM, quotas=Quotas(presences=3), clock=clock)
    keys = [Identity(Ed25519PrivateKey.generate()) for _ in range(5)]
    try:
        first = [_beat(key, coordinator, NOW + 60) for key in keys[:3]]
        refused = _beat(keys[3], coordinator, NOW + 60)
        again = _beat(keys[0], coordinator, NOW + 90)  # one already online beats again
        listed = len(coordinator.presence().members)
        clock.now = NOW + 61  # two of them expire: room again
        later = _beat(keys[4], coordinator, NOW + 120)
    finally:
        coordinator.close()

    assert first == ["accepted"] * 3
    assert refused == "rejected: the presence list is full (3 members online)"
    assert again == "accepted"
    assert listed == 3
    assert later == "accepted"
