"""team.yaml's YAML, read with fixed limits so that a hostile file costs little.

A team.yaml holds a few dozen values; these limits are far above that and far below harm:

* :data:`MAX_BYTES` (64 KiB): a larger file is refused before it is parsed.
* :data:`MAX_DEPTH` (32 levels, the top-level mapping being the first): deeper nesting is
  refused while it is parsed, before anything recurses; so is an alias that contains itself.
* :data:`MAX_VALUES` (10,000): every value counts, each time an alias repeats it, so an alias
  bomb (the "billion laughs") is refused after 10,000 values whatever it would expand to.

Aliases and anchors themselves work. Refused outright, each naming its line: tags other than
YAML's core ones (``!!str``, ``!!int``, ``!!float``, ``!!bool``, ``!!null``, ``!!seq``,
``!!map``), so nothing like ``!!python/object`` is ever constructed; merge keys (``<<``); keys
that are not text (or longer than a project's name, 64 characters); duplicate keys; numbers
too long to convert. Text that YAML would read as a
date is read as text. The limits are not settings: a team.yaml that reaches one is not one.
"""

import re
from typing import Any

import yaml

from memmesh.policy.errors import PolicyInvalid

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_KEY", "MAX_VALUES", "check_size", "dotted", "read_yaml"]

MAX_BYTES = 64 * 1024
MAX_DEPTH = 32
MAX_VALUES = 10_000
MAX_KEY = 64  # characters: the longest key team.yaml has is a project's name

_CORE = "tag:yaml.org,2002:"
_SCALAR_TAGS = {f"{_CORE}{name}" for name in ("str", "int", "float", "bool", "null")}
# Tags the resolver gives plain text that is none of the above: read as the text itself.
_AS_TEXT = {f"{_CORE}timestamp", f"{_CORE}value", f"{_CORE}merge"}
_MAP = f"{_CORE}map"
_SEQ = f"{_CORE}seq"


def check_size(size: int, path: str) -> None:
    """Refuse a file of ``size`` bytes over :data:`MAX_BYTES`."""
    if size > MAX_BYTES:
        raise PolicyInvalid(
            path, None, "(file)", f"it is {size:,} bytes; a team.yaml may be at most 64 KiB"
        )


