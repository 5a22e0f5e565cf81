"""`mem hook brief`: what an agent should know as a session starts, in at most 600 characters.

The text is the project's most useful items (reinforced, with good outcomes) and the global
preferences, from :func:`memmesh.local.digest.digest`, then what teammates published for the
project (from the team cache, :func:`memmesh.team.cached.for_project`), each line naming its
author. Each line is one item; long items are cut with an ellipsis; the least useful lines are
dropped until the whole fits. The team's lines get what the local part leaves, and at least
:data:`TEAM_CHARS` of the 600 when the local part would take more.

Teammates' lines come under :data:`~memmesh.text.TEAMMATES_NOTE`, their tag-shaped text made
inert (:func:`memmesh.text.inert`), and in turns (:func:`by_turns`): each teammate's first
line, then each one's second, so that one teammate's items never push the others' out.

An item that another author's item in the brief contradicts (a teammate's, or the member's
own: :func:`memmesh.team.contradictions.otherwise`) has a line under it naming them, ``bob
says otherwise: ...`` (:func:`memmesh.agents.teampart.otherwise_line`, quoting at most
:data:`FLAG_CHARS` of their text). An item and its flag are kept or dropped together, like any
line, so the brief never grows past its limit for a flag; only an item that would not fit
with its flag is shown without it, rather than not at all. An item of the member's whose
anchored file changed since has a line under it too, ``may be stale: PATH changed since
DATE`` (:mod:`memmesh.local.anchors`), kept or dropped with it in the same way; an item out of
the dates it holds between is not in the brief at all (:mod:`memmesh.local.validity`).

Clients read a session-start hook's answer differently: Claude Code and Codex add plain
standard output to the context, Cursor reads ``additional_context`` from a JSON object. Each
client gives the hook a JSON object on standard input naming the working folder, which decides
the project.
"""

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memmesh.local.items import GLOBAL
from memmesh.text import TEAMMATES_NOTE

if TYPE_CHECKING:  # the prompt hook reads this module, and must start lean
    from memmesh.local.digest import Digest, Useful
    from memmesh.local.teamcache import CachedItem

__all__ = [
    "FLAG_CHARS",
    "MAX_CHARS",
    "TEAM_CHARS",
    "by_turns",
    "fit",
    "hook_output",
    "one_line",
    "render",
    "render_team",
    "working_folder",
]

MAX_CHARS = 600
# What the team's lines may always take of the brief, however much the local part has.
TEAM_CHARS = 240
MAX_ITEM_CHARS = 150
MAX_PREFERENCES = 3
# Characters of a contradicting item's text the line under a flagged item quotes at most.
FLAG_CHARS = 60
TEAM_HEADER = "From your team"
_T = TypeVar("_T")


def render(
    digest: "Digest",
    *,
    limit: int = MAX_CHARS,
    team: "list[CachedItem] | None" = None,
    team_note: str = "",
) -> str:
    """The brief as text of at most ``limit`` characters; empty when there is nothing.

    ``team`` is teammates' items, most relevant first; ``team_note`` what their header says of
    their age (empty while the cache is fresh)."""
    if not team:
        return _local(digest, limit)
    flags = _flags(digest, team)
    wanted = len(render_team(team, team_note, limit=limit, flags=flags))
    local = _local(digest, limit - min(wanted, TEAM_CHARS) - 1, flags)
    room = limit - len(local) - (1 if local else 0)
    about = "" if digest.project == GLOBAL else f" about {digest.project}"
    title = TEAM_HEADER if local else f"memmesh: what your team shared{about}"
    shared = render_team(team, team_note, limit=room, title=title, flags=flags)
    return "\n".join(part for part in (local, shared) if part)


def render_team(
    team: "list[CachedItem]",
    note: str = "",
    *,
    limit: int = MAX_CHARS,
    title: str = TEAM_HEADER,
    flags: Mapping[str, str] | None = None,
) -> str:
    """The team's lines under the notice and their header, each teammate's in turn
    (:func:`by_turns`), in at most ``limit`` characters (the last lines dropped until they
    fit); empty when not even one fits. ``flags`` holds the line under each line whose item
    someone says otherwise of."""
    from memmesh.agents.teampart import author_line

    header = f"{TEAMMATES_NOTE} {title} ({note}):" if note else f"{TEAMMATES_NOTE} {title}:"
    fair = by_turns(team, lambda item: item.key_id)
    lines = [author_line(item, limit=MAX_ITEM_CHARS) for item in fair]
    return fit(header, [line + (flags or {}).get(line, "") for line in lines], limit)


