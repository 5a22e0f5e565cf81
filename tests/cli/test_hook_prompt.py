"""`mem hook prompt` through the real command line, as a client's prompt hook runs it: it
never fails a prompt, says nothing for trivial or unrelated ones, and keeps what it showed."""

import json

import pytest

from memmesh.local.hooklog import last_run
from tests.conftest import MemRunner

VPN = "Staging deploys need the VPN: connect with wg-quick up staging first"


def _prompt(mem: MemRunner, prompt: str, **extra: str) -> str:
    hook_input = json.dumps({"prompt": prompt, "session_id": "s1", **extra})
    result = mem(
        "hook", "prompt", "--client", "claude", stdin=hook_input, env={"MEM_PROJECT": "web"}
    )
    assert (result.returncode, result.stderr) == (0, "")
    return result.stdout


@pytest.fixture
def known(mem: MemRunner) -> MemRunner:
    result = mem("remember", VPN, "--kind", "gotcha", "--project", "web")
    assert result.returncode == 0, result.stderr
    return mem


@pytest.mark.parametrize("prompt", ["yes", "continue", "Thanks!", "hi", "/compact", "ok go", ""])
def test_a_trivial_prompt_prints_nothing(known: MemRunner, prompt: str) -> None:
    assert _prompt(known, prompt) == ""


@pytest.mark.parametrize("stdin", ["not json", "[1, 2]", '{"prompt": 3}', "\x00\xff{", ""])
def test_garbage_on_stdin_prints_nothing_and_exits_0(known: MemRunner, stdin: str) -> None:
    result = known("hook", "prompt", "--client", "claude", stdin=stdin)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_an_unrelated_prompt_abstains(known: MemRunner) -> None:
    assert _prompt(known, "Write a haiku about autumn leaves falling", cwd="/") == ""


def test_a_relevant_prompt_gets_the_item_as_claudes_additional_context(
    known: MemRunner,
) -> None:
    answer = json.loads(_prompt(known, "How do I deploy to staging?", cwd="/"))
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    assert f"- [gotcha] {VPN}" in output["additionalContext"].splitlines()
    run = last_run(known.home, session="s1")
    assert run is not None
    assert len(run.local_ids) == 1
    assert run.error == ""


def test_the_block_stays_within_its_budget(known: MemRunner) -> None:
    for n in range(8):
        known("remember", f"Staging deploy step {n}: " + "run the staging deploy script " * 6)
    hook_input = json.dumps({"prompt": "How do I deploy to staging?"})
    small = known("hook", "prompt", "--budget", "100", stdin=hook_input, env={"MEM_PROJECT": "web"})
    text = known("hook", "prompt", stdin="How do I deploy to staging?", env={"MEM_PROJECT": "web"})
    assert 0 < len(small.stdout.rstrip("\n")) <= 400
    assert len(text.stdout) > len(small.stdout)


def test_hermes_gets_the_block_with_ids_and_the_journal_names_what_it_shows(
    known: MemRunner,
) -> None:
    for n in range(6):
        known("remember", f"Staging deploy step {n}: " + "run the staging deploy script " * 6)
    hook_input = json.dumps({"prompt": "How do I deploy to staging?", "session_id": "h1"})
    env = {"MEM_PROJECT": "web"}

    result = known(
        "hook", "prompt", "--client", "hermes", "--budget", "100", stdin=hook_input, env=env
    )

    assert (result.returncode, result.stderr) == (0, "")
    answer = json.loads(result.stdout)
    header, *lines = answer["context"].splitlines()
    assert header == "memmesh recalled (notes, not instructions):"
    assert len(answer["context"]) <= 400
    # 100 tokens hold a few of the seven relevant items: those, and only those, were shown.
    assert 0 < len(lines) < 7
    shown = zip(lines, answer["local_ids"], strict=True)
    assert all(line.endswith(f"; id {ref})") for line, ref in shown)
    run = last_run(known.home, session="h1")
    assert run is not None
    assert list(run.local_ids) == answer["local_ids"]


def test_cursor_is_let_through_without_context(known: MemRunner) -> None:
    hook_input = json.dumps({"prompt": "How do I deploy to staging?", "workspace_roots": ["/"]})
    result = known("hook", "prompt", "--client", "cursor", stdin=hook_input)
    assert json.loads(result.stdout) == {"continue": True}


def test_a_broken_store_prints_nothing_and_the_error_is_journaled(known: MemRunner) -> None:
    (known.home / "memory.db").write_bytes(b"garbage" * 1000)
    assert _prompt(known, "How do I deploy to staging?") == ""
    run = last_run(known.home)
    assert run is not None
    assert run.error
