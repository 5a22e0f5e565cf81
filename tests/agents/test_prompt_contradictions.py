"""The prompt hook names a teammate who says otherwise, at the end of the line of the item they
contradict: from the store and team cache, through the warm server, and through the real
`mem hook prompt`, always one item a line and within the block's budget."""

import json
import threading
import time
from pathlib import Path

import pytest

from memmesh.agents import warm
from memmesh.agents.prompt import CHARS_PER_TOKEN, Line, block, lines_of, recall_lines
from memmesh.agents.teampart import FLAG_CHARS
from memmesh.local.hooklog import last_run
from memmesh.local.store import Store
from tests.agents._teamcache import cache_team_items
from tests.conftest import MemRunner

REDIS = "We use Redis locks for the job queue"
POSTGRES = "We use Postgres advisory locks for the job queue"
VPN = "Staging deploys need the VPN: connect with wg-quick up staging first"
PROMPT = "Which locks does the job queue use?"


@pytest.fixture
def contested(home: Path) -> Path:
    """A home whose store holds REDIS and VPN, and whose team cache holds bob's POSTGRES."""
    with Store(home) as store:
        store.remember(REDIS, kind="decision", project="web")
        store.remember(VPN, kind="gotcha", project="web")
    cache_team_items(home, [("bob", POSTGRES)], project="web")
    return home


def test_the_lines_name_who_says_otherwise_of_each_item(contested: Path) -> None:
    lines, _ = recall_lines(contested, PROMPT, "web")

    said = {line.text: line.otherwise for line in lines}
    assert said[REDIS] == f"bob says otherwise: {POSTGRES}"
    assert said[POSTGRES] == f"you say otherwise: {REDIS}"
    assert all(said[text] == "" for text in said if text not in (REDIS, POSTGRES))


def test_a_flag_ends_its_item_s_line_and_the_block_keeps_one_item_a_line() -> None:
    lines = [
        Line(2.0, "decision", REDIS, "01OWN", otherwise=f"bob says otherwise: {POSTGRES}"),
        Line(1.5, "decision", POSTGRES, "bobkey/01JTEAM", "bob", f"you say otherwise: {REDIS}"),
        Line(1.0, "gotcha", VPN, "01VPN"),
    ]

    text = block(lines)

    _, *shown = text.splitlines()
    assert shown == [
        f"- [decision] {REDIS} \u2014 bob says otherwise: {POSTGRES}",
        f"- [decision] bob: {POSTGRES} \u2014 you say otherwise: {REDIS}",
        f"- [gotcha] {VPN}",
    ]
    hermes = block(lines, client="hermes").splitlines()
    assert hermes[1] == (f"- {REDIS} (decision; id 01OWN) \u2014 bob says otherwise: {POSTGRES}")


@pytest.mark.parametrize("budget", [20, 40, 60, 100, 200])
def test_flags_never_take_the_block_past_its_budget(budget: int) -> None:
    flag = "bob says otherwise: " + "x" * FLAG_CHARS
    lines = [
        Line(10.0 - n, "decision", f"{REDIS} {n} " + "y" * 100, f"01OWN{n}", "", flag * (n % 2))
        for n in range(8)
    ]

    text = block(lines, budget=budget)

    assert len(text) <= budget * CHARS_PER_TOKEN
    shown = text.splitlines()[1:]
    assert all(line.startswith("- [decision] ") for line in shown)  # one item a line


def test_the_warm_server_s_lines_carry_the_flags(contested: Path) -> None:
    server = threading.Thread(target=warm.serve, args=(contested,), daemon=True)
    server.start()
    try:
        deadline = time.monotonic() + 30
        while not warm.socket_path(contested).exists():
            assert time.monotonic() < deadline, "the server never listened"
            time.sleep(0.05)
        answer = warm.ask(contested, {"prompt": PROMPT, "project": "web"}, timeout=10)
    finally:
        warm.stop(contested)
        server.join(10)

    assert answer is not None
    said = {line.text: line.otherwise for line in lines_of(answer["lines"])}
    assert said[REDIS] == f"bob says otherwise: {POSTGRES}"
    assert said[POSTGRES] == f"you say otherwise: {REDIS}"


def test_the_prompt_hook_names_who_says_otherwise(contested: Path, tmp_path: Path) -> None:
    mem = MemRunner(contested, tmp_path / "cwd")
    hook_input = json.dumps({"prompt": PROMPT, "session_id": "s9"})

    result = mem(
        "hook", "prompt", "--client", "claude", stdin=hook_input, env={"MEM_PROJECT": "web"}
    )

    assert (result.returncode, result.stderr) == (0, "")
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    _, *shown = context.splitlines()
    assert f"- [decision] {REDIS} \u2014 bob says otherwise: {POSTGRES}" in shown
    assert f"- [decision] bob: {POSTGRES} \u2014 you say otherwise: {REDIS}" in shown
    assert len(context) <= 200 * CHARS_PER_TOKEN
    run = last_run(contested, session="s9")
    assert run is not None
    assert len(run.local_ids) + len(run.team_ids) == len(shown)  # one item a line
    assert run.team_ids == ("bobkey/01JTEAM0000",)
