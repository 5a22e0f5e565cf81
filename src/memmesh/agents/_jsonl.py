"""A coding agent's transcript on disk, read as JSON lines, and the steps the rules look at.

Both clients write one JSON object a line and append to the file while a session runs, so
the last line may be cut: a last line that is not JSON is left out; any other line that is
not a JSON object makes the file unreadable (:class:`TranscriptUnreadable`). What each
format says is turned into :class:`Step` records by :mod:`memmesh.agents._claude_log` and
:mod:`memmesh.agents._codex_log`.
"""

import json
from pathlib import Path
from typing import Any, Literal, NamedTuple

from memmesh._files import reason
from memmesh.agents.errors import TranscriptUnreadable

__all__ = ["MAX_FILE_BYTES", "Record", "Session", "Step", "read_records", "text_of"]

MAX_FILE_BYTES = 256 * 1024 * 1024


class Record(NamedTuple):
    """One JSON object of the file and its line (1-based)."""

    line: int
    data: dict[str, Any]


class Step(NamedTuple):
    """What the rules look at: a user's text, a shell command the agent ran (``call``), the
    result of one (``result``: its output and whether it failed), or a file it edited."""

    line: int
    what: Literal["user", "call", "result", "edit"]
    text: str
    call_id: str = ""
    failed: bool = False


class Session(NamedTuple):
    """A transcript's session id, working folder and steps, in the file's order."""

    session_id: str
    cwd: str
    steps: list[Step]


def read_records(path: Path) -> list[Record]:
    """Each JSON object of the transcript at ``path``; see the module for what is refused."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise TranscriptUnreadable(str(path), f"larger than {MAX_FILE_BYTES >> 20} MiB")
        data = path.read_bytes()
    except IsADirectoryError:
        raise TranscriptUnreadable(str(path), "a folder, not a transcript") from None
    except OSError as exc:
        raise TranscriptUnreadable(str(path), reason(exc)) from None
    lines = data.split(b"\n")
    last = max((i for i, raw in enumerate(lines) if raw.strip()), default=-1)
    records: list[Record] = []
    for index, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            if index == last:  # the client may be writing it
                break
            raise TranscriptUnreadable(str(path), f"line {index + 1} is not JSON") from None
        if not isinstance(value, dict):
            raise TranscriptUnreadable(str(path), f"line {index + 1} is not a JSON object")
        records.append(Record(index + 1, value))
    return records


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text of its text blocks."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [
        str(block.get("text", ""))
        for block in content
        if isinstance(block, dict) and block.get("type") in ("text", "input_text", "output_text")
    ]
    return "\n".join(p for p in parts if p)
