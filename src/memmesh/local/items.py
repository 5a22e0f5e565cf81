"""The item: one remembered fact, decision, gotcha or command, and the rules for its fields.

:class:`Item` itself is a msgspec struct, defined in :mod:`memmesh.local._item` and imported
from here when first asked for: the rules are what the prompt hook's client needs, and it
starts without msgspec (about 17 ms of every prompt; docs/benchmarks.md).
"""

import os
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, get_args

from memmesh.local.errors import InvalidInput

if TYPE_CHECKING:
    from memmesh.local._item import Item

__all__ = [
    "GLOBAL",
    "KINDS",
    "MAX_K",
    "MAX_TAGS",
    "MAX_TEXT_BYTES",
    "STATUSES",
    "Item",
    "Kind",
    "Status",
    "check_copy",
    "check_kind",
    "check_name",
    "check_query",
    "check_tags",
    "check_text",
    "default_author",
    "in_force",
    "in_force_sql",
    "suggested_name",
]

Kind = Literal["decision", "convention", "gotcha", "command", "incident", "preference", "fact"]
Status = Literal["active", "archived", "superseded"]
KINDS: tuple[str, ...] = get_args(Kind)
STATUSES: tuple[str, ...] = get_args(Status)

GLOBAL = "global"
MAX_TEXT_BYTES = 8 * 1024
MAX_TAGS = 16
MAX_K = 100  # the most hits one recall returns
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def iso(timestamp: float) -> str:
    """Unix seconds as an ISO 8601 UTC string with second precision."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


def in_force(valid_from: float | None, valid_until: float | None, at: float) -> bool:
    """Whether an item holding from ``valid_from`` until ``valid_until`` (either open:
    ``None``) holds at ``at`` (memmesh.local.validity)."""
    return (valid_from is None or valid_from <= at) and (valid_until is None or at < valid_until)


def in_force_sql(at: str) -> str:
    """:func:`in_force` as an SQL condition on ``items``, ``at`` the parameter of the moment
    (``?``, ``?1``)."""
    return (
        f"(valid_from IS NULL OR valid_from <= {at}) "
        f"AND (valid_until IS NULL OR valid_until > {at})"
    )


def check_query(query: str, k: int) -> str:
    """The query, stripped, or :class:`InvalidInput` when it is empty or over 8 KiB, or ``k``
    is not between 1 and :data:`MAX_K`: what every recall, local or team, refuses."""
    clean = query.strip()
    if not clean:
        raise InvalidInput("the query is empty")
    if len(clean.encode("utf-8", errors="surrogatepass")) > MAX_TEXT_BYTES:
        raise InvalidInput(f"the query is longer than {MAX_TEXT_BYTES} bytes")
    if not 1 <= k <= MAX_K:
        raise InvalidInput(f"k must be between 1 and {MAX_K}, not {k}")
    return clean


def check_text(text: str) -> str:
    """The text, stripped, or :class:`InvalidInput` when empty or over 8 KiB."""
    stripped = text.strip()
    if not stripped:
        raise InvalidInput("text is empty; give the fact to remember")
    size = len(stripped.encode("utf-8", errors="surrogatepass"))
    if size > MAX_TEXT_BYTES:
        raise InvalidInput(
            f"text is {size} bytes; the limit is {MAX_TEXT_BYTES} bytes (8 KiB): "
            "remember one fact at a time"
        )
    if "\x00" in stripped:
        raise InvalidInput("text contains a NUL character")
    try:
        stripped.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("text is not valid Unicode (it contains lone surrogates)") from None
    return stripped


def check_copy(
    text: str, kind: str, project: str, tags: list[str] | tuple[str, ...]
) -> tuple[str, Kind, str, tuple[str, ...]]:
    """The checked text, kind, project and tags of a copy of someone's item (see
    :meth:`~memmesh.local.store.Store.put`), or :class:`InvalidInput`."""
    return check_text(text), check_kind(kind), check_name(project, "project"), check_tags(tags)


def check_kind(kind: str) -> Kind:
    """``kind`` if it is one of :data:`KINDS`."""
    if kind not in KINDS:
        raise InvalidInput(f"unknown kind {kind!r}; choose one of: {', '.join(KINDS)}")
    return kind  # type: ignore[return-value]


def check_name(value: str, what: str) -> str:
    """A project or tag name: 1-64 letters, digits, dot, dash or underscore."""
    if not _NAME.fullmatch(value):
        raise InvalidInput(
            f"{what} {value!r} is not a valid name "
            "(1-64 letters, digits, '.', '-' or '_', starting with a letter or digit)"
        )
    return value


def suggested_name(value: str) -> str:
    """A name the rule of :func:`check_name` takes, made from ``value`` by joining its words
    with '-' ("Ada Lovelace" -> "Ada-Lovelace"), or ``""`` when that is no name either."""
    joined = re.sub(r"[^A-Za-z0-9._-]+", "-", value).strip("-._")[:64]
    return joined if _NAME.fullmatch(joined) else ""


def check_tags(tags: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Validated, de-duplicated, lower-cased tags in their given order."""
    if len(tags) > MAX_TAGS:
        raise InvalidInput(f"{len(tags)} tags given; at most {MAX_TAGS} are allowed")
    seen: dict[str, None] = {}
    for tag in tags:
        seen[check_name(tag, "tag").lower()] = None
    return tuple(seen)


def default_author() -> str:
    """The author name for new items: ``MEM_AUTHOR``, else the login name."""
    name = os.environ.get("MEM_AUTHOR") or _login_name()
    return re.sub(r"[^A-Za-z0-9._-]", "-", name)[:64] or "me"


def _login_name() -> str:
    import getpass  # here: only a command that writes an item asks for the login name

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "me"


def __getattr__(name: str) -> Any:
    if name == "Item":
        from memmesh.local._item import Item

        return Item
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
