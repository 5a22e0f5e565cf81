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

__all__ = ["load_table", "remove_table", "set_table"]

_HEADER = re.compile(r"^\s*\[\[?\s*(?P<key>[^\]]+?)\s*\]\]?\s*(#.*)?$")
_ASSIGNMENT = re.compile(r"^\s*(?P<key>[^=\s#\[][^=#]*?)\s*=")
_KEY_PART = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([A-Za-z0-9_-]+))\s*(\.|$)')


def load_table(text: str) -> dict[str, Any]:
    """The document as a dict; :class:`EditError` when it is not valid TOML."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise EditError(f"not valid TOML ({exc})") from None


def set_table(text: str, path: list[str], values: dict[str, Any]) -> str:
    """``text`` with ``values`` set in the table at ``path``.

    The table's other keys and its sub-tables (a user's ``env``, say) keep their lines; the
    lines of the keys in ``values`` are replaced. A missing table is appended at the end.
    """
    data = load_table(text)
    expected = copy.deepcopy(data)
    parent = expected
    for key in path[:-1]:
        parent = parent.setdefault(key, {})
        if not isinstance(parent, dict):
            raise EditError(f"{key!r} is not a table")
    current = parent.get(path[-1])
    parent[path[-1]] = {**(current if isinstance(current, dict) else {}), **values}
    newline = "\r\n" if "\r\n" in text else "\n"  # the file's own line ending
    assignments = [f"{_key(key)} = {_value(value)}{newline}" for key, value in values.items()]
    lines = text.splitlines(keepends=True)
    span = _table_body(lines, path)
    if span is None:
        # Defined only through sub-tables (``[a.b.env]``) the table may still get its own
        # header; defined inline or with dotted keys it may not.
        if _defined(data, path) and not _has_sub_tables(lines, path):
            raise EditError(
                f"{'.'.join(path)} is written in a form this edit does not touch "
                "(inline or dotted keys); change it by hand"
            )
        body = text if not text or text.endswith("\n") else text + newline
        header = "[" + ".".join(_key(part) for part in path) + "]" + newline
        new = body + (newline if body.strip() else "") + header + "".join(assignments)
    else:
        start, end = span
        kept = _without_keys(lines[start:end], set(values))
        new = "".join(lines[:start]) + "".join(assignments) + "".join(kept) + "".join(lines[end:])
    try:
        if tomllib.loads(new) != expected:
            raise EditError("the edit did not come out as intended")
    except tomllib.TOMLDecodeError:
        raise EditError("the edit would not be valid TOML") from None
    return new


def remove_table(text: str, path: list[str]) -> str:
    """``text`` without the table at ``path`` and its sub-tables (unchanged when it has none).

    Raises :class:`EditError` when the table is written inline or with dotted keys.
    """
    data = load_table(text)
    expected = copy.deepcopy(data)
    parent: Any = expected
    for part in path[:-1]:
        parent = parent.get(part) if isinstance(parent, dict) else None
    if not isinstance(parent, dict) or path[-1] not in parent:
        return text
    del parent[path[-1]]
    lines = text.splitlines(keepends=True)
    inside = _inside_strings(lines)
    headers = [
        (number, _split_key(match.group("key")))
        for number, line in enumerate(lines)
        if not inside[number] and (match := _HEADER.match(line)) is not None
    ]
    drop: set[int] = set()
    for position, (number, header) in enumerate(headers):
        if header[: len(path)] == path:
            end = headers[position + 1][0] if position + 1 < len(headers) else len(lines)
            # The blank lines and comments leading into the next table are not this table's.
            while end > number + 1 and _is_blank_or_comment(lines[end - 1]):
                end -= 1
            if number > 0 and not lines[number - 1].strip():
                following = lines[end] if end < len(lines) else ""
                if not following.strip():
                    number -= 1  # the blank line that set the table apart goes with it
            drop.update(range(number, end))
    if not drop:
        raise EditError(
            f"{'.'.join(path)} is written in a form this edit does not touch "
            "(inline or dotted keys); change it by hand"
        )
    kept = [line for number, line in enumerate(lines) if number not in drop]
    new = "".join(kept)
    # A parent left empty ([mcp_servers] with nothing else) may vanish with the table.
    pruned = copy.deepcopy(expected)
    _prune(pruned, path[:-1])
    try:
        if tomllib.loads(new) not in (expected, pruned):
            raise EditError("the edit did not come out as intended")
    except tomllib.TOMLDecodeError:
        raise EditError("the edit would not be valid TOML") from None
    return new


def _has_sub_tables(lines: list[str], path: list[str]) -> bool:
    inside = _inside_strings(lines)
    for number, line in enumerate(lines):
        match = None if inside[number] else _HEADER.match(line)
        if match is not None and _split_key(match.group("key"))[: len(path)] == path:
            return True
    return False


def _is_blank_or_comment(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")


def _prune(data: dict[str, Any], path: list[str]) -> None:
    """Remove the tables along ``path`` that are empty, innermost first."""
    for depth in range(len(path), 0, -1):
        parent: Any = data
        for part in path[: depth - 1]:
            parent = parent.get(part, {})
        if isinstance(parent, dict) and parent.get(path[depth - 1]) == {}:
            del parent[path[depth - 1]]


def _table_body(lines: list[str], path: list[str]) -> tuple[int, int] | None:
    """Lines ``[start, end)`` of the body of table ``path`` (after its header, up to the next
    header); ``None`` when no header names it."""
    inside = _inside_strings(lines)
    start = None
    for number, line in enumerate(lines):
        match = None if inside[number] else _HEADER.match(line)
        if match is None:
            continue
        if start is not None:
            return start, number
        if _split_key(match.group("key")) == path:
            start = number + 1
    return None if start is None else (start, len(lines))


def _without_keys(body: list[str], keys: set[str]) -> list[str]:
    """``body`` without the assignments to ``keys`` (each with all the lines of its value)."""
    kept: list[str] = []
    index = 0
    while index < len(body):
        match = _ASSIGNMENT.match(body[index])
        if match is None or _split_key(match.group("key")) not in [[key] for key in keys]:
            kept.append(body[index])
            index += 1
            continue
        end = index + 1
        while end <= len(body) and not _parses(body[index:end]):
            end += 1
        index = end
    return kept


def _parses(lines: list[str]) -> bool:
    try:
        tomllib.loads("".join(lines))
    except tomllib.TOMLDecodeError:
        return False
    return True


def _inside_strings(lines: list[str]) -> list[bool]:
    """For each line, whether it begins inside a multi-line string (where a ``[`` at the
    start of a line is text, not a header)."""
    flags = []
    open_quote: str | None = None
    for line in lines:
        flags.append(open_quote is not None)
        position = 0
        while position < len(line):
            if open_quote is not None:
                found = line.find(open_quote, position)
                if found < 0:
                    break
                if open_quote == '"""' and _escaped(line, found):
                    position = found + 1
                    continue
                open_quote, position = None, found + 3
                continue
            char = line[position]
            if char == "#":
                break
            if line.startswith(('"""', "'''"), position):
                open_quote, position = line[position : position + 3], position + 3
            elif char == '"':
                position += 1
                while position < len(line) and line[position] != '"':
                    position += 2 if line[position] == "\\" else 1
                position += 1
            elif char == "'":
                closing = line.find("'", position + 1)
                position = closing + 1 if closing >= 0 else len(line)
            else:
                position += 1
    return flags


def _escaped(line: str, position: int) -> bool:
    backslashes = len(line[:position]) - len(line[:position].rstrip("\\"))
    return backslashes % 2 == 1


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
