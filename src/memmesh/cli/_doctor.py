"""`mem doctor`: the whole setup checked, each problem with what to do about it.

Four parts, in the order a problem in one explains the next: the store
(:func:`memmesh.local.doctor.diagnose`), the team (team.yaml, this member's key, whether the
coordinator answers and accepts this member, the store's embedder against the team's, whether
this member's peer daemon runs and teammates can reach it), each service `mem service`
installed for this home (whether it runs, and where its logs are), and each coding agent
client memmesh was installed into (its entries as `mem hook install` would write them now,
and whether the command they name starts). A client memmesh was never
installed into is not a problem, and neither is a laptop with no team: both are said once.
"""

import argparse
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from memmesh.cli._common import emit, home_of, open_store
from memmesh.errors import ExitCode, MemmeshError
from memmesh.local.doctor import Check
from memmesh.text import counted

if TYPE_CHECKING:
    from memmesh.local.store import Store
    from memmesh.policy.config import Policy
    from memmesh.registry.identity import Identity

__all__ = ["doctor"]

DAY_S = 24 * 3600.0
START_TIMEOUT = 20.0  # seconds a client's `mem` command may take to say its version


def doctor(args: argparse.Namespace) -> int:
    from memmesh.local import doctor as store_doctor

    home = home_of(args)
    with open_store(args) as store:
        facts = store_doctor.facts(store)
        checks = store_doctor.diagnose(store)
        checks += _team_checks(home, store, offline=args.offline)
    checks += _service_checks(home)
    checks += _agent_checks(args)
    checks += _hook_checks(home)
    ok = all(check.ok for check in checks)
    data = {
        "ok": ok,
        **facts,
        "checks": [
            {"name": c.name, "ok": c.ok, "detail": c.detail, **({"fix": c.fix} if c.fix else {})}
            for c in checks
        ],
    }
    emit(args, data, store_doctor.report(facts, checks))
    return ExitCode.OK if ok else ExitCode.ERROR


def _team_checks(home: Path, store: "Store", *, offline: bool) -> list[Check]:
    from memmesh.policy import PolicyMissing, load_policy, policy_summary
    from memmesh.registry import load_identity
    from memmesh.team.status import embedder_mismatch

    try:
        policy = load_policy(home)
    except PolicyMissing:
        return [
            Check(
                name="team",
                ok=True,
                detail="not set up: nothing leaves this laptop "
                "(`mem team init` or `mem team join` to share with a team)",
            )
        ]
    except MemmeshError as exc:
        return [
            Check(
                name="team.yaml",
                ok=False,
                detail=exc.message,
                fix="correct it (`mem team policy check` says what is wrong, and where); "
                "until then nothing is published or served",
            )
        ]
    checks = [Check(name="team.yaml", ok=True, detail=policy_summary(policy))]
    try:
        identity = load_identity(home)
    except MemmeshError as exc:
        checks.append(
            Check(
                name="member key",
                ok=False,
                detail=exc.message,
                fix="`mem team init` creates it (an existing key is never overwritten)",
            )
        )
        return checks
    checks.append(Check(name="member key", ok=True, detail=f"member id {identity.key_id}"))
    mismatch = embedder_mismatch(store, policy)
    checks.append(
        Check(
            name="embedder",
            ok=False,
            detail=mismatch,
            fix=f"`mem reindex --embedder {policy.embedder}` (safe to interrupt)",
        )
        if mismatch
        else Check(name="embedder", ok=True, detail=f"the team's, {store.embedder.name}")
    )
    if policy.coordinator is None:
        checks.append(
            Check(
                name="coordinator",
                ok=True,
                detail="none in team.yaml: nothing is published until one is set",
            )
        )
    elif offline:
        checks.append(
            Check(
                name="coordinator", ok=True, detail=f"{policy.coordinator}: not asked (--offline)"
            )
        )
    else:
        checks.append(_coordinator_check(policy, identity, home))
    checks.append(_peer_check(home, policy, offline=offline))
    return checks


def _coordinator_check(policy: "Policy", identity: "Identity", home: Path) -> Check:
    from memmesh.team.check import check_coordinator

    found = check_coordinator(policy, identity, home=home)
    if found.state == "accepted":
        who = f" as {found.name}" if found.name else ""
        return Check(
            name="coordinator", ok=True, detail=f"{found.url} answers and accepts you{who}"
        )
    from memmesh.team.errors import KeyRevoked

    fixes = {
        "unreachable": "is it running, and is team.yaml's coordinator: its address? "
        "(`mem team status --check` asks again)",
        "refused": "an admin adds your key (`mem team status` prints it) with "
        "`mem team members add NAME KEY`, or you join with an invite code (`mem team join "
        "CODE`); check MEM_TEAM_TOKEN if the team uses one",
        "untrusted": "the coordinator serves a roster the team's admins did not sign: tell "
        "your admins; nothing it says about members is used meanwhile",
    }
    fix = fixes.get(found.state, "`mem team status --check` says more")
    if found.code == KeyRevoked.code:
        fix = (
            "a revoked key stays refused for good: ask an admin for a new invite code and join "
            "from a new home, with a new key (`mem --home NEW_HOME team join CODE`; "
            "`mem export` and `mem import` bring your private items along)"
        )
    return Check(
        name="coordinator",
        ok=False,
        detail=f"{found.url}: {found.state}: {found.problem}",
        fix=fix,
    )


