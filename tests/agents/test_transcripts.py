"""Coding agents' transcripts cut into inbox candidates: exactly the user's stated rules and
decisions and the commands fixed after failing, from a Claude Code and a Codex session; a
secret redacted; a malformed file refused while a cut last line is tolerated; the extract
command's candidates added, and its failure or slowness reported."""

import json
import sys
from pathlib import Path

import pytest

from memmesh.agents import transcripts
from memmesh.agents.transcripts import propose_transcript, transcript_files
from memmesh.local import inbox
from memmesh.local.store import Store

HERE = Path(__file__).parent / "transcripts"
CLAUDE = HERE / "claude" / "claude-session.jsonl"
SECRET = HERE / "claude" / "claude-secret.jsonl"
CODEX = HERE / "codex" / "rollout-2026-03-03T09-00-00-0199a3c1.jsonl"
BROKEN = HERE / "broken.jsonl"
CLAUDE_SESSION = "5b1f0c2e-7a41-4d2b-9c3e-0a6d8e4f1b27"
CODEX_SESSION = "0199a3c1-5e2f-7b80-a1d4-3c9e6f2b8a10"


def _found(store: Store, client: str, path: Path) -> list[tuple[int | None, str, str]]:
    report = propose_transcript(store, client, path)
    assert (report.error, report.extract_error) == (None, None)
    return [(c.source_line, c.kind, c.text) for c in report.proposed]


def test_a_claude_code_session_proposes_rules_decisions_and_fixed_commands_only(
    store: Store,
) -> None:
    assert _found(store, "claude", CLAUDE) == [
        (2, "convention", "We always run the linter before committing."),
        (8, "gotcha", "`pytest -q tests/webhooks` fails with ImportError: cannot import name "
         "'retry' from 'senders'; fixed by editing src/senders.py"),
        (9, "convention", "Use httpx not requests for new code."),
        (13, "command", '`npm run build` works; `npm run buld` failed with: npm ERR! Missing '
         'script: "buld"'),
        (14, "decision", "We decided to keep the queue in SQLite because the team runs no Redis."),
    ]  # fmt: skip


def test_a_claude_candidate_names_its_file_session_project_and_first_prompt(
    store: Store,
) -> None:
    first = propose_transcript(store, "claude", CLAUDE).proposed[0]
    assert (first.source_path, first.session_id, first.project, first.context) == (
        str(CLAUDE.resolve()), CLAUDE_SESSION, "billing",
        "Add retries to the webhook sender. We always run the linter before committing.",
    )  # fmt: skip


def test_a_codex_session_proposes_from_user_messages_and_shell_calls_only(store: Store) -> None:
    assert _found(store, "codex", CODEX) == [
        (4, "convention", "From now on, run migrations with make migrate, not by hand."),
        (12, "gotcha", "`cargo test refunds` fails with error[E0432]: unresolved import "
         "`serde_json`; fixed by running `cargo add serde_json`"),
        (19, "gotcha", "`make lint` fails with make: *** No rule to make target 'lint'.  Stop; "
         "fixed by editing Makefile"),
        (20, "decision", "We chose integer cents for amounts because floats round badly."),
    ]  # fmt: skip
    candidate = inbox.pending(store)[0]
    assert (candidate.session_id, candidate.project) == (CODEX_SESSION, "payments")


def test_a_secret_in_a_transcript_is_redacted_in_the_candidate_and_its_context(
    store: Store,
) -> None:
    report = propose_transcript(store, "claude", SECRET)
    (candidate,) = report.proposed
    assert candidate.text == "Never paste the deploy token [redacted: github-token] into the chat."
    assert "ghp_" not in candidate.context
    assert report.redacted == ("github-token",)


def test_ingesting_a_transcript_again_proposes_nothing_new(store: Store) -> None:
    propose_transcript(store, "codex", CODEX)
    again = propose_transcript(store, "codex", CODEX)
    assert (again.proposed, again.already_pending) == ((), 4)
    assert len(inbox.pending(store)) == 4


def test_a_line_that_is_not_json_refuses_the_file_and_adds_nothing(store: Store) -> None:
    report = propose_transcript(store, "claude", BROKEN)
    assert report.error == f"{BROKEN}: line 2 is not JSON; nothing of it was added to the inbox"
    assert inbox.pending(store) == []


