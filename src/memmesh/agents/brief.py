"""`mem hook brief`: what an agent should know as a session starts, in at most 600 characters.

The text is the project's most useful items (reinforced, with good outcomes) and the global
preferences, from :func:`memmesh.local.digest.digest`. Each line is one item; long items are
cut with an ellipsis; the least useful lines are dropped until the whole fits.

Clients read a session-start hook's answer differently: Claude Code and Codex add plain
standard output to the context, Cursor reads ``additional_context`` from a JSON object. Each
client gives the hook a JSON object on standard input naming the working folder, which decides
the project.
"""

import json
from pathlib import Path
from typing import Any

from memmesh.local.digest import Digest, Useful
from memmesh.local.items import GLOBAL

__all__ = ["MAX_CHARS", "hook_output", "render", "working_folder"]

MAX_CHARS = 600
MAX_ITEM_CHARS = 150
MAX_PREFERENCES = 3


def render(digest: Digest, *, limit: int = MAX_CHARS) -> str:
    """The brief as text of at most ``limit`` characters; empty when there is nothing."""
    items = [_line(item) for item in digest.items]
    preferences = [_line(item) for item in digest.preferences[:MAX_PREFERENCES]]
    about = "" if digest.project == GLOBAL else f" about {digest.project}"
    header = f"memmesh: what you know{about} (recall more with memmesh):"
    while items or preferences:
        text = _assemble(header, items, preferences)
        if len(text) <= limit:
            return text
        # Drop the least useful project line first, but keep one preference while we can.
        if items and (len(items) > 1 or len(preferences) <= 1):
            items.pop()
        elif preferences:
            preferences.pop()
        else:
            items.pop()
    return ""


def hook_output(client: str | None, text: str) -> str:
    """What the hook prints for ``client``: the text itself, or Cursor's JSON answer."""
    if client == "cursor":
        answer: dict[str, Any] = {"continue": True}
        if text:
            answer["additional_context"] = text
        return json.dumps(answer, ensure_ascii=False)
    return text


def working_folder(stdin_text: str) -> Path | None:
    """The working folder a client's hook input names (``cwd``, or Cursor's first
    ``workspace_roots``), or ``None`` when the input says nothing usable."""
    try:
        data = json.loads(stdin_text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    roots = data.get("workspace_roots")
    candidate = data.get("cwd")
    if not isinstance(candidate, str) and isinstance(roots, list) and roots:
        candidate = roots[0]
    if not isinstance(candidate, str) or not candidate:
        return None
    folder = Path(candidate)
    return folder if folder.is_absolute() and folder.is_dir() else None


def _line(item: Useful) -> str:
    text = " ".join(item.text.split())
    if len(text) > MAX_ITEM_CHARS:
        text = text[: MAX_ITEM_CHARS - 1].rstrip() + "…"
    return f"- [{item.kind}] {text}"


def _assemble(header: str, items: list[str], preferences: list[str]) -> str:
    lines = [header, *items] if items else [header]
    if preferences:
        lines += ["Preferences:", *preferences]
    return "\n".join(lines)
