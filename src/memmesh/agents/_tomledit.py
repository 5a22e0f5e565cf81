"""Set or remove one table of a TOML document and leave every other byte where it was.

Codex keeps its MCP servers in ``config.toml``. The document is read with tomlkit, which keeps
comments, blank lines and the way each value is written, and only the table at hand is edited:
in its own place when it has a ``[header]``, else appended at the end. Every edit is checked by
parsing the result with :mod:`tomllib`: it must equal the original with exactly that table
changed, or :class:`~memmesh.agents._jsonedit.EditError` is raised and nothing comes of it.
"""

import copy
import tomllib
from typing import Any

import tomlkit
from tomlkit.container import Container
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import InlineTable, Item, Table
from tomlkit.toml_document import TOMLDocument

from memmesh.agents._jsonedit import EditError

__all__ = ["load_table", "remove_table", "set_table"]


def load_table(text: str) -> dict[str, Any]:
    """The document as a dict; :class:`EditError` when it is not valid TOML."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise EditError(f"not valid TOML ({exc})") from None


def set_table(text: str, path: list[str], values: dict[str, Any]) -> str:
    """``text`` with ``values`` set in the table at ``path``.

    The table's other keys and its sub-tables (a user's ``env``, say) keep their lines; the
    lines of the keys in ``values`` are replaced by lines at the top of the table. A missing
    table, or one known only through its sub-tables (``[a.b.env]``), gets a header of its own
    at the end. Raises :class:`EditError` when the table is written inline or with dotted keys.
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
    document = _parse(text)
    tables = _tables(document, path)
    headed = next((table for table in tables if not table.is_super_table()), None)
    if headed is not None:
        _put_first(headed, values, newline)
        new = document.as_string()
    elif current is not None and not tables:
        raise _not_touched(path)
    else:
        new = _with_table_appended(text, path, values, newline)
    return _checked(new, expected)


def remove_table(text: str, path: list[str]) -> str:
    """``text`` without the table at ``path`` and its sub-tables (unchanged when it has none).

    The blank lines and comments leading into the next table stay. Raises :class:`EditError`
    when the table is written inline or with dotted keys.
    """
    expected = copy.deepcopy(load_table(text))
    parent: Any = expected
    for part in path[:-1]:
        parent = parent.get(part) if isinstance(parent, dict) else None
    if not isinstance(parent, dict) or path[-1] not in parent:
        return text
    del parent[path[-1]]
    document = _parse(text)
    if not _tables(document, path):
        raise _not_touched(path)
    node: Any = document
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    # A parent left empty ([mcp_servers] with nothing else) may vanish with the table.
    pruned = copy.deepcopy(expected)
    _prune(pruned, path[:-1])
    return _checked(_kept_lines(text, document.as_string()), expected, pruned)


def _parse(text: str) -> TOMLDocument:
    try:
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        raise EditError(f"not valid TOML ({exc})") from None


def _tables(container: Container, path: list[str]) -> list[Table]:
    """The parts of the table at ``path`` written under ``[headers]``: its own, or the implicit
    parents of its sub-tables' (a table written out of order has several); none when the table
    is written inline or with dotted keys."""
    found: list[Table] = []
    for key, item in container.body:
        if key is None or key.is_dotted() or key.key != path[0] or not isinstance(item, Table):
            continue
        found.extend([item] if len(path) == 1 else _tables(item.value, path[1:]))
    return found


def _put_first(table: Table, values: dict[str, Any], newline: str) -> None:
    """Set ``values`` as the first lines of ``table``; the lines they had go."""
    for key in values:
        if key in table:
            del table[key]
    for position, (key, value) in enumerate(values.items()):
        if position < len(table.value.body):
            # memmesh's keys go first; tomlkit's public append would put them after the
            # table's last value, and it has no public insert.
            table.value._insert_at(position, key, _item(value, newline))
        else:
            table.append(key, _item(value, newline))


def _with_table_appended(text: str, path: list[str], values: dict[str, Any], newline: str) -> str:
    """``text`` with the table at ``path`` written at its end, one blank line apart."""
    table = tomlkit.table()
    for key, value in values.items():
        table.append(key, _item(value, "\n"))
    node: Item = table
    for key in reversed(path[1:]):
        # Implicit parents, so that only the header ``[a.b]`` is written.
        parent = tomlkit.table(is_super_table=True)
        parent.append(key, node)
        node = parent
    fresh = tomlkit.document()
    fresh.append(path[0], node)
    body = text if not text or text.endswith("\n") else text + newline
    # Only the fresh text's own line ends: its strings are escaped onto one line each.
    rendered = fresh.as_string().replace("\n", newline)
    return body + (newline if body.strip() else "") + rendered


def _item(value: Any, newline: str) -> Item:
    """``value`` as one line of TOML: a table becomes an inline table."""
    if isinstance(value, dict):
        inline: InlineTable = tomlkit.inline_table()
        inline.update(value)
        item: Item = inline
    else:
        item = tomlkit.item(value)
    item.trivia.trail = newline
    return item


def _kept_lines(before: str, after: str) -> str:
    """``before`` without the lines tomlkit's removal took out of it (``after``), except the
    blank lines and comments that lead into the next table, which tomlkit counts as the
    removed table's own; with each run a blank line that set the table apart goes too."""
    lines, kept = before.splitlines(keepends=True), after.splitlines(keepends=True)
    removed: list[int] = []
    matched = 0
    for number, line in enumerate(lines):
        if matched < len(kept) and line == kept[matched]:
            matched += 1
        else:
            removed.append(number)
    if matched < len(kept):
        raise EditError("the edit did not come out as intended")
    drop: set[int] = set()
    for start, end in _runs(removed):
        while end > start + 1 and _is_blank_or_comment(lines[end - 1]):
            end -= 1
        following = lines[end] if end < len(lines) else ""
        if start > 0 and not lines[start - 1].strip() and not following.strip():
            start -= 1
        drop.update(range(start, end))
    return "".join(line for number, line in enumerate(lines) if number not in drop)


def _runs(numbers: list[int]) -> list[tuple[int, int]]:
    """Ascending ``numbers`` as runs ``[start, end)`` of consecutive ones."""
    runs: list[tuple[int, int]] = []
    for number in numbers:
        if runs and runs[-1][1] == number:
            runs[-1] = (runs[-1][0], number + 1)
        else:
            runs.append((number, number + 1))
    return runs


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


def _checked(new: str, *intended: dict[str, Any]) -> str:
    try:
        if tomllib.loads(new) not in intended:
            raise EditError("the edit did not come out as intended")
    except tomllib.TOMLDecodeError:
        raise EditError("the edit would not be valid TOML") from None
    return new


def _not_touched(path: list[str]) -> EditError:
    return EditError(
        f"{'.'.join(path)} is written in a form this edit does not touch "
        "(inline or dotted keys); change it by hand"
    )
