"""memmesh's Hermes provider outside Hermes: the recall budget and a team that does not answer.

(tests/agents/test_hermes_plugin.py drives it inside the real Hermes Agent.)
"""

import json
import sys
from pathlib import Path

from memmesh.agents.hermes_provider import BUDGET, MemmeshProvider
from memmesh.local.store import Store


def _provider(tmp_path: Path, home: Path) -> MemmeshProvider:
    config = tmp_path / "memmesh.json"
    argv = [sys.executable, "-m", "memmesh", "--home", str(home)]
    config.write_text(json.dumps({"argv": argv, "home": str(home)}))
    provider = MemmeshProvider(config)
    provider.initialize("session", platform="cli", agent_context="primary")
    return provider


def test_prefetch_stays_within_its_budget(tmp_path: Path, home: Path) -> None:
    with Store(home, author="tester") as store:
        for number in range(8):
            store.remember(f"webhook retries, note {number}: " + "the queue replays them " * 12)
    provider = _provider(tmp_path, home)

    context = provider.prefetch("webhook retries")

    header, *lines = context.splitlines()
    assert header.startswith("memmesh recalled")
    assert lines
    assert len("\n".join(lines)) <= BUDGET
    assert all(len(line) < 400 for line in lines)


def test_a_team_that_does_not_answer_leaves_the_local_items(tmp_path: Path, home: Path) -> None:
    with Store(home, author="tester") as store:
        store.remember("deploys freeze on Fridays after 3pm")
    (home / "team.yaml").write_text('team: t\nmember: me\ncoordinator: "http://127.0.0.1:9"\n')
    provider = _provider(tmp_path, home)
    assert provider.team_configured()

    context = provider.prefetch("when do deploys freeze")

    assert "deploys freeze on Fridays" in context
    assert "error" in json.loads(provider.handle_tool_call("memmesh_recall_team", {"query": ""}))
