"""An unsound hinted URL (one that team.yaml's loader would refuse, reaching recall-team from a
policy built in code) is that hint's own failure, named as a bad address: recall-team reports
it as a failed source and `mem team peers` as a problem, while the coordinator and the other
peers still answer. (A coordinator's listed presence of that kind: test_recall_urls.py.)"""

from pathlib import Path

import msgspec
import pytest

from memmesh.local.store import Store
from memmesh.team.recall import list_peers, recall_team
from tests.team._team import (
    LOCKS_QUERY,
    TEAM,
    answer,
    peer_in_thread,
    presence_for,
    serving,
)
from tests.team.test_hint_flood import ada_and_bob

pytestmark = pytest.mark.usefixtures("team_token")

UNSOUND = {
    "http://[::1": "it is not a URL (Invalid IPv6 URL)",
    "http://127.0.0.1:0": "the port must be a number from 1 to 65535",
    "http://[fe80::1%25eth0]:8410": "an IPv6 zone is not allowed",
}


def test_unsound_hints_are_each_a_failed_source_and_the_rest_answers(tmp_path: Path) -> None:
    ada, bob, locks, coordinator = ada_and_bob(tmp_path)
    coordinator.hits = answer(ada.envelope(locks))
    with peer_in_thread(ada) as ada_url, serving(coordinator) as url:
        bob.coordinator = url
        bob.write_policy()
        policy = msgspec.structs.replace(bob.policy(), peers=(*UNSOUND, ada_url))
        with Store(bob.home, author=bob.name) as store:
            result = recall_team(store, policy, LOCKS_QUERY, identity=bob.identity, deadline=10)
        seen, problems = list_peers(policy, identity=bob.identity)

    failed = {s.name: s.error for s in result.sources if s.status == "failed"}
    assert failed == {
        hinted: f"{hinted!r} is not a usable URL: {problem}" for hinted, problem in UNSOUND.items()
    }
    assert [(s.name, s.status) for s in result.sources if s.status == "ok"] == [
        ("coordinator", "ok"), ("ada", "ok")
    ]  # fmt: skip
    assert [(h.id, h.source) for h in result.hits] == [(locks, "peer ada")]
    assert [p.name for p in seen] == ["ada"]
    assert problems == [
        f"{hinted}: {hinted!r} is not a usable URL: {problem}"
        for hinted, problem in UNSOUND.items()
    ]


def test_a_presence_list_naming_an_unsound_url_for_a_member_drops_only_it(tmp_path: Path) -> None:
    ada, bob, _, coordinator = ada_and_bob(tmp_path)
    coordinator.presences = [presence_for(ada.identity, "http://[::1", team=TEAM, name="ada")]
    with serving(coordinator) as url:
        bob.coordinator = url
        bob.write_policy()
        with Store(bob.home, author=bob.name) as store:
            result = recall_team(
                store, bob.policy(), LOCKS_QUERY, identity=bob.identity, deadline=10
            )

    assert [(s.name, s.status) for s in result.sources] == [("coordinator", "ok")]
    assert result.dropped == {"bad_peer_url": 1}
