"""`mem team ...`: identity, policy, publishing, retracting and the registry log."""

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import msgspec

from memmesh.cli._common import (
    command_adder,
    command_group,
    emit,
    home_of,
    nonempty,
    open_store,
)
from memmesh.cli._team_net import add_network_commands
from memmesh.local.items import iso
from memmesh.policy import (
    POLICY_FILENAME,
    decide,
    load_policy,
    policy_template,
)
from memmesh.registry import (
    create_identity,
    load_identity,
    retract,
    withheld,
)
from memmesh.team.member import Member, auto_sync, reported_action, try_policy

__all__ = ["register"]


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add `mem team` and its subcommands to the `mem` parser."""
    sub = command_group(
        commands,
        "team",
        "Share deliberately with your team: identity, policy, publish, retract, log.",
        "mem team init --name ada --team acme",
        description="Share deliberately with your team. Nothing leaves this laptop unless you "
        "publish it and team.yaml allows it.",
    )
    command = command_adder(sub)

    p = command(
        "init",
        _init,
        "Create your identity key (never overwritten) and a team.yaml that shares nothing "
        "until you set a coordinator and share rules. Prints your member id.",
        "mem team init --name ada --team acme --coordinator http://team-host:8400",
    )
    p.add_argument("--name", required=True, type=nonempty, help="your name in the team")
    p.add_argument("--team", default="default", type=nonempty, help="the team's name")
    p.add_argument("--coordinator", metavar="URL", help="the team host's coordinator URL")

    p = command(
        "policy",
        _policy,
        "Show the effective team policy, check team.yaml (exit 3 if invalid), or print its path.",
        "mem team policy check",
    )
    p.add_argument("action", nargs="?", choices=("show", "check", "path"), default="show")

    p = command(
        "publish",
        _publish,
        "Publish items to the team, all or nothing. The policy decides each item; --force "
        "overrides eligibility and your never rules (and is recorded), never a detected secret.",
        "mem team publish 01J9ZC4 01J9ZD1 --dry-run",
    )
    p.add_argument("ids", nargs="+", metavar="ID", help="item ids or unique prefixes")
    p.add_argument("--force", action="store_true", help="override eligibility and never rules")
    p.add_argument("--dry-run", action="store_true", help="show what would leave, change nothing")

    p = command(
        "retract",
        _retract,
        "Retract published items: they stop being served everywhere and never come back.",
        "mem team retract 01J9ZC4",
    )
    p.add_argument("ids", nargs="+", metavar="ID", help="item ids or unique prefixes")

    command(
        "status",
        _status,
        "Per project: private, eligible, published, blocked (by which rule), awaiting sync.",
        "mem team status",
    )
    command(
        "sync",
        _sync,
        "Push every registry entry the coordinator has not acknowledged, re-checking the "
        "policy first. Safe to interrupt and run again.",
        "mem team sync",
    )
    add_network_commands(command)
    command("log", _log, "Show the registry log, oldest first.", "mem team log --json")
    command(
        "verify",
        _verify,
        "Check the registry log's chain and signatures. Exits 1 on any problem.",
        "mem team verify",
    )


@contextmanager
def _member(
    args: argparse.Namespace, *, need_policy: bool = True, reconcile_first: bool = True
) -> Iterator[Member]:
    """The member this command acts for, on their store; the store is closed afterwards.

    The policy is read first: while it is invalid, no team command does anything (exit 3).
    """
    home = home_of(args)
    policy = load_policy(home) if need_policy else try_policy(home)
    identity = load_identity(home)
    with open_store(args) as store:
        yield Member(store, identity, policy, reconcile_first=reconcile_first)


def _init(args: argparse.Namespace) -> int:
    home = home_of(args)
    identity = create_identity(home)
    policy_path = home / POLICY_FILENAME
    wrote = False
    if not policy_path.exists():
        policy_path.write_text(
            policy_template(name=args.name, team=args.team, coordinator=args.coordinator),
            encoding="utf-8",
        )
        wrote = True
    data = {
        "member_id": identity.key_id,
        "public_key": identity.public_key_text,
        "name": args.name,
        "team": args.team,
        "policy": str(policy_path),
        "policy_written": wrote,
    }
    note = "" if wrote else f"\n(kept the existing {policy_path})"
    emit(args, data, identity.key_id + note)
    if not getattr(args, "json", False):
        print(
            f"identity created; edit {policy_path} to choose what may be shared",
            file=sys.stderr,
        )
    return 0


def _policy(args: argparse.Namespace) -> int:
    home = home_of(args)
    path = home / POLICY_FILENAME
    if args.action == "path":
        emit(args, {"path": str(path)}, str(path))
        return 0
    policy = load_policy(home)
    if args.action == "check":
        emit(args, {"ok": True, "path": str(path)}, f"{path}: ok")
        return 0
    data = msgspec.to_builtins(policy)
    emit(args, {"policy": data}, json.dumps(data, indent=2))
    return 0


def _publish(args: argparse.Namespace) -> int:
    with _member(args) as team:
        planned, warning = team.publish(args.ids, force=args.force, dry_run=args.dry_run)
    _warn(warning)
    rows = [
        {
            "id": p.item.id,
            "action": reported_action(p, dry_run=args.dry_run),
            "version": p.version,
            "rule": p.decision.rule,
            "forced": p.decision.forced,
            "text": p.item.text,
        }
        for p in planned
    ]
    lines = []
    for row in rows:
        forced = " (forced)" if row["forced"] else ""
        lines.append(f"{row['action']:<10} v{row['version']}  {row['id']}  [{row['rule']}]{forced}")
        if args.dry_run and row["action"] == "publish":
            lines.append(f"           would send: {row['text']}")
    emit(args, {"dry_run": args.dry_run, "items": rows}, "\n".join(lines))
    refused = any(row["action"] == "refused" for row in rows)
    return 3 if refused else 0


def _warn(warning: str | None) -> None:
    if warning:
        print(f"mem: warning: {warning}", file=sys.stderr)


def _sync(args: argparse.Namespace) -> int:
    from memmesh.team.sync import coordinator_client, sync

    with _member(args) as team:
        assert team.policy is not None
        with coordinator_client(team.policy) as client:
            report = sync(team.registry, team.policy, client)
    data = msgspec.to_builtins(report)
    lines = [
        f"sent {report.sent} in {report.batches} batches: {report.accepted} accepted, "
        f"{report.already_known} already known, {report.stale} stale; "
        f"{report.skipped} no longer live, not sent"
    ]
    lines += [f"withheld by policy: {item} [{rule}]" for item, rule in report.withheld]
    lines += [f"rejected by the coordinator: {item}: {why}" for item, why in report.rejected]
    emit(args, data, "\n".join(lines))
    return 1 if report.rejected else 0


def _retract(args: argparse.Namespace) -> int:
    with _member(args, need_policy=False) as team:
        entries = retract(team.registry, args.ids)
        warning = auto_sync(team)
    _warn(warning)
    rows = [{"id": e.item_id, "version": e.version, "seq": e.seq} for e in entries]
    emit(
        args,
        {"retracted": rows},
        "\n".join(f"retracted  v{r['version']}  {r['id']}" for r in rows),
    )
    return 0


def _status(args: argparse.Namespace) -> int:
    with _member(args) as team:
        assert team.policy is not None
        with team.store.db.read() as conn:
            live = team.registry.live(conn)
            (awaiting,) = conn.execute("SELECT count(*) FROM registry WHERE acked = 0").fetchone()
        items = team.store.items(status="active")
        held = withheld(team.registry, team.policy)
        projects: dict[str, Counter[str]] = {}
        blocked: dict[str, Counter[str]] = {}
        for item in items:
            counts = projects.setdefault(item.project, Counter())
            if item.id in live:
                counts["withheld" if item.id in held else "published"] += 1
                continue
            counts["private"] += 1
            decision = decide(item, team.policy)
            if decision.allowed:
                counts["eligible"] += 1
            else:
                blocked.setdefault(item.project, Counter())[decision.rule] += 1
    data: dict[str, Any] = {
        "member_id": team.identity.key_id,
        "public_key": team.identity.public_key_text,
        "team": team.policy.team,
        "coordinator": team.policy.coordinator,
        "awaiting_sync": awaiting,
        "projects": {
            name: {
                "private": counts["private"],
                "eligible": counts["eligible"],
                "published": counts["published"],
                "withheld": counts["withheld"],
                "blocked": dict(blocked.get(name, {})),
            }
            for name, counts in sorted(projects.items())
        },
    }
    lines = [
        f"member {team.identity.key_id} in team {team.policy.team}; "
        f"coordinator {team.policy.coordinator or 'not set (nothing leaves)'}; "
        f"{awaiting} registry entries awaiting sync",
    ]
    for name, row in data["projects"].items():
        lines.append(
            f"{name}: {row['private']} private ({row['eligible']} eligible), "
            f"{row['published']} published, {row['withheld']} withheld"
        )
        for rule, count in sorted(row["blocked"].items()):
            lines.append(f"    blocked by {rule}: {count}")
    emit(args, data, "\n".join(lines))
    return 0


def _log(args: argparse.Namespace) -> int:
    with _member(args, need_policy=False, reconcile_first=False) as team:
        entries = team.registry.entries()
    rows = [
        {
            "seq": e.seq,
            "kind": e.kind,
            "item_id": e.item_id,
            "version": e.version,
            "forced_rule": e.forced_rule,
            "recorded_at": iso(e.recorded_at),
            "acked": e.acked,
            "entry_hash": e.entry_hash,
        }
        for e in entries
    ]
    lines = [
        f"{r['seq']:>5}  {r['recorded_at']}  {r['kind']:<11} v{r['version']}  {r['item_id']}"
        + (f"  forced over [{r['forced_rule']}]" if r["forced_rule"] else "")
        for r in rows
    ]
    emit(args, {"entries": rows}, "\n".join(lines) or "the registry is empty")
    return 0


def _verify(args: argparse.Namespace) -> int:
    with _member(args, need_policy=False, reconcile_first=False) as team:
        problems = team.registry.verify()
        count = len(team.registry.entries())
    emit(
        args,
        {"ok": not problems, "entries": count, "problems": problems},
        "\n".join(problems) if problems else f"ok: {count} entries, chain and signatures intact",
    )
    return 1 if problems else 0
