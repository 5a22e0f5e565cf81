"""`mem hook capture --client claude` run as Claude Code runs it (its PreCompact/SessionEnd
JSON on standard input, in a real subprocess): it exits 0 and prints nothing, the transcript's
candidates land in the inbox, and a transcript it cannot read is journaled, never shown."""

import json
import time
from pathlib import Path

from memmesh.local import inbox
from memmesh.local.hooklog import last_run
from memmesh.local.store import Store
from tests.conftest import MemRunner

HERE = Path(__file__).parent.parent / "agents" / "transcripts"
SESSION = "5b1f0c2e-7a41-4d2b-9c3e-0a6d8e4f1b27"


def _hook_input(transcript: Path, event: str) -> str:
    data = {
        "session_id": SESSION, "transcript_path": str(transcript), "cwd": "/home/dev/billing",
        "permission_mode": "default", "hook_event_name": event,
    }  # fmt: skip
    data.update({"reason": "exit"} if event == "SessionEnd" else {"trigger": "auto"})
    return json.dumps(data)


def test_the_capture_hook_proposes_the_transcript_silently(mem: MemRunner) -> None:
    transcript = HERE / "claude" / "claude-session.jsonl"

    hook = ("hook", "capture", "--client", "claude")

    ran = mem(*hook, stdin=_hook_input(transcript, "PreCompact"))
    again = mem(*hook, stdin=_hook_input(transcript, "SessionEnd"))

    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "", "")
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")
    with Store(mem.home) as store:
        pending = inbox.pending(store)
    assert len(pending) == 5
    assert {(c.session_id, c.project) for c in pending} == {(SESSION, "billing")}
    run = last_run(mem.home, session=SESSION)
    assert run is not None
    assert (run.hook, run.project, run.error) == ("capture", "billing", "")


def test_a_transcript_the_hook_cannot_read_is_journaled_and_it_still_exits_0(
    mem: MemRunner, tmp_path: Path
) -> None:
    missing = tmp_path / "gone.jsonl"

    ran = mem("hook", "capture", "--client", "claude", stdin=_hook_input(missing, "SessionEnd"))
    garbage = mem("hook", "capture", "--client", "claude", stdin="not json")

    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "", "")
    assert (garbage.returncode, garbage.stdout, garbage.stderr) == (0, "", "")
    run = last_run(mem.home, session=SESSION)
    assert run is not None
    assert (run.hook, run.error) == (
        "capture",
        f"{missing}: No such file or directory; nothing of it was added to the inbox",
    )
    latest = last_run(mem.home)
    assert latest is not None
    assert latest.error == "the hook's input is not JSON"


def test_codex_s_precompact_hook_proposes_its_rollout_as_mem_ingest_codex_does(
    mem: MemRunner, tmp_path: Path
) -> None:
    rollout = next((HERE / "codex").glob("rollout-*.jsonl"))
    by_hand = MemRunner(tmp_path / "by-hand", mem.cwd)
    assert by_hand("ingest", "codex", str(rollout)).returncode == 0

    ran = mem("hook", "capture", "--client", "codex", stdin=_hook_input(rollout, "PreCompact"))

    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "", "")
    with Store(mem.home) as store, Store(by_hand.home) as expected:
        hooked = sorted(c.text for c in inbox.pending(store))
        assert hooked == sorted(c.text for c in inbox.pending(expected))
    assert hooked


def test_a_session_s_end_records_a_consolidation_report_at_most_once_a_day(
    mem: MemRunner,
) -> None:
    from memmesh.consolidate.runs import last_run as last_consolidation

    mem("remember", "--global", "we use Redis locks for the job queue")
    mem("remember", "--global", "we use Postgres advisory locks for the job queue")
    transcript = HERE / "claude" / "claude-session.jsonl"
    hook = ("hook", "capture", "--client", "claude")

    assert mem(*hook, stdin=_hook_input(transcript, "PreCompact")).returncode == 0
    time.sleep(2)
    assert last_consolidation(mem.home) is None  # a compaction is no session's end

    assert mem(*hook, stdin=_hook_input(transcript, "SessionEnd")).returncode == 0
    deadline = time.monotonic() + 30
    run = None
    while run is None and time.monotonic() < deadline:
        time.sleep(0.2)
        run = last_consolidation(mem.home)
    assert run is not None
    assert run.contradictions == 1
    assert run.applied == 0

    assert mem(*hook, stdin=_hook_input(transcript, "SessionEnd")).returncode == 0
    time.sleep(2)
    assert last_consolidation(mem.home) == run
    with Store(mem.home) as store:
        assert len(store.items()) == 2
