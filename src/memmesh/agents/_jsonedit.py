"""Edit one key of a JSON document and leave every other byte where it was.

Clients keep their configuration in hand-edited JSON files full of settings that are not ours.
Loading and dumping such a file would re-indent, re-escape and reorder what we have no business
touching, so these edits work on the text: the document is scanned for the byte spans of its
objects, arrays and members, and only the span of the member being set (or the place a new
member goes) is rewritten, in the file's own indentation.

Every edit is checked by parsing the result: it must equal the original document with exactly
the intended change, or :class:`EditError` is raised and nothing is written.
"""

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "EditError",
    "load_object",
    "remove_at",
    "remove_member",
    "set_member",
    "upsert_element",
]

_DECODER = json.JSONDecoder()
# Object keys, and list positions (only on the way to something that exists already).
Path = Sequence[str | int]
_SPACE = re.compile(r"[ \t\n\r]*")


class EditError(Exception):
    """The document is not plain JSON of the expected shape, or cannot be edited safely."""


@dataclass
class _Node:
    """A JSON value's span ``[start, end)``; objects and arrays list their children."""

    start: int
    end: int
    value: Any = None
    lead: int = -1  # where the member (its key) or the element begins
    members: list[tuple[str, "_Node"]] = field(default_factory=list)
    elements: list["_Node"] = field(default_factory=list)
    is_object: bool = False
    is_array: bool = False