def test_a_cut_last_line_is_left_out_and_the_rest_proposed(store: Store, tmp_path: Path) -> None:
    cut = tmp_path / "cut.jsonl"
    whole = json.dumps({"type": "user", "sessionId": "s", "message": {"role": "user",
                        "content": "Never force-push to main."}})  # fmt: skip
    cut.write_text(whole + "\n" + whole[:25])
    assert _found(store, "claude", cut) == [(1, "convention", "Never force-push to main.")]


def test_the_wrong_client_or_a_missing_file_is_named(store: Store, tmp_path: Path) -> None:
    wrong = propose_transcript(store, "codex", CLAUDE)
    missing = propose_transcript(store, "claude", tmp_path / "gone.jsonl")
    assert wrong.error == f"{CLAUDE}: not a Codex transcript; nothing of it was added to the inbox"
    assert missing.error == (
        f"{tmp_path / 'gone.jsonl'}: No such file or directory; nothing of it was added to the "
        "inbox"
    )


def test_a_folder_gives_every_jsonl_under_it(tmp_path: Path) -> None:
    assert transcript_files(HERE / "claude") == [SECRET, CLAUDE]
    assert transcript_files(tmp_path) == []


def _script(tmp_path: Path, body: str) -> str:
    script = tmp_path / "extract.py"
    script.write_text(body)
    return f"{sys.executable} {script}"


def test_the_extract_command_reads_the_transcript_and_its_candidates_are_added(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command = _script(tmp_path, (
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        "users = [r['line'] for r in data['records'] if r['data'].get('type') == 'user']\n"
        "print(json.dumps([{'text': f\"{data['client']} session {data['session_id']} has \""
        " f\"{len(users)} user lines\", 'kind': 'fact', 'line': users[0]}]))\n"
    ))  # fmt: skip
    monkeypatch.setenv("MEM_EXTRACT_COMMAND", command)
    found = _found(store, "claude", SECRET)
    assert found == [
        (1, "convention", "Never paste the deploy token [redacted: github-token] into the chat."),
        (1, "fact", f"claude session {CLAUDE_SESSION} has 1 user lines"),
    ]


def test_a_slow_or_broken_extract_command_is_reported_and_the_rules_still_go_in(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transcripts, "EXTRACT_TIMEOUT_S", 0.2)
    monkeypatch.setenv("MEM_EXTRACT_COMMAND", _script(tmp_path, "import time\ntime.sleep(5)\n"))
    slow = propose_transcript(store, "codex", CODEX)
    monkeypatch.setenv("MEM_EXTRACT_COMMAND", _script(tmp_path, 'print(\'[{"kind": "x"}]\')\n'))
    bad = propose_transcript(store, "claude", SECRET)
    assert slow.extract_error == (
        f"{CODEX}: the extract command gave no answer within 0.2 s; the rule-based candidates "
        "were added"
    )
    assert len(slow.proposed) == 4
    assert bad.extract_error == (
        f'{SECRET}: the extract command printed an entry without a "text" or with an unknown '
        '"kind"; the rule-based candidates were added'
    )
    assert len(bad.proposed) == 1


def test_a_sub_agents_prompts_are_not_taken_for_the_users(store: Store, tmp_path: Path) -> None:
    side = tmp_path / "agent-1a2b3c4d.jsonl"
    lines = [
        {"type": "user", "isSidechain": True, "sessionId": "s", "agentId": "1a2b3c4d",
         "message": {"role": "user", "content": "Never touch the billing tables; report back."}},
        {"type": "user", "isSidechain": False, "sessionId": "s",
         "message": {"role": "user", "content": "Never skip the migration review."}},
    ]  # fmt: skip
    side.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert _found(store, "claude", side) == [(2, "convention", "Never skip the migration review.")]


def test_a_line_nested_deeper_than_the_bound_is_skipped_and_the_rest_proposed(
    store: Store, tmp_path: Path
) -> None:
    from memmesh.agents._jsonl import MAX_DEPTH, Skipped

    deep = tmp_path / "deep.jsonl"
    whole = json.dumps({"type": "user", "sessionId": "s", "message": {"role": "user",
                        "content": "Never force-push to main."}})  # fmt: skip
    nested = '{"a": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}"
    deep.write_text(f"{nested}\n{whole}\n")
    report = propose_transcript(store, "claude", deep)
    assert report.skipped == (Skipped(1, "nested too deeply"),)
    assert [c.text for c in report.proposed] == ["Never force-push to main."]
