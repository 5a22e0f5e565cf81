"""How fresh the hooks' view of the team is: a retraction leaves a teammate's prompt hook within
the bound, whether a warm server follows the coordinator's feed or the hook starts the refresh
itself; and cached items are withheld, in one line that says so, once the coordinator has not
confirmed them for the offline bound. A real coordinator, two members, the real command line."""

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memmesh.agents import warm
from memmesh.local.teamcache import OFFLINE_BOUND_S
from memmesh.net.server import free_port
from memmesh.team.refresh import refresh_cache
from tests.conftest import MemRunner
from tests.team._team import Team

pytestmark = pytest.mark.usefixtures("team_token")

GOTCHA = "Staging deploys need the VPN: run wg-quick up staging before deploying"
PROMPT = json.dumps({"prompt": "How do I deploy to staging?", "session_id": "s9"})
LINE = f"- [gotcha] bob: {GOTCHA}"
# The bound these tests hold the hooks to, with the intervals they set small.
BOUND_S = 10.0


def _block(mem: MemRunner, env: dict[str, str]) -> str:
    result = mem("hook", "prompt", "--project", "web", "--client", "codex", stdin=PROMPT, env=env)
    assert (result.returncode, result.stderr) == (0, "")
    return result.stdout


def _seconds_until(condition: Callable[[], bool], limit: float) -> float:
    """Seconds until ``condition`` held (it is asked again and again), or ``inf`` past ``limit``."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        if condition():
            return time.monotonic() - started
        time.sleep(0.1)
    return float("inf")


def test_a_retraction_leaves_the_prompt_hook_through_the_warm_servers_polling(
    roster_team: Team,
) -> None:
    ada, bob = roster_team.members["ada"], roster_team.members["bob"]
    ada.remember("Invoices go out on the 1st", kind="fact", project="web")
    gotcha = bob.share(GOTCHA, kind="gotcha", project="web")
    mem = MemRunner(ada.home, Path.cwd())
    # Hooks themselves never refresh here: only the warm server's polling can.
    env = {
        "MEM_HOOK_WARM": "1", "MEM_HOOK_WARM_IDLE": "120",
        "MEM_TEAM_POLL_S": "0.3", "MEM_TEAM_REFRESH_S": "3600",
    }  # fmt: skip
    assert mem("team", "cache", "refresh").returncode == 0
    try:
        _block(mem, env)  # starts the warm server
        asked = {"prompt": "How do I deploy to staging?", "project": "web"}
        ready = _seconds_until(lambda: warm.ask(ada.home, asked, timeout=1) is not None, 30)
        assert ready < 30, "the warm server never answered"
        assert LINE in _block(mem, env).splitlines()

        bob.retract(gotcha)
        bob.sync()
        took = _seconds_until(lambda: GOTCHA not in _block(mem, env), BOUND_S)
    finally:
        warm.stop(ada.home)

    assert took < BOUND_S


def test_a_retraction_leaves_the_prompt_hook_without_a_warm_server(roster_team: Team) -> None:
    ada, bob = roster_team.members["ada"], roster_team.members["bob"]
    ada.remember("Invoices go out on the 1st", kind="fact", project="web")
    gotcha = bob.share(GOTCHA, kind="gotcha", project="web")
    mem = MemRunner(ada.home, Path.cwd())
    env = {"MEM_HOOK_WARM": "0", "MEM_TEAM_REFRESH_S": "0.5"}
    assert mem("team", "cache", "refresh").returncode == 0
    assert LINE in _block(mem, env).splitlines()

    bob.retract(gotcha)
    bob.sync()
    took = _seconds_until(lambda: GOTCHA not in _block(mem, env), BOUND_S)

    assert took < BOUND_S


def test_items_unconfirmed_past_the_offline_bound_are_withheld_and_the_hooks_say_so(
    roster_team: Team,
) -> None:
    ada, bob = roster_team.members["ada"], roster_team.members["bob"]
    ada.remember("Staging deploys start from the deploy runbook", kind="fact", project="web")
    bob.share(GOTCHA, kind="gotcha", project="web")
    mem = MemRunner(ada.home, Path.cwd())
    env = {"MEM_HOOK_WARM": "0"}
    # The last refresh the coordinator answered was longer ago than the bound.
    long_ago = time.time() - OFFLINE_BOUND_S - 3600
    refresh_cache(ada.home, ada.policy(), ada.identity, clock=lambda: long_ago)
    ada.write_policy(coordinator=f"http://127.0.0.1:{free_port()}")  # unreachable from now on
    assert mem("team", "cache", "refresh").returncode == 4

    block = _block(mem, env)
    brief = mem("hook", "brief", "--project", "web", env=env)

    assert GOTCHA not in block
    assert GOTCHA not in brief.stdout
    said = "withheld (not confirmed by the coordinator for 25 h)"
    assert [line for line in block.splitlines() if said in line] == [block.splitlines()[0]]
    assert [line for line in brief.stdout.splitlines() if said in line] != []