def load_object(text: str) -> dict[str, Any]:
    """The document as a dict; :class:`EditError` unless it is one plain JSON object."""
    if not text.strip():
        return {}

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in pairs]
        repeated = sorted({key for key in keys if keys.count(key) > 1})
        if repeated:
            raise EditError(f"the key {repeated[0]!r} appears twice in one object")
        return dict(pairs)

    try:
        data = json.loads(text, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as exc:
        raise EditError(
            f"not plain JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    if not isinstance(data, dict):
        raise EditError("the document is not a JSON object")
    return data


def set_member(text: str, path: list[str], value: Any) -> str:
    """``text`` with the member at ``path`` set to ``value``, creating objects on the way."""
    data = load_object(text)
    expected = json.loads(json.dumps(data))
    _set_in(expected, path, value)
    if not text.strip():
        return _checked(json.dumps(expected, indent=2, ensure_ascii=False) + "\n", expected)
    editor = _Editor(text)
    return _checked(editor.set(editor.root, path, value), expected)


def upsert_element(text: str, path: Path, is_ours: Callable[[Any], bool], value: Any) -> str:
    """``text`` with ``value`` in the list at ``path``: it replaces the first element that
    ``is_ours`` (and drops any further ones), or is appended; the array is created if missing.
    """
    data = load_object(text)
    expected = json.loads(json.dumps(data))
    container = _get_in(expected, path)
    if container is None:
        _set_in(expected, _keys(path), [value])
    elif not isinstance(container, list):
        raise EditError(f"{'.'.join(map(str, path))} is not a list")
    else:
        ours = [i for i, element in enumerate(container) if is_ours(element)]
        if ours:
            container[ours[0]] = value
            for index in reversed(ours[1:]):
                del container[index]
        else:
            container.append(value)
    if not text.strip():
        return _checked(json.dumps(expected, indent=2, ensure_ascii=False) + "\n", expected)
    editor = _Editor(text)
    node = editor.find(path)
    if node is None:
        return _checked(editor.set(editor.root, _keys(path), [value]), expected)
    if not node.is_array:
        raise EditError(f"{'.'.join(map(str, path))} is not a list")
    ours_nodes = [element for element in node.elements if is_ours(element.value)]
    if not ours_nodes:
        return _checked(editor.append(node, value), expected)
    new = editor.replace(ours_nodes[0], value)
    extras = [i for i, element in enumerate(node.elements) if is_ours(element.value)][1:]
    for index in reversed(extras):
        new = _Editor(new).remove_element(path, index)
    return _checked(new, expected)


def remove_at(text: str, path: Path, index: int) -> str:
    """``text`` without the element at ``index`` of the list at ``path``."""
    expected = json.loads(json.dumps(load_object(text)))
    container = _get_in(expected, path)
    if not isinstance(container, list) or not 0 <= index < len(container):
        raise EditError(f"there is no element {index} to remove")
    del container[index]
    return _checked(_Editor(text).remove_element(path, index), expected)


def remove_member(text: str, path: list[str]) -> str:
    """``text`` without the member at ``path`` (unchanged when there is none)."""
    expected = json.loads(json.dumps(load_object(text)))
    parent = _get_in(expected, path[:-1]) if path[:-1] else expected
    if not isinstance(parent, dict) or path[-1] not in parent:
        return text
    del parent[path[-1]]
    editor = _Editor(text)
    obj = editor.find(path[:-1])
    assert obj is not None
    index = next(i for i, (name, _) in enumerate(obj.members) if name == path[-1])
    start, end = _removal(obj, [node for _, node in obj.members], index)
    return _checked(text[:start] + text[end:], expected)


def _keys(path: Path) -> list[str]:
    """A path that is to be created holds only object keys."""
    if any(isinstance(key, int) for key in path):
        raise EditError("a list to create cannot sit inside another list")
    return [str(key) for key in path]


def _checked(new: str, expected: dict[str, Any]) -> str:
    try:
        if json.loads(new) != expected:
            raise EditError("the edit did not come out as intended")
    except json.JSONDecodeError:
        raise EditError("the edit would not be valid JSON") from None
    return new


def _get_in(data: dict[str, Any], path: Path) -> Any:
    current: Any = data
    for key in path:
        if isinstance(key, int):
            if not isinstance(current, list) or not 0 <= key < len(current):
                raise EditError(f"there is no element {key} to edit")
            current = current[key]
            continue
        if not isinstance(current, dict):
            raise EditError(f"{key!r} would go inside a value that is not an object")
        if key not in current:
            return None
        current = current[key]
    return current


def _set_in(data: dict[str, Any], path: list[str], value: Any) -> None:
    current = data
    for key in path[:-1]:
        nxt = current.setdefault(key, {})
        if not isinstance(nxt, dict):
            raise EditError(f"{key!r} is not an object")
        current = nxt
    current[path[-1]] = value


class _Editor:
    """The scanned document and the text edits on it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.root = self._value(_skip(text, 0))
        self.unit = _indent_unit(text)
        self.newline = "\r\n" if "\r\n" in text else "\n"  # new lines end like the file's

    def find(self, path: Path) -> _Node | None:
        node = self.root
        for key in path:
            if isinstance(key, int):
                node = node.elements[key]
                continue
            if not node.is_object:
                raise EditError(f"{key!r} would go inside a value that is not an object")
            found = next((child for name, child in node.members if name == key), None)
            if found is None:
                return None
            node = found
        return node

    def set(self, obj: _Node, path: list[str], value: Any) -> str:
        """Set ``path`` under ``obj``: replace the deepest existing member or insert the rest."""
        key, rest = path[0], path[1:]
        child = next((node for name, node in obj.members if name == key), None)
        if child is None:
            for name in reversed(rest):
                value = {name: value}
            return self._insert_member(obj, key, value)
        if not rest:
            return self.replace(child, value)
        if not child.is_object:
            raise EditError(f"{key!r} is not an object")
        return self.set(child, rest, value)

    def replace(self, node: _Node, value: Any) -> str:
        rendered = self._render(value, self._line_indent(node.lead))
        return self.text[: node.start] + rendered + self.text[node.end :]

    def append(self, array: _Node, value: Any) -> str:
        if not array.elements:
            inner = self._line_indent(array.start) + self.unit
            return self._fill_empty(array, self._render(value, inner), inner)
        last = array.elements[-1]
        return self._after(last, self._render(value, self._line_indent(last.lead)))

    def remove_element(self, path: Path, index: int) -> str:
        """Drop the list element at ``index`` with the comma that separates it."""
        array = self.find(path)
        assert array is not None
        assert array.is_array
        start, end = _removal(array, array.elements, index)
        return self.text[:start] + self.text[end:]

    # -- internals -------------------------------------------------------------------------

    def _insert_member(self, obj: _Node, key: str, value: Any) -> str:
        name = json.dumps(key, ensure_ascii=False) + ": "
        if not obj.members:
            inner = self._line_indent(obj.start) + self.unit
            return self._fill_empty(obj, name + self._render(value, inner), inner)
        last = obj.members[-1][1]
        return self._after(last, name + self._render(value, self._line_indent(last.lead)))

    def _after(self, last: _Node, rendered: str) -> str:
        """Insert ``rendered`` as the next sibling of ``last``: on a line of its own like
        ``last``, or after it on the same line when the container is written on one line."""
        separator = (
            "," + self.newline + self._line_indent(last.lead)
            if self._starts_line(last.lead)
            else ", "
        )
        return self.text[: last.end] + separator + rendered + self.text[last.end :]

    def _starts_line(self, position: int) -> bool:
        line_start = self.text.rfind("\n", 0, position) + 1
        return not self.text[line_start:position].strip(" \t")

    def _fill_empty(self, container: _Node, rendered: str, inner: str) -> str:
        """Put the only child into ``{}`` or ``[]``, laid out like the rest of the file."""
        opening, closing = container.start + 1, container.end - 1
        if "\n" in self.text:
            body = (
                self.newline + inner + rendered + self.newline + self._line_indent(container.start)
            )
        else:
            body = rendered
        return self.text[:opening] + body + self.text[closing:]

    def _line_indent(self, position: int) -> str:
        """The leading whitespace of the line ``position`` is on."""
        line_start = self.text.rfind("\n", 0, position) + 1
        line = self.text[line_start:position]
        return line[: len(line) - len(line.lstrip(" \t"))]

    def _render(self, value: Any, indent: str) -> str:
        if "\n" not in self.text:
            return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
        rendered = json.dumps(value, ensure_ascii=False, indent=len(self.unit.expandtabs(8)))
        if self.unit == "\t":
            rendered = re.sub(r"(?m)^( {8})+", lambda m: "\t" * (len(m.group()) // 8), rendered)
        return rendered.replace("\n", self.newline + indent)

    def _value(self, position: int) -> _Node:
        char = self.text[position : position + 1]
        if char == "{":
            return self._object(position)
        if char == "[":
            return self._array(position)
        try:
            value, end = _DECODER.raw_decode(self.text, position)
        except json.JSONDecodeError as exc:
            raise EditError(f"not plain JSON ({exc.msg})") from None
        return _Node(position, end, value)

    def _object(self, start: int) -> _Node:
        node = _Node(start, start, {}, is_object=True)
        position = _skip(self.text, start + 1)
        if self.text[position : position + 1] == "}":
            node.end = position + 1
            return node
        while True:
            lead = position
            key, position = _DECODER.raw_decode(self.text, position)
            position = _skip(self.text, position)
            position = _skip(self.text, position + 1)  # the colon
            child = self._value(position)
            child.lead = lead
            node.members.append((key, child))
            node.value[key] = child.value
            position = _skip(self.text, child.end)
            if self.text[position] == "}":
                node.end = position + 1
                return node
            position = _skip(self.text, position + 1)  # the comma

    def _array(self, start: int) -> _Node:
        node = _Node(start, start, [], is_array=True)
        position = _skip(self.text, start + 1)
        if self.text[position : position + 1] == "]":
            node.end = position + 1
            return node
        while True:
            child = self._value(position)
            child.lead = position
            node.elements.append(child)
            node.value.append(child.value)
            position = _skip(self.text, child.end)
            if self.text[position] == "]":
                node.end = position + 1
                return node
            position = _skip(self.text, position + 1)


def _removal(container: _Node, children: list[_Node], index: int) -> tuple[int, int]:
    """The span to cut to remove ``children[index]`` with the separator that goes with it."""
    if index > 0:
        return children[index - 1].end, children[index].end
    if len(children) > 1:
        return children[0].lead, children[1].lead
    return container.start + 1, container.end - 1


def _skip(text: str, position: int) -> int:
    match = _SPACE.match(text, position)
    assert match is not None
    return match.end()


def _indent_unit(text: str) -> str:
    """The file's indentation step: the smallest leading whitespace of an indented line."""
    widths = [
        match.group(1)
        for match in re.finditer(r"(?m)^([ \t]+)\S", text)
        if match.group(1).strip(" \t") == ""
    ]
    if not widths:
        return "  "
    if any(w.startswith("\t") for w in widths):
        return "\t"
    return min(widths, key=len)