def read_yaml(source: str, path: str) -> tuple[Any, dict[str, int]]:
    """The plain values of ``source`` (dicts, lists, text, numbers, booleans, ``None``), and
    the 1-based line of every key path (``$.share.kinds[1]``); raises :class:`PolicyInvalid`."""
    if len(source) > MAX_BYTES:
        check_size(len(source), path)
    check_size(len(source.encode("utf-8", errors="surrogatepass")), path)
    try:
        loader = _Loader(source, path)
    except yaml.YAMLError as exc:  # the reader refuses control characters at once
        raise _broken(exc, source, path) from None
    try:
        node = loader.get_single_node()
        lines: dict[str, int] = {}
        data = {} if node is None else _Plain(loader, lines, path).value(node, "$", 1)
    except yaml.YAMLError as exc:
        raise _broken(exc, source, path) from None
    finally:
        loader.dispose()
    return data, lines


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing depth while it composes (before it recurses)."""

    def __init__(self, source: str, path: str) -> None:
        super().__init__(source)
        self._path = path
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self._depth >= MAX_DEPTH:
            event: yaml.Event = self.peek_event()  # type: ignore[no-untyped-call]
            mark = event.start_mark
            raise _too_deep(self._path, mark.line + 1 if mark is not None else None)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


class _Plain:
    """Python values from composed nodes, counting every value an alias repeats."""

    def __init__(self, loader: _Loader, lines: dict[str, int], path: str) -> None:
        self._loader = loader
        self._lines = lines
        self._path = path
        self._values = 0

    def value(self, node: yaml.Node, key: str, depth: int) -> Any:
        line = node.start_mark.line + 1
        if depth > MAX_DEPTH:  # only an alias can reach here: it contains itself
            raise _too_deep(self._path, line, alias=True)
        self._values += 1
        if self._values > MAX_VALUES:
            problem = (
                f"it holds more than {MAX_VALUES:,} values (counting each value an alias "
                "repeats); a team.yaml needs far fewer"
            )
            raise PolicyInvalid(self._path, line, "(yaml)", problem)
        self._lines[key] = line
        if isinstance(node, yaml.MappingNode):
            self._check_tag(node, {_MAP}, key)
            return self._mapping(node, key, depth)
        if isinstance(node, yaml.SequenceNode):
            self._check_tag(node, {_SEQ}, key)
            return [self.value(item, f"{key}[{i}]", depth + 1) for i, item in enumerate(node.value)]
        assert isinstance(node, yaml.ScalarNode)
        return self._scalar(node, key)

    def _check_tag(self, node: yaml.Node, allowed: set[str], key: str) -> None:
        """Refuse a tag outside YAML's core ones: nothing else is ever constructed."""
        if node.tag not in allowed:
            problem = f"the tag {_shown(node.tag)} is not supported; write plain values"
            raise PolicyInvalid(self._path, node.start_mark.line + 1, dotted(key), problem)

    def _mapping(self, node: yaml.MappingNode, key: str, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if key_node.tag == f"{_CORE}merge":
                problem = "merge keys (<<) are not supported; write the keys out"
                raise PolicyInvalid(self._path, line, dotted(key), problem)
            name = self._scalar(key_node, key) if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(name, str):
                raise PolicyInvalid(self._path, line, dotted(key), "keys must be text")
            if len(name) > MAX_KEY:
                problem = f"a key of {len(name):,} characters; keys are at most {MAX_KEY}"
                raise PolicyInvalid(self._path, line, dotted(key), problem)
            child = f"{key}.{name}"
            if name in out:
                raise PolicyInvalid(self._path, line, dotted(child), "duplicate key")
            self._lines[child] = line
            out[name] = self.value(value_node, child, depth + 1)
            self._lines[child] = line
        return out

    def _scalar(self, node: yaml.ScalarNode, key: str) -> Any:
        if node.tag in _AS_TEXT:
            return node.value
        self._check_tag(node, _SCALAR_TAGS, key)
        line = node.start_mark.line + 1
        try:
            value = self._loader.construct_object(node)
        except (yaml.YAMLError, ValueError, KeyError, OverflowError) as exc:
            problem = f"{node.value[:40]!r} cannot be read as {_shown(node.tag)}"
            if "digits" in str(exc):
                problem = f"the number is too long ({len(node.value):,} digits)"
            raise PolicyInvalid(self._path, line, dotted(key), problem) from None
        if isinstance(value, int) and value.bit_length() > 64:
            problem = f"the number is too long ({len(node.value):,} characters)"
            raise PolicyInvalid(self._path, line, dotted(key), problem)
        return value


def _too_deep(path: str, line: int | None, *, alias: bool = False) -> PolicyInvalid:
    problem = f"nested deeper than {MAX_DEPTH} levels" + (
        " (an alias that contains itself?)" if alias else "; a team.yaml needs a few"
    )
    return PolicyInvalid(path, line, "(yaml)", problem)


def _broken(exc: yaml.YAMLError, source: str, path: str) -> PolicyInvalid:
    """Broken YAML as PolicyInvalid: PyYAML's problem on one line, at its line."""
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None) or ""
    if "duplicate anchor" in context:
        problem = context.partition(";")[0]
    if isinstance(exc, yaml.reader.ReaderError):
        line = source.count("\n", 0, exc.position) + 1
        problem = f"unacceptable character #x{exc.character:04x}: {exc.reason}"
    return PolicyInvalid(path, line, "(yaml)", "broken YAML: " + " ".join(problem.split()))


def _shown(tag: str) -> str:
    """``tag:yaml.org,2002:int`` as a user writes it: ``!!int``."""
    return "!!" + tag.removeprefix(_CORE) if tag.startswith(_CORE) else tag


def dotted(key: str) -> str:
    """``$.share.kinds[1]`` as a user reads it: ``share.kinds[1]``."""
    return re.sub(r"^\$\.?", "", key) or "(top level)"
