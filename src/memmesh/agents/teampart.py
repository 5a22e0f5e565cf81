"""The team's part of what the hooks show: how fresh the cache is, starting its refresh in
the background, and the lines naming each teammate's item with its author.

A hook never waits for the network. When the cache is older than
:func:`~memmesh.agents.freshness.refresh_after` (or was never filled) and this member has a
team.yaml, the hook starts `mem team cache refresh` as a detached process and answers from the
cache as it is; the refresh's lock keeps a second one from running, and after a failed attempt
the next waits :data:`RETRY_S` (:mod:`memmesh.agents.freshness` has the numbers). When what the
hook shows is older than :data:`TTL_S`, or the last refresh failed, it says how old it is; once
the coordinator has not confirmed it for the offline bound, it says the items are withheld.

An item that another author's item among those shown contradicts
(:func:`memmesh.team.contradictions.otherwise`) names them: ``bob says otherwise: ...`` (``you
say otherwise`` for the member's own), their text cut to :data:`FLAG_CHARS`
(:func:`otherwise_line`).
"""

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memmesh._processes import start_detached
from memmesh.agents.freshness import RETRY_S, WITHHELD, refresh_after
from memmesh.local.teamcache import CachedItem, CacheState, refresh_running, withheld
from memmesh.text import audience_label, inert, printable

if TYPE_CHECKING:
    from memmesh.team.contradictions import Otherwise

__all__ = [
    "FLAG_CHARS",
    "RETRY_S",
    "TTL_S",
    "age_note",
    "author_line",
    "byline",
    "needs_refresh",
    "otherwise_line",
    "start_refresh",
]

# What the team's lines may be older than before the hooks say how old they are.
TTL_S = 600.0
MAX_ITEM_CHARS = 150
# Characters of a contradicting item's text a hook shows at most.
FLAG_CHARS = 100


def needs_refresh(home: Path, state: CacheState, *, now: float | None = None) -> bool:
    """Whether a hook should start a refresh: a team.yaml is there, the cache is older than
    :func:`~memmesh.agents.freshness.refresh_after`, no attempt failed in the last
    :data:`RETRY_S`, and none is running."""
    moment = time.time() if now is None else now
    if not (home / "team.yaml").is_file():
        return False
    if state.refreshed_at is not None and moment - state.refreshed_at < refresh_after():
        return False
    failed = bool(state.problem) and state.tried_at is not None
    if failed and state.tried_at is not None and moment - state.tried_at < RETRY_S:
        return False
    return not refresh_running(home)


def start_refresh(home: Path) -> None:
    """Start `mem team cache refresh` for ``home`` in a process of its own session, detached
    from the hook's standard streams, and return at once. Raises ``OSError``."""
    start_detached(home, "team", "cache", "refresh", "--background", env={"MEM_HOOK_REFRESH": "1"})


def age_note(state: CacheState, *, now: float | None = None) -> str:
    """What the team's lines say of their age: nothing while the cache is fresh, else how old
    it is (and that the coordinator did not answer, when the last refresh failed); that they
    are withheld once the coordinator has not confirmed them for the offline bound."""
    moment = time.time() if now is None else now
    failed = bool(state.problem) and state.tried_at is not None
    if state.refreshed_at is None:
        return ""
    age = moment - state.refreshed_at
    if withheld(state, now=moment):
        since = _ago(age).removesuffix(" ago")
        return f"{WITHHELD} (not confirmed by the coordinator for {since})"
    if age < TTL_S and not failed:
        return ""
    note = f"as of {_ago(age)}"
    return f"{note}; the coordinator was not reachable" if failed else note


def author_line(item: CachedItem, *, limit: int = MAX_ITEM_CHARS) -> str:
    """``- [kind] author: text``, the text on one line and cut to ``limit`` characters (what a
    teammate wrote is shown harmlessly: control characters as escapes, tags made inert); the
    author ``bob (for backend)`` for an item published for some of the team (:func:`byline`)."""
    from memmesh.agents.brief import one_line

    text = printable(inert(one_line(item.text, limit)))
    return f"- [{printable(inert(item.kind))}] {printable(inert(byline(item)))}: {text}"


def byline(item: CachedItem) -> str:
    """Who wrote a teammate's item as the hooks name them: ``bob``, or ``bob (for backend,
    carol)`` when it was published for some of the team only."""
    label = audience_label(item.audience)
    return f"{item.author} ({label})" if label else item.author


def otherwise_line(said: "Sequence[Otherwise]", *, limit: int = FLAG_CHARS) -> str:
    """``bob says otherwise: text`` for the first of ``said`` (``you say otherwise: ...``
    when it is the member's own, whose ``key_id`` is empty), ``(and 2 more)`` for the rest;
    the text on one line, cut to ``limit`` characters, a teammate's words shown harmlessly.
    Empty when ``said`` is."""
    from memmesh.agents.brief import one_line

    if not said:
        return ""
    first, more = said[0], len(said) - 1
    text = printable(one_line(first.text, limit))
    if first.key_id:
        line = f"{printable(inert(first.author))} says otherwise: {inert(text)}"
    else:
        line = f"you say otherwise: {text}"
    return line + (f" (and {more} more)" if more else "")


def _ago(seconds: float) -> str:
    if seconds < 120:
        return "a minute ago"
    if seconds < 2 * 3600:
        return f"{round(seconds / 60)} min ago"
    if seconds < 2 * 86400:
        return f"{round(seconds / 3600)} h ago"
    return f"{round(seconds / 86400)} days ago"
