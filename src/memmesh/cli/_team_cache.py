"""`mem team cache refresh|status`: the team cache the session hooks read.

Registered in :mod:`memmesh.cli.team`; the work is :func:`memmesh.team.refresh.refresh_cache`
(imported when the command runs).
"""

import argparse
import time
from typing import Any

from memmesh.cli._common import command_adder, command_group, emit, home_of, lazy
from memmesh.errors import ExitCode

__all__ = ["register", "run_refresh", "run_status"]


def register(team: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add `mem team cache` and its subcommands to the `mem team` group."""
    command = command_adder(
        command_group(
            team,
            "cache",
            "The team cache: teammates' published items, which the session hooks show.",
            "mem team cache status",
            description="The team cache holds teammates' published items (from the "
            "coordinator's feed) in this home, so that `mem hook brief` and `mem hook prompt` "
            "show them without asking the network. The warm prompt server asks the coordinator "
            "what changed every 10 seconds; a hook without one refreshes it in the background "
            "once it is older than 15 seconds. Teammates' items are withheld once the "
            "coordinator has not confirmed the cache for 24 hours.",
        )
    )
    p = command(
        "refresh",
        lazy("memmesh.cli._team_cache", "run_refresh"),
        "Bring the team cache up to date with the coordinator's feed now: new items are "
        "embedded, retracted ones and those of authors no longer on the roster leave it. "
        "Waits for a refresh already running rather than running a second one.",
        "mem team cache refresh",
    )
    p.add_argument(
        "--background",
        action="store_true",
        help="as the hooks run it: do nothing when a refresh is running already",
    )
    command(
        "status",
        lazy("memmesh.cli._team_cache", "run_status"),
        "Show how old the team cache is, what it holds, and why its last refresh failed.",
        "mem team cache status --json",
    )


def run_refresh(args: argparse.Namespace) -> int:
    from memmesh.local.teamcache import refresh_lock
    from memmesh.policy import load_policy
    from memmesh.registry import load_identity
    from memmesh.team.refresh import refresh_cache

    home = home_of(args)
    policy = load_policy(home)
    identity = load_identity(home)
    deadline = time.monotonic() + 60
    while True:
        with refresh_lock(home) as held:
            if held:
                done = refresh_cache(home, policy, identity)
                break
        if args.background or time.monotonic() > deadline:
            emit(args, {"refreshed": False}, "a refresh is running already")
            return ExitCode.OK
        time.sleep(0.2)
    dropped = (
        f"; dropped {sum(done.dropped.values())} changes that did not verify"
        if done.dropped
        else ""
    )
    partial = "" if done.complete else " (the feed was not read to its end)"
    text = (
        f"team cache: {done.items} items ({done.written} new or newer, {done.removed} removed)"
        f" in {done.seconds:.1f} s{partial}{dropped}"
    )
    emit(args, {"refreshed": True, **_builtins(done)}, text)
    return ExitCode.OK


def run_status(args: argparse.Namespace) -> int:
    from memmesh.local.items import iso
    from memmesh.local.teamcache import refresh_running, state

    home = home_of(args)
    now = time.time()
    cache = state(home)
    data = _builtins(cache)
    data["age_s"] = None if cache.refreshed_at is None else round(now - cache.refreshed_at)
    data["running"] = refresh_running(home) if home.is_dir() else False
    if cache.refreshed_at is None:
        lines = ["team cache: never refreshed"]
    else:
        source = cache.source.coordinator if cache.source else "-"
        lines = [
            f"team cache: {cache.items} items from {source}, refreshed "
            f"{iso(cache.refreshed_at)} ({data['age_s']} s ago)"
        ]
    if cache.problem:
        lines.append(f"last refresh failed at {iso(cache.tried_at or now)}: {cache.problem}")
    if data["running"]:
        lines.append("a refresh is running")
    emit(args, data, "\n".join(lines))
    return ExitCode.OK


def _builtins(value: object) -> dict[str, Any]:
    import msgspec

    data: dict[str, Any] = msgspec.to_builtins(value)
    return data
