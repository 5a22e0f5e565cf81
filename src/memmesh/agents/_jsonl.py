"""A coding agent's transcript on disk, read as JSON lines, and the steps the rules look at.

Both clients write one JSON object a line and append to the file while a session runs, so
the last line may be cut: a last line that is not JSON is left out; any other line that is
not a JSON object makes the file unreadable (:class:`TranscriptUnreadable`). A line longer
than :data:`MAX_LINE_BYTES` (passed over while reading, never held whole) or nesting deeper
than :data:`MAX_DEPTH` is skipped, and named in :attr:`Records.skipped`. What each
format says is turned into :class:`Step` records by :mod:`memmesh.agents._claude_log` and
:mod:`memmesh.agents._codex_log`.
"""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, NamedTuple

from memmesh._files import reason
from memmesh._lines import Line, bounded_lines
from memmesh.agents.errors import TranscriptUnreadable

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_LINE_BYTES",
    "Record",
    "Records",
    "Session",
    "Skipped",
    "Step",
    "read_records",
    "text_of",
]

MAX_FILE_BYTES = 256 * 1024 * 1024
# A line longer than this is passed over, never held whole; images pasted into a session are
# kept in it inline (base64), so a line of a few MiB is not rare.
MAX_LINE_BYTES = 4 * 1024 * 1024
# A line nesting objects and arrays deeper than this is passed over: no client writes one,
# and reading it would exhaust Python's recursion.
MAX_DEPTH = 64
_TOO_DEEP = "nested too deeply"


class Record(NamedTuple):
    """One JSON object of the file and its line (1-based)."""

    line: int
    data: dict[str, Any]


class Skipped(NamedTuple):
    """A line passed over, and why."""

    line: int
    reason: str


class Records(NamedTuple):
    """The JSON objects of a transcript, and the lines passed over."""

    records: list[Record]
    skipped: list[Skipped]


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


def read_records(path: Path) -> Records:
    """Each JSON object of the transcript at ``path``, and the lines passed over; see the
    module for what is refused."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise TranscriptUnreadable(str(path), f"larger than {MAX_FILE_BYTES >> 20} MiB")
        with path.open("rb") as handle:
            return _records_of(path, bounded_lines(handle, MAX_LINE_BYTES))
    except IsADirectoryError:
        raise TranscriptUnreadable(str(path), "a folder, not a transcript") from None
    except OSError as exc:
        raise TranscriptUnreadable(str(path), reason(exc)) from None


def _records_of(path: Path, lines: Iterator[Line]) -> Records:
    out = Records([], [])
    cut: int | None = None  # a line that is not JSON: refused unless it is the last
    for number, raw in lines:
        if raw is None:
            out.skipped.append(Skipped(number, f"longer than {MAX_LINE_BYTES >> 20} MiB"))
            continue
        if not raw.strip():
            continue
        if cut is not None:
            raise TranscriptUnreadable(str(path), f"line {cut} is not JSON")
        try:
            value = json.loads(raw)
        except RecursionError:
            out.skipped.append(Skipped(number, _TOO_DEEP))
            continue
        except (ValueError, UnicodeDecodeError):
            cut = number  # the client may be writing it
            continue
        if not isinstance(value, dict):
            raise TranscriptUnreadable(str(path), f"line {number} is not a JSON object")
        if _deeper_than(value, MAX_DEPTH):
            out.skipped.append(Skipped(number, _TOO_DEEP))
            continue
        out.records.append(Record(number, value))
    return out


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests objects and arrays more than ``limit`` deep (without recursion:
    a value nested deeper than Python recurses must not break this check)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if depth > limit:
            return True
        stack += [(c, depth + 1) for c in children if isinstance(c, dict | list)]
    return False


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
