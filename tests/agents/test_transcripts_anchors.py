"""A gotcha captured from a session is anchored to the files its fix edited, as they were at
capture: a Claude Code edit named by its absolute path, a Codex patch's files relative to the
session's folder, at most four of them; a file outside any repository, deleted before
capture, or named relative to no folder gives no anchor and no error."""

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memmesh.agents.transcripts import MAX_ANCHORED, propose_transcript
from memmesh.local.anchors import anchor_file
from memmesh.local.inbox import Candidate
from memmesh.local.store import Store

NOW = 1_770_000_000.0
FAILS = "ImportError: cannot import name 'retry' from 'senders'"


@pytest.fixture
def fixed_store(tmp_path: Path) -> Iterator[Store]:
    """A real store whose clock stands still, so that an anchor's time is known."""
    with Store(tmp_path / "home", author="tester", clock=lambda: NOW) as opened:
        yield opened


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A real git repository, ``billing``, with ``src/senders.py`` and ``src/retry.py``."""
    top = tmp_path / "billing"
    subprocess.run(["git", "init", "-q", str(top)], check=True)
    (top / "src").mkdir()
    (top / "src" / "senders.py").write_text("def send(hook):\n    return retry(hook)\n")
    (top / "src" / "retry.py").write_text("def retry(hook):\n    return hook()\n")
    return top


def _line(kind: str, cwd: str, content: Any) -> str:
    role = "user" if kind == "user" else "assistant"
    message = {"role": role, "content": content}
    return json.dumps({"type": kind, "sessionId": "s-1", "cwd": cwd, "message": message})


def _bash(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "pytest -q"}}


def _result(call_id: str, output: str, failed: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": output, "is_error": failed}


def claude_session(tmp_path: Path, cwd: str, *edited: str) -> Path:
    """A Claude Code session in ``cwd``: `pytest -q` fails, ``edited`` are edited (one Edit
    each), then `pytest -q` passes."""
    lines = [
        _line("user", cwd, "Add retries to the webhook sender."),
        _line("assistant", cwd, [_bash("t1")]),
        _line("user", cwd, [_result("t1", f"Exit code 1\n{FAILS}", failed=True)]),
    ]
    for n, path in enumerate(edited):
        edit = {"type": "tool_use", "id": f"e{n}", "name": "Edit", "input": {"file_path": path}}
        lines.append(_line("assistant", cwd, [edit]))
    lines.append(_line("assistant", cwd, [_bash("t2")]))
    lines.append(_line("user", cwd, [_result("t2", "3 passed in 0.21s")]))
    transcript = tmp_path / "claude-session.jsonl"
    transcript.write_text("\n".join(lines) + "\n")
    return transcript


def _item(payload: dict[str, Any]) -> str:
    return json.dumps({"type": "response_item", "payload": payload})


def _lint(call_id: str) -> str:
    arguments = json.dumps({"cmd": "make lint"})
    call = {"type": "function_call", "name": "exec_command", "arguments": arguments}
    return _item({**call, "call_id": call_id})


def _output(call_id: str, text: str) -> str:
    return _item({"type": "function_call_output", "call_id": call_id, "output": text})


def _codex(tmp_path: Path, cwd: str | None, *patched: str) -> Path:
    """A Codex session in ``cwd`` (none: no session line): `make lint` fails, one patch updates
    ``patched``, then `make lint` passes."""
    patch = "".join(f"*** Update File: {p}\n@@\n" for p in patched)
    lines = [json.dumps({"type": "session_meta", "payload": {"id": "c-1", "cwd": cwd}})]
    lines = lines if cwd is not None else []
    lines += [
        _lint("1"),
        _output("1", "make: *** No rule to make target 'lint'.  Stop.\nProcess exited with code 2"),
        _item(
            {
                "type": "custom_tool_call",
                "name": "apply_patch",
                "call_id": "2",
                "input": f"*** Begin Patch\n{patch}*** End Patch\n",
            }
        ),
        _lint("3"),
        _output("3", "All checks passed!\nProcess exited with code 0"),
    ]
    transcript = tmp_path / "rollout.jsonl"
    transcript.write_text("\n".join(lines) + "\n")
    return transcript


def _proposed(store: Store, client: str, transcript: Path) -> list[Candidate]:
    report = propose_transcript(store, client, transcript)
    assert (report.error, report.extract_error) == (None, None)
    return list(report.proposed)


def test_a_gotcha_fixed_by_editing_a_file_of_a_repository_is_anchored_to_it(
    fixed_store: Store, repo: Path, tmp_path: Path
) -> None:
    transcript = claude_session(tmp_path, str(repo), str(repo / "src" / "senders.py"))

    (gotcha,) = _proposed(fixed_store, "claude", transcript)

    assert gotcha.text == f"`pytest -q` fails with {FAILS}; fixed by editing src/senders.py"
    assert gotcha.about == (anchor_file(repo, "src/senders.py", 0, 0, NOW),)
    (anchor,) = gotcha.about
    assert (anchor.path, anchor.first_line, anchor.last_line) == ("src/senders.py", 0, 0)
    assert (anchor.repo, anchor.anchored_at) == (str(repo), NOW)


def test_only_a_gotcha_s_edited_files_are_anchored_not_what_other_rules_find(
    fixed_store: Store, repo: Path, tmp_path: Path
) -> None:
    transcript = claude_session(tmp_path, str(repo), str(repo / "src" / "senders.py"))
    lines = transcript.read_text().splitlines()
    rule = _line("user", str(repo), "We always run the linter before committing.")
    transcript.write_text("\n".join([rule, *lines]) + "\n")

    found = {c.kind: c.about for c in _proposed(fixed_store, "claude", transcript)}

    assert found["convention"] == ()
    assert [a.path for a in found["gotcha"]] == ["src/senders.py"]


def test_a_codex_patch_anchors_each_file_it_changed_relative_to_the_session_folder(
    fixed_store: Store, repo: Path, tmp_path: Path
) -> None:
    transcript = _codex(tmp_path, str(repo), "src/senders.py", "src/retry.py")

    (gotcha,) = _proposed(fixed_store, "codex", transcript)

    assert gotcha.text.endswith("fixed by editing src/senders.py, src/retry.py")
    assert [a.path for a in gotcha.about] == ["src/senders.py", "src/retry.py"]
    assert gotcha.about[1] == anchor_file(repo, "src/retry.py", 0, 0, NOW)


def test_a_file_whose_name_holds_a_comma_is_anchored_whole(
    fixed_store: Store, repo: Path, tmp_path: Path
) -> None:
    odd = repo / "docs" / "notes, old.md"
    odd.parent.mkdir()
    odd.write_text("Staging runs from main.\n")

    (gotcha,) = _proposed(fixed_store, "claude", claude_session(tmp_path, str(repo), str(odd)))

    assert [a.path for a in gotcha.about] == ["docs/notes, old.md"]


def test_at_most_four_files_are_anchored_the_first_ones_edited(
    fixed_store: Store, repo: Path, tmp_path: Path
) -> None:
    names = [f"src/m{n}.py" for n in range(6)]
    for name in names:
        (repo / name).write_text(f"VALUE = {name!r}\n")

    (gotcha,) = _proposed(fixed_store, "codex", _codex(tmp_path, str(repo), *names))

    assert MAX_ANCHORED == 4
    assert [a.path for a in gotcha.about] == names[:MAX_ANCHORED]


def test_files_outside_a_repository_or_deleted_before_capture_give_no_anchor_nor_error(
    fixed_store: Store, repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "scratch" / "notes.py"
    outside.parent.mkdir()
    outside.write_text("x = 1\n")
    deleted = repo / "src" / "old.py"
    deleted.write_text("x = 2\n")
    transcript = claude_session(
        tmp_path, str(repo), str(outside), str(deleted), str(repo / "src/retry.py")
    )
    deleted.unlink()

    (gotcha,) = _proposed(fixed_store, "claude", transcript)

    assert "editing src/old.py" in gotcha.text
    assert [a.path for a in gotcha.about] == ["src/retry.py"]


def test_a_file_that_cannot_be_read_as_text_gives_no_anchor(
    fixed_store: Store, repo: Path, tmp_path: Path
) -> None:
    (repo / "src" / "blob.bin").write_bytes(b"\0\1\2")

    transcript = _codex(tmp_path, str(repo), "src/blob.bin", "src/retry.py")
    (gotcha,) = _proposed(fixed_store, "codex", transcript)

    assert [a.path for a in gotcha.about] == ["src/retry.py"]


def test_a_relative_path_without_the_session_s_folder_gives_no_anchor(
    fixed_store: Store, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)  # never read against the folder `mem` runs in

    (gotcha,) = _proposed(fixed_store, "codex", _codex(tmp_path, None, "src/senders.py"))

    assert gotcha.text.endswith("fixed by editing src/senders.py")
    assert gotcha.about == ()
