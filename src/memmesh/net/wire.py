"""Strict JSON on the wire: typed msgspec structs, nothing a struct does not say.

Request bodies are decoded in two passes. The first (Python's json, on already-checked UTF-8)
refuses what msgspec would let through: duplicate keys, ``NaN``/``Infinity``, numbers that
overflow to infinity, nesting deeper than :data:`MAX_DEPTH`; numbers are checked after parsing,
and only a body that fails is parsed again, number by number, to name its first fault. The second
decodes into the route's struct in strict mode with unknown fields forbidden and bounded strings
and lists, and a failure names the field.
"""

import json
import math
from typing import Any, TypeVar

import msgspec

from memmesh.net.errors import BadRequest

__all__ = [
    "MAX_BATCH",
    "MAX_DEPTH",
    "PROTOCOL_VERSION",
    "Health",
    "Request",
    "decode_request",
    "encode",
]

PROTOCOL_VERSION = "1"
MAX_DEPTH = 32
MAX_BATCH = 256  # the most envelopes or item ids one request carries


class Request(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base of request structs: strict, and no field it does not name."""


class Health(msgspec.Struct, frozen=True, kw_only=True):
    """``GET /healthz``: alive (no token needed)."""

    status: str = "ok"


T = TypeVar("T")

_encoder = msgspec.json.Encoder()


def encode(value: Any) -> bytes:
    """JSON bytes of a struct (or builtins)."""
    return _encoder.encode(value)


def decode_request(body: bytes, kind: type[T]) -> T:
    """``body`` as a ``kind``, or :class:`BadRequest` saying what and where."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"the body is not valid UTF-8 (byte {exc.start})") from None
    if not _plain(text):
        _refuse(text)
    try:
        return msgspec.json.decode(body, type=kind, strict=True)
    except msgspec.ValidationError as exc:
        raise BadRequest(str(exc)) from None
    except msgspec.DecodeError as exc:
        raise BadRequest(f"the body is not valid: {exc}") from None


def _plain(text: str) -> bool:
    """Whether ``text`` is JSON that the first pass lets through, checked the quick way.

    Numbers are parsed by json's own C code and checked afterwards, instead of by a Python
    call per number (a search's vector holds hundreds). On ``False``, :func:`_refuse` says why.
    """
    try:
        tree = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except (BadRequest, ValueError, RecursionError):  # JSONDecodeError is a ValueError
        return False
    # Each node sits one level below its container, as in _depth; scalars count as nodes.
    stack: list[tuple[Any, int]] = [(tree, 1)] if isinstance(tree, dict | list) else []
    while stack:
        node, level = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if children and level >= MAX_DEPTH:
            return False
        for child in children:
            if isinstance(child, float):
                if not math.isfinite(child):
                    return False
            elif isinstance(child, dict | list):
                stack.append((child, level + 1))
    return not (isinstance(tree, float) and not math.isfinite(tree))


def _refuse(text: str) -> None:
    """Raise the :class:`BadRequest` that says what is wrong with ``text``, first fault first."""
    try:
        tree = json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_constant=_no_constant,
            parse_float=_finite_float,
        )
    except json.JSONDecodeError as exc:
        raise BadRequest(f"the body is not JSON: {exc.msg} (line {exc.lineno})") from None
    except RecursionError:
        raise BadRequest(f"the body nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # e.g. an integer longer than Python converts (4,300 digits)
        raise BadRequest(f"the body has a value out of range: {str(exc)[:120]}") from None
    if _depth(tree) > MAX_DEPTH:
        raise BadRequest(f"the body nests deeper than {MAX_DEPTH} levels")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise BadRequest(f"duplicate key {key!r} in the body")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise BadRequest(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadRequest(f"the number {text[:20]} is out of range")
    return value


def _depth(value: Any) -> int:
    """Nesting depth of decoded JSON, without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        if level > MAX_DEPTH:
            return level
        if isinstance(node, dict):
            stack.extend((child, level + 1) for child in node.values())
        elif isinstance(node, list):
            stack.extend((child, level + 1) for child in node)
    return deepest
