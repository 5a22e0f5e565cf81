"""The entries memmesh writes into a client's files, and how it knows them again.

Two kinds: memmesh's MCP server entry (``mcpServers.memmesh`` in JSON, ``[mcp_servers.memmesh]``
in TOML) and the hooks running ``mem … hook brief`` (as a session starts) and ``mem … hook
prompt`` (as each prompt is sent), in a JSON hooks file either inside groups (Claude Code,
Codex; a session-start group has a matcher) or in a flat list (Cursor). A hook running
``mem … hook capture`` is known as memmesh's too, so that uninstalling takes it as well.
Each function takes a file's text and returns the edited text; which of them a client needs
is in :mod:`memmesh.agents.install`.
"""

import itertools
import shlex
from pathlib import Path
from typing import Any

from memmesh.agents._jsonedit import (
    load_object,
    remove_at,
    remove_member,
    set_member,
    upsert_element,
)

__all__ = [
    "HOOK_TIMEOUT_SECONDS",
    "is_our_hook",
    "set_json_server",
    "set_toml_server",
    "with_grouped_hook",
    "with_listed_hook",
    "without_json_server",
    "without_our_hooks",
]

HOOK_TIMEOUT_SECONDS = 10
# The `mem hook` commands whose hooks are memmesh's.
_OUR_HOOK_COMMANDS = frozenset({"brief", "prompt", "capture"})
# What memmesh owns in an existing server entry; the rest (``env``, timeouts) is the user's.
_OWNED = ("command", "args")


def set_json_server(
    text: str, path: list[str], entry: dict[str, Any], owned: tuple[str, ...] = _OWNED
) -> str:
    """Set memmesh's MCP server entry at ``path``; in an existing entry only the keys memmesh
    ``owned`` there, so that keys a user added to it (``env``, say) stay."""
    if isinstance(_get(load_object(text), path), dict):
        for key in owned:
            text = set_member(text, [*path, key], entry[key])
        return text
    return set_member(text, path, entry)


def set_toml_server(text: str, path: list[str], entry: dict[str, Any]) -> str:
    """As :func:`set_json_server`, for the table at ``path`` of a TOML file."""
    # tomlkit loads only where a TOML file is edited, not with every `mem` command.
    from memmesh.agents._tomledit import load_table, set_table

    if isinstance(_get(load_table(text), path), dict):
        return set_table(text, path, {key: entry[key] for key in _OWNED})
    return set_table(text, path, entry)


def without_json_server(text: str, path: list[str]) -> str:
    """Without the entry at ``path``, and without the object of servers if that leaves it
    empty."""
    return _without_empty(remove_member(text, path), path[:-1])


def with_grouped_hook(text: str, event: str, command: str, matcher: str | None) -> str:
    """Our hook goes into the first ``hooks.<event>`` group that holds one (next to whatever
    hooks the user put there, under the user's matcher), else into a group of its own, with
    ``matcher`` if it is not ``None``; copies of it elsewhere (an older install) are removed."""
    hook = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECONDS}
    where: list[str | int] = ["hooks", event]
    groups = _get(load_object(text), ["hooks", event])
    holding = [
        i for i, g in enumerate(groups if isinstance(groups, list) else []) if _is_our_group(g)
    ]
    if not holding:
        group = {"hooks": [hook]} if matcher is None else {"matcher": matcher, "hooks": [hook]}
        return upsert_element(text, where, _is_our_group, group)
    assert isinstance(groups, list)
    for index in reversed(holding[1:]):
        text = _drop_ours(text, where, index, groups[index])
    return upsert_element(text, [*where, holding[0], "hooks"], is_our_hook, hook)


def with_listed_hook(text: str, event: str, command: str) -> str:
    """Our hook in the flat list ``hooks.<event>``, in place of an older one of ours."""
    hook = {"command": command, "timeout": HOOK_TIMEOUT_SECONDS}
    return upsert_element(text, ["hooks", event], is_our_hook, hook)


def without_our_hooks(text: str, event: str) -> str:
    """Every hook of memmesh's (brief, prompt, capture) removed from ``hooks.<event>``, and the
    groups left empty by that."""
    entries = _get(load_object(text), ["hooks", event])
    if not isinstance(entries, list):
        return text
    where: list[str | int] = ["hooks", event]
    for index in reversed(range(len(entries))):
        text = _drop_ours(text, where, index, entries[index])
    return _without_empty(text, ["hooks", event])


def is_our_hook(hook: Any) -> bool:
    """A hook entry whose command runs memmesh's brief, prompt or capture hook, wherever `mem`
    was installed."""
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    try:
        argv = shlex.split(hook["command"])
    except ValueError:
        return False
    runs_memmesh = bool(argv) and (
        Path(argv[0]).name == "mem"
        or any(a == "-m" and b == "memmesh" for a, b in itertools.pairwise(argv))
    )
    runs_hook = any(a == "hook" and b in _OUR_HOOK_COMMANDS for a, b in itertools.pairwise(argv))
    return runs_memmesh and runs_hook


def _drop_ours(text: str, where: list[str | int], index: int, entry: Any) -> str:
    """Without memmesh's hooks in the entry at ``where[index]``: a hook of ours (a flat list)
    or a group holding only ours goes whole; from a group shared with the user's hooks, only
    ours go."""
    if is_our_hook(entry) or (
        _is_our_group(entry) and all(is_our_hook(hook) for hook in entry["hooks"])
    ):
        return remove_at(text, where, index)
    if _is_our_group(entry):
        inner = [*where, index, "hooks"]
        for position in reversed(range(len(entry["hooks"]))):
            if is_our_hook(entry["hooks"][position]):
                text = remove_at(text, inner, position)
    return text


def _without_empty(text: str, path: list[str]) -> str:
    """Drop the containers along ``path`` that are left empty, innermost first."""
    for depth in range(len(path), 0, -1):
        if _get(load_object(text), path[:depth]) not in ([], {}):
            break
        text = remove_member(text, path[:depth])
    return text


def _is_our_group(group: Any) -> bool:
    return (
        isinstance(group, dict)
        and isinstance(group.get("hooks"), list)
        and any(is_our_hook(hook) for hook in group["hooks"])
    )


def _get(data: Any, path: list[str]) -> Any:
    """The value at ``path`` in nested dicts; ``None`` where there is none."""
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data
