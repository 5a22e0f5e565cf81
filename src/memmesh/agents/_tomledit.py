"""Set one table of a TOML document and leave every other byte where it was.

Like :mod:`memmesh.agents._jsonedit`, but for the table headers of TOML files (Codex keeps its
MCP servers in ``config.toml``): the lines of the table ``[a.b]`` (and of its sub-tables) are
replaced, or the table is appended at the end. Every edit is checked by parsing the result.
"""

import copy
import json
import re
import tomllib
from typing import Any

from memmesh.agents._jsonedit import EditError

__all__ = ["load_table", "set_table"]

_HEADER = re.compile(r"^\s*\[\[?\s*(?P<key>[^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY_PART = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([A-Za-z0-9_-]+))\s*(\.|$)')


def load_table(text: str) -> dict[str, Any]:
    """The document as a dict; :class:`EditError` when it is not valid TOML."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise EditError(f"not valid TOML ({exc})") from None


def set_table(text: str, path: list[str], values: dict[str, Any]) -> str:
    """``text`` with the table at ``path`` holding exactly ``values``."""
    data = load_table(text)
    expected = copy.deepcopy(data)
    parent = expected
    for key in path[:-1]:
        parent = parent.setdefault(key, {})
        if not isinstance(parent, dict):
            raise EditError(f"{key!r} is not a table")
    parent[path[-1]] = values
    rendered = _render(path, values)
    lines = text.splitlines(keepends=True)
    span = _table_span(lines, path)
    if span is None:
        if _defined(data, path):
            raise EditError(
                f"{'.'.join(path)} is written in a form this edit does not touch "
                "(inline or dotted keys); change it by hand"
            )
        body = text if not text or text.endswith("\n") else text + "\n"
        new = body + ("\n" if body.strip() else "") + rendered
    else:
        start, end = span
        new = "".join(lines[:start]) + rendered + "".join(lines[end:])
    try:
        if tomllib.loads(new) != expected:
            raise EditError("the edit did not come out as intended")
    except tomllib.TOMLDecodeError:
        raise EditError("the edit would not be valid TOML") from None
    return new


def _table_span(lines: list[str], path: list[str]) -> tuple[int, int] | None:
    """Lines ``[start, end)`` of the table ``path`` and its sub-tables, without the blank
    lines and comments that lead into the next table."""
    start = None
    end = len(lines)
    for number, line in enumerate(lines):
        match = _HEADER.match(line)
        if match is None:
            continue
        key = _split_key(match.group("key"))
        if start is None:
            if key == path:
                start = number
        elif key[: len(path)] != path:
            end = number
            break
    if start is None:
        return None
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip()[:1] == "#"):
        end -= 1
    return start, end


def _split_key(raw: str) -> list[str]:
    parts: list[str] = []
    position = 0
    while position < len(raw):
        match = _KEY_PART.match(raw, position)
        if match is None:
            return []
        quoted, literal, bare = match.group(1), match.group(2), match.group(3)
        if quoted is not None:
            parts.append(json.loads(f'"{quoted}"'))
        else:
            parts.append(literal if literal is not None else bare)
        position = match.end()
    return parts


def _defined(data: dict[str, Any], path: list[str]) -> bool:
    current: Any = data
    for key in path:
        if not isinstance(current, dict) or key not in current:
            return False
        current = current[key]
    return True


def _render(path: list[str], values: dict[str, Any]) -> str:
    lines = ["[" + ".".join(_key(part) for part in path) + "]"]
    lines += [f"{_key(key)} = {_value(value)}" for key, value in values.items()]
    return "\n".join(lines) + "\n"


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")