def by_turns(items: Sequence[_T], author: Callable[[_T], str]) -> list[_T]:
    """``items`` (best first) in turns: each author's best, then each one's second, and so
    on, in their order within a turn. Items whose ``author`` is empty (the member's own) are
    all in the first turn: they are not teammates', and keep their place."""
    seen: dict[str, int] = {}
    turns: list[int] = []
    for item in items:
        who = author(item)
        turns.append(seen.get(who, 0) if who else 0)
        if who:
            seen[who] = seen.get(who, 0) + 1
    order = sorted(range(len(items)), key=lambda n: turns[n])  # stable: best first in a turn
    return [items[n] for n in order]


def fit(header: str, lines: list[str], limit: int) -> str:
    """``header`` and the first of ``lines`` that fit together in ``limit`` characters (the
    last dropped first); empty when not even one fits. A line of several (an item and the
    line under it) is one: when it is the last left and does not fit, it is tried alone."""
    lines = list(lines)
    while lines:
        text = "\n".join([header, *lines])
        if len(text) <= limit:
            return text
        if len(lines) == 1 and "\n" in lines[0]:
            lines[0] = lines[0].split("\n", 1)[0]
            continue
        lines.pop()
    return ""


def one_line(text: str, limit: int) -> str:
    """``text`` with its whitespace folded onto one line, cut with an ellipsis past ``limit``."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _local(digest: "Digest", limit: int, flags: Mapping[str, str] | None = None) -> str:
    flagged = flags or {}
    chosen = (digest.items, digest.preferences[:MAX_PREFERENCES])
    items, preferences = (
        [_line(u) + flagged.get(_line(u), "") + _stale(u) for u in useful] for useful in chosen
    )
    about = "" if digest.project == GLOBAL else f" about {digest.project}"
    header = f"memmesh: what you know{about} (recall more with memmesh):"
    while items or preferences:
        text = _assemble(header, items, preferences)
        if len(text) <= limit:
            return text
        last = items or preferences
        if len(items) + len(preferences) == 1 and "\n" in last[0]:
            last[0] = last[0].split("\n", 1)[0]  # the last line left goes without its flag
            continue
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


def _line(item: "Useful") -> str:
    return f"- [{item.kind}] {one_line(item.text, MAX_ITEM_CHARS)}"


def _stale(item: "Useful") -> str:
    """The line under an item whose anchored files changed since (memmesh.local.anchors)."""
    return f"\n   {one_line(item.stale, MAX_ITEM_CHARS)}" if item.stale else ""


def _flags(digest: "Digest", team: "list[CachedItem]") -> dict[str, str]:
    """The line under each line of the brief whose item another author's item in it
    contradicts (teammates' of the member's items and of each other's, the member's of
    teammates'), by the line it goes under."""
    from memmesh.agents.teampart import author_line, otherwise_line
    from memmesh.team.contradictions import Said, otherwise

    own = [*digest.items, *digest.preferences[:MAX_PREFERENCES]]
    items = [Said(key_id="", author="", item_id=u.id, text=u.text) for u in own]
    items += [Said(key_id=c.key_id, author=c.author, item_id=c.item_id, text=c.text) for c in team]
    lines = [_line(u) for u in own] + [author_line(c, limit=MAX_ITEM_CHARS) for c in team]
    flags: dict[str, str] = {}
    for line, said in zip(lines, otherwise(items), strict=True):
        if said:
            flags.setdefault(line, f"\n   {otherwise_line(said, limit=FLAG_CHARS)}")
    return flags


def _assemble(header: str, items: list[str], preferences: list[str]) -> str:
    lines = [header, *items] if items else [header]
    if preferences:
        lines += ["Preferences:", *preferences]
    return "\n".join(lines)
