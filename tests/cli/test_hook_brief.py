"""`mem hook brief` through the real command line, as a client's session-start hook runs it."""

import json
import subprocess
import sys
from pathlib import Path

from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner


def _remember(mem: MemRunner, text: str, *args: str) -> str:
    result = mem("remember", text, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_brief_prints_the_projects_items_and_global_preferences(mem: MemRunner) -> None:
    _remember(mem, "Staging deploys need the VPN", "--kind", "gotcha", "--project", "web")
    _remember(mem, "Prefer small commits", "--kind", "preference", "--global")
    _remember(mem, "The API uses FastAPI", "--project", "api")
    result = mem("hook", "brief", "--project", "web")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "memmesh: what you know about web (recall more with memmesh):\n"
        "- [gotcha] Staging deploys need the VPN\n"
        "Preferences:\n"
        "- [preference] Prefer small commits\n"
    )


def test_a_big_store_still_gives_at_most_600_characters(mem: MemRunner, home: Path) -> None:
    from memmesh.local.store import Store

    with Store(home, author="ada") as store:
        for n in range(60):
            store.remember(f"Web fact {n}: " + "the service does something " * 8, project="web")
            store.remember(f"Preference {n}: " + "always do it this way " * 8, kind="preference")
    result = mem("hook", "brief", "--project", "web")
    assert result.returncode == 0, result.stderr
    assert 200 < len(result.stdout.rstrip("\n")) <= 600


def test_claude_hook_input_picks_the_project_of_its_working_folder(
    mem: MemRunner, tmp_path: Path
) -> None:
    repo = tmp_path / "billing"
    (repo / ".git").mkdir(parents=True)
    _remember(mem, "Invoices go out on the 1st", "--project", "billing")
    hook_input = json.dumps({"session_id": "s1", "cwd": str(repo), "source": "startup"})
    result = mem("hook", "brief", "--client", "claude", stdin=hook_input)
    assert result.returncode == 0, result.stderr
    assert "- [fact] Invoices go out on the 1st" in result.stdout
    assert result.stdout.startswith("memmesh: what you know about billing")


def test_cursor_gets_a_json_answer_with_additional_context(mem: MemRunner, tmp_path: Path) -> None:
    repo = tmp_path / "billing"
    (repo / ".git").mkdir(parents=True)
    _remember(mem, "Invoices go out on the 1st", "--project", "billing")
    hook_input = json.dumps({"workspace_roots": [str(repo)], "hook_event_name": "sessionStart"})
    answer = json.loads(mem("hook", "brief", "--client", "cursor", stdin=hook_input).stdout)
    assert answer["continue"] is True
    assert "Invoices go out on the 1st" in answer["additional_context"]


def test_no_store_yet_prints_nothing_and_creates_nothing(mem: MemRunner, home: Path) -> None:
    result = mem("hook", "brief", "--client", "claude", stdin="")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert not home.exists()


def test_json_output_names_the_project_and_the_text(mem: MemRunner) -> None:
    _remember(mem, "Staging deploys need the VPN", "--kind", "gotcha", "--project", "web")
    data = json_of(mem("hook", "brief", "--project", "web", "--json"))
    assert data["project"] == "web"
    assert data["brief"].endswith("- [gotcha] Staging deploys need the VPN")


def test_an_invalid_project_is_one_line_of_error(mem: MemRunner) -> None:
    result = mem("hook", "brief", "--project", "no spaces")
    assert result.returncode == 2
    assert error_line(result).startswith("mem: error: project 'no spaces' is not a valid name")


def test_a_hook_whose_stdin_stays_open_is_not_held_up(home: Path, tmp_path: Path) -> None:
    # Nobody writes to the pipe and nobody closes it: the brief must still answer.
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memmesh",
            "--home",
            str(home),
            "hook",
            "brief",
            "--client",
            "codex",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    try:
        returncode = process.wait(timeout=30)
    finally:
        process.kill()
        assert process.stdin is not None
        process.stdin.close()
    assert process.stdout is not None
    assert process.stderr is not None
    assert (returncode, process.stdout.read(), process.stderr.read()) == (0, b"", b"")
    process.stdout.close()
    process.stderr.close()
