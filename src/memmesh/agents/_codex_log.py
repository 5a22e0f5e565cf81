"""Codex's session transcripts: ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``.

Each line is one JSON object ``{"timestamp", "type", "payload"}``. Read from it:
``session_meta`` (``payload.id``: the session, ``payload.cwd``); ``response_item`` lines whose
``payload.type`` is ``message`` with ``role`` user (its ``input_text`` blocks; the
``<environment_context>``, ``<user_instructions>`` and AGENTS.md text Codex sends in the
user's name is left out), ``function_call`` (``name`` ``shell``, ``container.exec``,
``local_shell`` or ``exec_command``; ``arguments`` is a JSON string with ``command``: a list
such as ``["bash", "-lc", "…"]``, or ``cmd``: a string), ``function_call_output``
(``call_id``; ``output`` a JSON string ``{"output", "metadata": {"exit_code"}}``, or text
ending in ``Process exited with code N``), and ``custom_tool_call`` ``apply_patch`` (the
files it changed). ``event_msg``, ``turn_context``, ``reasoning`` and assistant messages are
never read.
"""

import json
import re
from typing import Any

from memmesh.agents._jsonl import Record, Session, Step, text_of

__all__ = ["is_codex", "session"]

_SHELLS = ("shell", "container.exec", "local_shell", "exec_command", "shell_command")
_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions")
_EXITED = re.compile(r"(?:Process exited with code|Exit code:?) (-?\d+)")
_PATCHED = re.compile(r"^\*\*\* (?:Update|Add) File: (.+)$", re.MULTILINE)


def is_codex(records: list[Record]) -> bool:
    """Whether these lines look like a Codex transcript."""
    return any(
        r.data.get("type") in ("session_meta", "response_item") and "payload" in r.data
        for r in records
    )


def session(records: list[Record]) -> Session:
    """The session id, working folder and steps of a Codex transcript."""
    session_id = cwd = ""
    steps: list[Step] = []
    for record in records:
        payload = record.data.get("payload")
        if not isinstance(payload, dict):
            continue
        if record.data.get("type") == "session_meta":
            session_id = session_id or str(payload.get("id") or "")
            cwd = cwd or str(payload.get("cwd") or "")
        elif record.data.get("type") == "response_item":
            step = _item(record.line, payload)
            if step is not None:
                steps.append(step)
    return Session(session_id, cwd, steps)


def _item(line: int, payload: dict[str, Any]) -> Step | None:
    kind = payload.get("type")
    call_id = str(payload.get("call_id") or "")
    if kind == "message" and payload.get("role") == "user":
        text = text_of(payload.get("content")).strip()
        return Step(line, "user", text) if text and not text.startswith(_INJECTED) else None
    if kind == "function_call" and payload.get("name") in _SHELLS:
        command = _command(payload.get("arguments"))
        return Step(line, "call", command, call_id) if command else None
    if kind in ("function_call_output", "custom_tool_call_output"):
        output, failed = _output(payload.get("output"))
        return Step(line, "result", output, call_id, failed)
    if kind == "custom_tool_call" and payload.get("name") == "apply_patch":
        files = _PATCHED.findall(str(payload.get("input") or ""))
        return Step(line, "edit", ", ".join(f.strip() for f in files)) if files else None
    return None


def _command(arguments: Any) -> str:
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return ""
    if not isinstance(parsed, dict):
        return ""
    command = parsed.get("cmd", parsed.get("command"))
    if isinstance(command, list) and all(isinstance(w, str) for w in command):
        if len(command) == 3 and command[1] in ("-lc", "-c"):
            return str(command[2])
        return " ".join(command)
    return command if isinstance(command, str) else ""


def _output(output: Any) -> tuple[str, bool]:
    """The text of a call's output and whether it failed (a non-zero exit code)."""
    text = output if isinstance(output, str) else json.dumps(output)
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("metadata"), dict):
        code = parsed["metadata"].get("exit_code")
        return str(parsed.get("output") or ""), isinstance(code, int) and code != 0
    exited = _EXITED.search(text)
    return text, bool(exited and exited[1] != "0")
