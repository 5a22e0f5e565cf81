"""`mem ingest` through the real command line: a folder of Claude Code transcripts and a
malformed one (named, the others still go in, exit 1), a secret warned of, and a second run
that finds everything already pending."""

from pathlib import Path

from tests.cli._output import json_of
from tests.conftest import MemRunner

HERE = Path(__file__).parent.parent / "agents" / "transcripts"


def test_ingest_proposes_a_folder_names_a_broken_file_and_repeats_nothing(
    mem: MemRunner,
) -> None:
    folder, broken = HERE / "claude", HERE / "broken.jsonl"

    first = mem("ingest", "claude", str(folder), str(broken))
    again = mem("ingest", "claude", str(folder), "--json")

    assert first.returncode == 1
    assert first.stdout == (
        f"{folder / 'claude-secret.jsonl'}: proposed 1, already pending 0\n"
        f"{folder / 'claude-session.jsonl'}: proposed 5, already pending 0\n"
        "review them with `mem inbox`\n"
    )
    assert first.stderr == (
        f"mem: warning: {folder / 'claude-secret.jsonl'}: redacted a secret (github-token)\n"
        f"mem: warning: {broken}: line 2 is not JSON; nothing of it was added to the inbox\n"
    )
    assert again.returncode == 0
    files = json_of(again)["files"]
    assert [(f["proposed"], f["already_pending"]) for f in files] == [([], 1), ([], 5)]
    pending = json_of(mem("inbox", "--json"))["candidates"]
    assert len(pending) == 6
    assert {c["project"] for c in pending} == {"billing"}
