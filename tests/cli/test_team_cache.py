"""The team cache end to end: a real coordinator, two members, the real command line. What
bob publishes reaches alice's brief and prompt block under his name, leaves them once his
retraction reaches her cache, and stays readable (with its age) when the coordinator is gone."""

import json
from pathlib import Path

import pytest

from memmesh.net.server import free_port
from tests.cli._output import json_of
from tests.conftest import MemRunner
from tests.team._team import Team, team_on_loopback

pytestmark = pytest.mark.usefixtures("team_token")

GOTCHA = "Staging deploys need the VPN: run wg-quick up staging before deploying"
CONVENTION = "Web releases are tagged vYYYY.MM.DD by the release script"
PROMPT = json.dumps({"prompt": "How do I deploy to staging?", "session_id": "s9"})


def _brief(mem: MemRunner) -> str:
    result = mem("hook", "brief", "--project", "web")
    assert result.returncode == 0, result.stderr
    return result.stdout


def _block(mem: MemRunner) -> str:
    result = mem("hook", "prompt", "--project", "web", "--client", "codex", stdin=PROMPT)
    assert (result.returncode, result.stderr) == (0, "")
    return result.stdout


def test_a_teammates_item_reaches_the_hooks_until_retracted_and_survives_offline(
    roster_team: Team,
) -> None:
    ada, bob = roster_team.members["ada"], roster_team.members["bob"]
    ada.remember("Invoices go out on the 1st", kind="fact", project="web")
    gotcha = bob.share(GOTCHA, kind="gotcha", project="web")
    mem = MemRunner(ada.home, Path.cwd())

    refreshed = json_of(mem("team", "cache", "refresh", "--json"))
    assert (refreshed["items"], refreshed["complete"]) == (1, True)
    line = f"- [gotcha] bob: {GOTCHA}"
    assert line in _brief(mem).splitlines()
    assert line in _block(mem).splitlines()

    bob.retract(gotcha)
    bob.sync()
    assert line in _brief(mem).splitlines()  # not refreshed yet
    assert json_of(mem("team", "cache", "refresh", "--json"))["items"] == 0
    assert GOTCHA not in _brief(mem)
    assert GOTCHA not in _block(mem)

    bob.share(CONVENTION, kind="convention", project="web")
    mem("team", "cache", "refresh")
    ada.write_policy(coordinator=f"http://127.0.0.1:{free_port()}")  # the coordinator is gone
    failed = mem("team", "cache", "refresh")
    assert failed.returncode != 0
    brief = _brief(mem)
    assert f"- [convention] bob: {CONVENTION}" in brief
    assert "From your team (as of a minute ago; the coordinator was not reachable):" in brief
    status = json_of(mem("team", "cache", "status", "--json"))
    assert status["items"] == 1
    assert status["problem"]


def test_with_the_coordinator_stopped_the_brief_comes_from_the_cache_and_says_so(
    tmp_path: Path,
) -> None:
    with team_on_loopback(tmp_path) as team:
        ada, bob = team.add("ada"), team.add("bob")
        team.enrol(ada, bob)
        bob.share(GOTCHA, kind="gotcha", project="web")
        mem = MemRunner(ada.home, Path.cwd())
        assert mem("team", "cache", "refresh").returncode == 0
    # The coordinator has stopped: the same address no longer answers.
    failed = mem("team", "cache", "refresh")
    brief = _brief(mem)

    assert failed.returncode == 4, failed.stderr
    assert f"- [gotcha] bob: {GOTCHA}" in brief.splitlines()
    assert "the coordinator was not reachable" in brief


def test_outcome_last_after_the_prompt_hook_credits_the_teammate_s_item_it_showed(
    roster_team: Team,
) -> None:
    ada, bob = roster_team.members["ada"], roster_team.members["bob"]
    ada.remember("Invoices go out on the 1st", kind="fact", project="web")
    gotcha = bob.share(GOTCHA, kind="gotcha", project="web")
    as_ada, as_bob = MemRunner(ada.home, Path.cwd()), MemRunner(bob.home, Path.cwd())
    assert as_ada("team", "cache", "refresh").returncode == 0
    assert f"- [gotcha] bob: {GOTCHA}" in _block(as_ada).splitlines()

    credited = json_of(as_ada("--json", "outcome", "--last", "worked"))
    as_ada("team", "sync")
    as_bob("team", "sync")

    assert credited["from"] == "prompt"
    assert [(t["id"], t["author"]) for t in credited["teammates"]] == [(gotcha, "bob")]
    shown = json_of(as_bob("show", gotcha, "--json"))
    assert shown["teammates"] == {"worked": 1, "failed": 0, "partial": 0}
