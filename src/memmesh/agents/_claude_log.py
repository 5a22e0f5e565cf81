"""Claude Code's session transcripts: ``~/.claude/projects/<folder>/<session>.jsonl``.

Each line is one JSON object with a ``type``: ``user`` and ``assistant`` lines carry a
``message`` (``role``, and ``content``: a string, or a list of blocks ``text``, ``thinking``,
``tool_use`` with ``id``/``name``/``input``, ``tool_result`` with ``tool_use_id``/``content``/
``is_error``), the ``sessionId``, ``cwd`` and ``timestamp``; ``summary``, ``system``,
``file-history-snapshot`` and other lines are left out. Read from it: the user's own text
(not what Claude Code writes in the user's name: ``isMeta`` lines, ``<command-…>`` and
``<local-command-…>`` echoes, interruptions; nor a sub-agent's prompts, written by the main
agent: ``isSidechain`` lines), the ``Bash`` tool's commands and their results
(failed: ``is_error``, or an ``Exit code N`` first line), and the files ``Edit``/``Write``/
``MultiEdit`` changed. Assistant prose is never read.
"""

import re
from typing import Any

from memmesh.agents._jsonl import Record, Session, Step, text_of

__all__ = ["is_claude", "session"]

_EDITS = ("Edit", "MultiEdit", "Write", "NotebookEdit")
_GENERATED = ("<command-", "<local-command-", "[Request interrupted", "Caveat: ")
_EXIT = re.compile(r"\AExit code (\d+)")


def is_claude(records: list[Record]) -> bool:
    """Whether these lines look like a Claude Code transcript."""
    return any(r.data.get("type") in ("user", "assistant") and "message" in r.data for r in records)


def session(records: list[Record]) -> Session:
    """The session id, working folder and steps of a Claude Code transcript."""
    session_id = cwd = ""
    steps: list[Step] = []
    for record in records:
        data = record.data
        session_id = session_id or str(data.get("sessionId") or "")
        cwd = cwd or str(data.get("cwd") or "")
        message = data.get("message")
        if not isinstance(message, dict) or data.get("type") not in ("user", "assistant"):
            continue
        content = message.get("content")
        if data.get("type") == "user":
            hidden = bool(data.get("isMeta") or data.get("isSidechain"))
            steps += _user(record.line, content, hidden)
        elif isinstance(content, list):
            steps += [s for block in content if (s := _tool_use(record.line, block))]
    return Session(session_id, cwd, steps)


def _user(line: int, content: Any, meta: bool) -> list[Step]:
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    out: list[Step] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            output = text_of(block.get("content"))
            exit_code = _EXIT.match(output)
            failed = bool(block.get("is_error")) or bool(exit_code and exit_code[1] != "0")
            call_id = str(block.get("tool_use_id") or "")
            out.append(Step(line, "result", output, call_id, failed))
        elif block.get("type") == "text" and not meta:
            text = str(block.get("text") or "").strip()
            if text and not text.startswith(_GENERATED):
                out.append(Step(line, "user", text))
    return out


def _tool_use(line: int, block: Any) -> Step | None:
    if not isinstance(block, dict) or block.get("type") != "tool_use":
        return None
    tool = block.get("input")
    tool = tool if isinstance(tool, dict) else {}
    if block.get("name") == "Bash" and isinstance(tool.get("command"), str):
        return Step(line, "call", tool["command"], str(block.get("id") or ""))
    if block.get("name") in _EDITS:
        path = tool.get("file_path") or tool.get("notebook_path")
        return Step(line, "edit", str(path)) if isinstance(path, str) else None
    return None
