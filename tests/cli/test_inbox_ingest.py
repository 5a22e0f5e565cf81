"""`mem ingest` through the real command line: a folder of Claude Code transcripts and a
malformed one (named, the others still go in, exit 1), a secret warned of, and a second run
that finds everything already pending."""

import json
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


def _session_with(tmp_path: Path, middle: bytes) -> Path:
    """The Claude session of the fixtures with ``middle`` as its line 4, in a folder."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    lines = (HERE / "claude" / "claude-session.jsonl").read_bytes().split(b"\n")
    (folder / "a.jsonl").write_bytes(b"\n".join([*lines[:3], middle, *lines[3:]]))
    (folder / "b.jsonl").write_bytes((HERE / "claude" / "claude-secret.jsonl").read_bytes())
    return folder


def test_a_deeply_nested_line_is_skipped_and_named_and_the_folder_still_goes_in(
    mem: MemRunner, tmp_path: Path
) -> None:
    folder = _session_with(tmp_path, b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")

    done = mem("ingest", "claude", str(folder), "--json")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stderr.splitlines()[0]) == {
        "warning": f"{folder / 'a.jsonl'}: skipped line 4 (nested too deeply); the other lines "
        "were read",
        "code": "transcript_lines_skipped",
    }
    files = json_of(done)["files"]
    assert [len(f["proposed"]) for f in files] == [5, 1]
    assert files[0]["skipped"] == [{"line": 4, "reason": "nested too deeply"}]
    assert files[1]["skipped"] == []


def test_an_overlong_line_is_skipped_without_being_held_in_memory(
    mem: MemRunner, tmp_path: Path
) -> None:
    from tests._rss import peak_bytes

    small = _session_with(tmp_path, b'{"type": "summary", "summary": "x"}')
    big = tmp_path / "big"
    big.mkdir()
    text = b"We always run the linter. " + b"x" * (40 << 20)
    line = b'{"type": "user", "message": {"role": "user", "content": "' + text + b'"}}'
    (big / "a.jsonl").write_bytes(
        b"\n".join([*(small / "a.jsonl").read_bytes().split(b"\n")[:3], line, b""])
    )

    baseline = peak_bytes(tmp_path / "h1", mem.cwd, "ingest", "claude", str(small))
    peak = peak_bytes(tmp_path / "h2", mem.cwd, "ingest", "claude", str(big))
    done = mem("ingest", "claude", str(big))

    assert peak - baseline < 16 << 20, f"{(peak - baseline) >> 20} MiB more than a small file"
    assert done.returncode == 0, done.stderr
    assert done.stderr == (
        f"mem: warning: {big / 'a.jsonl'}: skipped line 4 (longer than 4 MiB); the other "
        "lines were read\n"
    )
    assert (
        done.stdout == f"{big / 'a.jsonl'}: proposed 1, already pending 0, skipped 1 line\n"
        "review them with `mem inbox`\n"
    )
