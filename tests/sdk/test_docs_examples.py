"""docs/sdk.md is tested: its ```python blocks run, in order, as one program in a fresh
interpreter, as a member of a real team (a coordinator on 127.0.0.1, a teammate who
published a decision)."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.team._team import LOCKS, Team

PAGE = Path(__file__).resolve().parents[2] / "docs" / "sdk.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _blocks(text: str) -> list[str]:
    return [match.group(1) for match in _BLOCK.finditer(text)]


def _run(blocks: list[str], folder: Path) -> str:
    """The blocks as one program (each under a comment naming it); what it printed."""
    program = folder / "sdk_examples.py"
    program.write_text(
        "".join(f"# docs/sdk.md, block {n}\n{block}\n" for n, block in enumerate(blocks, 1)),
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(program)],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def member_home(loopback_team: Team, team_token: None, monkeypatch: pytest.MonkeyPatch) -> Path:
    """bob's home as $MEM_HOME; ada has published the team's locking decision."""
    loopback_team.add("ada").share(LOCKS)
    bob = loopback_team.add("bob", auto_sync=True)
    monkeypatch.setenv("MEM_HOME", str(bob.home))
    return bob.home


def test_the_page_has_an_example_for_every_method() -> None:
    code = "\n".join(_blocks(PAGE.read_text(encoding="utf-8")))
    for method in ("remember", "recall", "outcome", "publish", "sync", "recall_team"):
        assert f"memory.{method}(" in code, method
    assert "AsyncMemory()" in code
    assert "MemmeshStore(" in code


def test_the_sdk_examples_run(member_home: Path, tmp_path: Path) -> None:
    text = PAGE.read_text(encoding="utf-8")
    out = _run(_blocks(text.split("\n## LangGraph\n")[0]), tmp_path)

    assert str(member_home) in out
    assert "ada: " + LOCKS in out


@pytest.mark.skipif(
    importlib.util.find_spec("langgraph") is None,
    reason="the optional LangGraph extra (memmesh[langgraph]) is not installed",
)
def test_every_example_runs_with_langgraph(member_home: Path, tmp_path: Path) -> None:
    out = _run(_blocks(PAGE.read_text(encoding="utf-8")), tmp_path)

    assert "['Ada deploys the webapp on Fridays']" in out
    assert "{'editor': 'helix', 'tabs': 4}" in out