def _peer_check(home: Path, policy: "Policy", *, offline: bool) -> Check:
    """Whether this member's peer daemon runs, and whether teammates can reach it."""
    from memmesh.peer.reach import LAN_HOST, peer_reach

    found = peer_reach(home, policy, offline=offline)
    name = "peer daemon"
    if found.record is None:
        return Check(
            name=name,
            ok=True,
            detail="not running: teammates get your published items from the coordinator's "
            f"copy only (`mem team serve --host {LAN_HOST}` answers them live)",
        )
    runs = f"runs (pid {found.record.pid}) at {found.record.url or 'an address not said yet'}"
    if found.unreachable is not None:
        return Check(
            name=name,
            ok=False,
            detail=f"{runs}, but {found.unreachable.why}",
            fix=f"stop it and start it again: {found.unreachable.fix}",
        )
    if found.state == "silent":
        return Check(
            name=name,
            ok=False,
            detail=f"{runs}, which does not answer: {found.problem}",
            fix=f"let teammates reach port {found.record.port} through this machine's "
            "firewall, or give the address they reach it at "
            "(`mem team serve --advertise https://NAME:PORT`)",
        )
    if found.state == "not_asked":
        return Check(name=name, ok=True, detail=f"{runs}: not asked (--offline)")
    return Check(name=name, ok=True, detail=f"{runs}, which answers")


def _service_checks(home: Path) -> list[Check]:
    """Each service `mem service` installed for this home: whether it runs, and where its
    logs are. Nothing is asked when none is installed."""
    import shlex

    from memmesh.service import detect, states

    checks: list[Check] = []
    for state in states(detect(), home):
        name = f"service {state.kind}"
        start = " && ".join(shlex.join(command) for command in state.start)
        if state.enabled is None:
            detail = f"{state.unit} is installed, but {state.manager} does not answer: "
            fix = f"in a login session of yours, run: {start}"
            checks.append(Check(name=name, ok=False, detail=detail + state.problem, fix=fix))
            continue
        enabled = "enabled" if state.enabled else "disabled"
        detail = f"{state.unit} is {enabled} and {state.state}; logs: {state.logs}"
        fix = "" if state.active else f"its logs say why; start it again: {start}"
        checks.append(Check(name=name, ok=bool(state.active), detail=detail, fix=fix))
    return checks


def _agent_checks(args: argparse.Namespace) -> list[Check]:
    from memmesh.agents.clients import INSTALLABLE
    from memmesh.agents.created import created_files
    from memmesh.agents.install import mcp_installed, plan_install, plan_uninstall
    from memmesh.cli.agents import launch_of

    launch = launch_of(args)
    checks: list[Check] = []
    mcp: bool | None = None
    for client in INSTALLABLE:
        try:
            ours = plan_uninstall(client, created=created_files(home_of(args)))
            stale = [c for c in plan_install(client, launch) if c.changed]
        except MemmeshError as exc:
            checks.append(
                Check(
                    name=client,
                    ok=False,
                    detail=exc.message,
                    fix="repair or move the file; nothing was changed",
                )
            )
            continue
        if not any(change.changed for change in ours):
            continue  # never installed there
        if stale:
            files = ", ".join(str(change.path) for change in stale)
            checks.append(
                Check(
                    name=client,
                    ok=False,
                    detail=f"memmesh's entries in {files} "
                    "are not what this memmesh would write (moved, edited or from "
                    "another install)",
                    fix=f"`mem hook install {client}`",
                )
            )
            continue
        mcp = mcp_installed() if mcp is None else mcp
        checks.append(_client_check(client, launch.argv, mcp))
    if not checks:
        checks.append(
            Check(
                name="agents",
                ok=True,
                detail="no client set up (`mem hook install --detected` sets up each one "
                "found here)",
            )
        )
    return checks


def _hook_checks(home: Path) -> list[Check]:
    """Whether the session hooks failed in the last day: they never tell the agent, so this
    is where their errors are seen."""
    import time

    from memmesh.local.hooklog import runs_since
    from memmesh.local.items import iso

    count, failed = runs_since(home, time.time() - DAY_S)
    if not count:
        return []
    if not failed:
        return [Check(name="hooks", ok=True, detail=f"{counted(count, 'run')} in the last day, "
                      "none failed")]  # fmt: skip
    last = failed[0]
    return [
        Check(
            name="hooks",
            ok=False,
            detail=f"{len(failed) if len(failed) < 10 else '10 or more'} of "
            f"{counted(count, 'run')} in the last day failed; the newest: {last.hook} at "
            f"{iso(last.at)}: {last.error}",
            fix="the hooks say nothing to the agent when they fail: mend what the error names",
        )
    ]


def _client_check(client: str, argv: tuple[str, ...], mcp: bool) -> Check:
    started = _starts(argv)
    if started:
        return Check(
            name=client,
            ok=False,
            detail=f"its command {argv[0]} does not start: {started}",
            fix=f"reinstall memmesh, then `mem hook install {client}`",
        )
    if not mcp:
        return Check(
            name=client,
            ok=False,
            detail="its MCP server `mem mcp` cannot start: the MCP SDK is not installed",
            fix="pip install 'memmesh[mcp]'",
        )
    return Check(name=client, ok=True, detail=f"MCP server and hooks installed; {argv[0]} starts")


def _starts(argv: tuple[str, ...]) -> str:
    """Why ``argv`` with ``--version`` does not run, or ``""`` when it does."""
    if os.sep in argv[0] and not os.access(argv[0], os.X_OK):
        return "no such program"
    try:
        done = subprocess.run(
            [*argv, "--version"], capture_output=True, timeout=START_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return type(exc).__name__
    if done.returncode != 0:
        last = (done.stderr or done.stdout).decode(errors="replace").strip().splitlines()
        return f"exit {done.returncode}" + (f": {last[-1]}" if last else "")
    return ""
