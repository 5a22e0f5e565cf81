"""Set a few keys of ``team.yaml`` and leave every other line as its user wrote it.

`mem team join` writes the team, the member's name and the coordinator's URL, pin and key into
a team.yaml that may hold the user's own settings and comments. The edit works on lines, not on
a re-dumped document: a key's value is replaced where it stands (a trailing comment stays), a
missing key takes the place of its commented-out example (``# coordinator_pin: ...``, as the
template has them) or is added at the end. Every edit is checked by reading the result back:
it must be the original policy with exactly those keys changed, or
:class:`~memmesh.policy.errors.PolicyNotEditable` is raised and nothing comes of it.
"""

import json
import re
from collections.abc import Mapping
from itertools import pairwise
from typing import Any

import msgspec
import yaml

from memmesh.policy.config import POLICY_FILENAME, parse_policy
from memmesh.policy.errors import PolicyInvalid, PolicyNotEditable

__all__ = ["update_policy"]

# One edit: replace text[start:end] with the replacement.
_Edit = tuple[int, int, str]


def update_policy(text: str, values: Mapping[str, str | None], path: str = POLICY_FILENAME) -> str:
    """``text`` with each key of ``values`` set: a top-level key (``coordinator``) or one level
    down (``identity.name``). ``None`` writes ``null``, or adds nothing for an absent key.

    Raises :class:`PolicyInvalid` when ``text`` is not a valid policy to begin with, and
    :class:`PolicyNotEditable` when the keys cannot be set in place. ``path`` is only used in
    error messages.
    """
    edited = _checked(text, values, path)
    if edited is None:
        stuck = [key for key in values if _checked(text, {key: values[key]}, path) is None]
        raise PolicyNotEditable(path, sorted(stuck or values))
    return edited


def _checked(text: str, values: Mapping[str, str | None], path: str) -> str | None:
    """The edited text if it reads back as the policy with just these values changed (trying
    commented-out examples first), else ``None``; :class:`PolicyInvalid` for a bad ``text``."""
    expected = _expected(msgspec.to_builtins(parse_policy(text, path)), values)
    for prefer_examples in (True, False):
        edited = _edited(text, values, prefer_examples=prefer_examples)
        if edited is not None and _reads_as(edited, path) == expected:
            return edited
    return None


def _expected(policy: dict[str, Any], values: Mapping[str, str | None]) -> dict[str, Any]:
    """The policy as builtins after the edit."""
    for dotted, value in values.items():
        parent, _, child = dotted.rpartition(".")
        if not parent:
            policy[child] = value
        elif isinstance(policy.get(parent), dict):
            policy[parent] = {**policy[parent], child: value}
        else:
            policy[parent] = {child: value}
    return policy


def _reads_as(text: str, path: str) -> dict[str, Any] | None:
    try:
        return msgspec.to_builtins(parse_policy(text, path))  # type: ignore[no-any-return]
    except PolicyInvalid:
        return None


def _edited(text: str, values: Mapping[str, str | None], *, prefer_examples: bool) -> str | None:
    """``text`` with the edits made, or ``None`` when some key cannot be set in place."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    top = _mapping(root) if root is not None else {}
    if top is None:
        return None
    edits: list[_Edit] = []
    appended: dict[str, list[str]] = {}  # parent ("" = top level) -> its new lines
    for dotted, value in values.items():
        parent, _, key = dotted.rpartition(".")
        written = _scalar(value)
        if not parent:
            if key not in top and value is None:
                continue  # absent is already null
            edit = _set(top, key, written, text, prefer_examples)
            if edit is None:
                appended.setdefault("", []).append(f"{key}: {written}")
            else:
                edits.append(edit)
            continue
        if parent not in top:
            appended.setdefault(parent, []).append(f"  {key}: {written}")
            continue
        node = top[parent]
        children = _mapping(node)
        if children is not None and key in children:
            edits.append(_replaced(children[key], written))
        elif isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null"):
            edits.append(_replaced(node, f"{{{key}: {written}}}"))
        else:
            return None
    if any(edit[2] == "" for edit in edits) or _overlap(edits):
        return None  # a block scalar, or two keys sharing one node (an alias)
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return _appended(text, appended)


def _mapping(node: yaml.Node) -> dict[str, yaml.Node] | None:
    """The nodes of a mapping's values by key, or ``None`` when ``node`` is no mapping."""
    if not isinstance(node, yaml.MappingNode):
        return None
    return {str(key.value): value for key, value in node.value}


def _set(
    top: dict[str, yaml.Node], key: str, written: str, text: str, prefer_examples: bool
) -> _Edit | None:
    """The edit setting top-level ``key``: its value replaced, or its commented-out example
    line replaced (when asked); ``None`` when it must be appended."""
    if key in top:
        return _replaced(top[key], written)
    if not prefer_examples:
        return None
    example = re.search(rf"^#[ \t]*{re.escape(key)}:[^\r\n]*", text, re.MULTILINE)
    if example is None:
        return None
    return example.start(), example.end(), f"{key}: {written}"


def _replaced(node: yaml.Node, written: str) -> _Edit:
    """The edit replacing a scalar's text (an empty value gets a space before the new one);
    an empty replacement marks a node that cannot be replaced."""
    if not isinstance(node, yaml.ScalarNode) or node.style in ("|", ">"):
        return node.start_mark.index, node.end_mark.index, ""
    start, end = node.start_mark.index, node.end_mark.index
    return start, end, written if end > start else " " + written


def _overlap(edits: list[_Edit]) -> bool:
    spans = sorted((start, end) for start, end, _ in edits)
    return any(later[0] < earlier[1] or later == earlier for earlier, later in pairwise(spans))


def _scalar(value: str | None) -> str:
    """``value`` as one YAML scalar: JSON strings are YAML double-quoted strings."""
    return "null" if value is None else json.dumps(value, ensure_ascii=False)


def _appended(text: str, appended: dict[str, list[str]]) -> str:
    """``text`` with new keys at its end (a parent's first)."""
    if not appended:
        return text
    newline = "\r\n" if "\r\n" in text else "\n"
    lines: list[str] = []
    for parent, children in appended.items():
        lines += ([f"{parent}:"] if parent else []) + children
    body = text if not text or text.endswith("\n") else text + newline
    return body + newline.join(lines) + newline
