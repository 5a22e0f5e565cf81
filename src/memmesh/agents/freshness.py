"""How fresh the hooks' view of the team is, and the numbers that bound it.

The hooks read the team cache (:mod:`memmesh.local.teamcache`) and never wait on the network;
what keeps the cache close to the coordinator runs beside them:

* The warm prompt server (:mod:`memmesh.agents.warm`), which lives as long as the session's
  prompts keep coming, asks the coordinator what changed every :data:`POLL_S` seconds
  (:func:`follow_team`). One request when nothing changed, and only the changed items when
  something did (:mod:`memmesh.team.refresh`). While the coordinator is reachable, a
  retraction leaves the prompt hook's answers within :data:`POLL_S` plus one refresh (about
  a second): within :data:`STALE_BOUND_S`.
* A hook that runs without a warm server (``MEM_HOOK_WARM=0``, or before the first one
  started) starts a refresh in the background once the cache is older than
  :data:`REFRESH_AFTER_S`, and answers from the cache as it is: the next hook sees the
  refreshed copy.
* After a refresh failed (the coordinator unreachable), the next is tried :data:`RETRY_S`
  later; once the coordinator has not confirmed the cache for
  :data:`~memmesh.local.teamcache.OFFLINE_BOUND_S`, teammates' items are withheld and the
  hooks say so in one line (:data:`WITHHELD`).

``MEM_TEAM_POLL_S`` and ``MEM_TEAM_REFRESH_S`` (positive seconds) change the first two, for
tests and for teams that want them otherwise.
"""

import contextlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memmesh.embed import Embedder

__all__ = [
    "POLL_S",
    "REFRESH_AFTER_S",
    "RETRY_S",
    "STALE_BOUND_S",
    "WITHHELD",
    "follow_team",
    "poll_seconds",
    "refresh_after",
]

POLL_S = 10.0
REFRESH_AFTER_S = 15.0
RETRY_S = 30.0
# What the hooks' view of the team may lag the coordinator by while it is reachable.
STALE_BOUND_S = 30.0
# How the hooks' note on teammates' items starts when they are withheld.
WITHHELD = "withheld"


def _seconds(name: str, default: float) -> float:
    with contextlib.suppress(ValueError):
        value = float(os.environ.get(name, ""))
        if value > 0:
            return value
    return default


def poll_seconds() -> float:
    """:data:`POLL_S`, or ``MEM_TEAM_POLL_S`` seconds when set to a positive number."""
    return _seconds("MEM_TEAM_POLL_S", POLL_S)


def refresh_after() -> float:
    """:data:`REFRESH_AFTER_S`, or ``MEM_TEAM_REFRESH_S`` seconds when set to a positive
    number."""
    return _seconds("MEM_TEAM_REFRESH_S", REFRESH_AFTER_S)


def follow_team(home: Path, stop: threading.Event) -> None:
    """Refresh the team cache of ``home`` every :func:`poll_seconds` (:data:`RETRY_S` after
    a failure) until ``stop`` is set; a home without a coordinator is only looked at again.
    Nothing raised reaches the caller: a failure is in the cache's state."""
    embedders: dict[str, Embedder] = {}
    wait = poll_seconds()
    while not stop.wait(wait):
        try:
            _refresh(home, embedders)
            wait = poll_seconds()
        except Exception:  # recorded in the cache's state by the refresh
            wait = max(poll_seconds(), RETRY_S)


def _refresh(home: Path, embedders: "dict[str, Embedder]") -> None:
    """One refresh, unless another process is running one, or there is no coordinator."""
    if not (home / "team.yaml").is_file():
        return
    from memmesh.embed import get_embedder
    from memmesh.local.teamcache import refresh_lock
    from memmesh.policy import load_policy
    from memmesh.registry import load_identity
    from memmesh.team.refresh import refresh_cache

    policy = load_policy(home)
    if policy.coordinator is None:
        return
    identity = load_identity(home)
    if policy.embedder not in embedders:  # made once: a model embedder loads its weights
        embedders.clear()
        embedders[policy.embedder] = get_embedder(policy.embedder)
    with refresh_lock(home) as held:
        if held:
            refresh_cache(home, policy, identity, embedder=embedders[policy.embedder])
