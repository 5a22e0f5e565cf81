"""The work of the `mem team ...` commands registered in :mod:`memmesh.cli.team`."""

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

import msgspec

from memmesh.cli._common import emit, home_of, open_store, shown_ids, warn
from memmesh.cli._terminal import MANY, Progress, progress
from memmesh.errors import ExitCode
from memmesh.local.items import iso
from memmesh.policy import POLICY_FILENAME, load_policy, policy_summary
from memmesh.registry import Planned, load_identity
from memmesh.team.audience import readers as readable
from memmesh.team.audience import restricted_reach
from memmesh.team.groups import names_of
from memmesh.team.member import Member, reported_action, try_policy, withholding
from memmesh.team.status import embedder_mismatch
from memmesh.text import counted, printable

if TYPE_CHECKING:
    from memmesh.team.tallies import TallyReport

__all__ = [
    "run_init",
    "run_log",
    "run_policy",
    "run_publish",
    "run_retract",
    "run_status",
    "run_sync",
    "run_verify",
]


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


def _pushing(args: argparse.Namespace) -> AbstractContextManager[Progress | None]:
    """The progress of a push to the coordinator, shown once it has :data:`MANY` entries."""
    return progress(args, "sending {} registry entries", "sent {} registry entries", at_least=MANY)


def run_init(args: argparse.Namespace) -> int:
    from memmesh.cli.errors import UsageError
    from memmesh.policy import PolicyInvalid
    from memmesh.team.setup import join_team

    try:
        joined = join_team(
            home_of(args),
            name=args.name,
            team=args.team,
            coordinator=args.coordinator,
            kinds=args.share,
        )
    except PolicyInvalid as exc:  # the team.yaml it would write refuses the name
        if exc.key != "identity.name":
            raise
        raise UsageError("team init", f"--name {args.name!r}: {exc.problem}") from None
    data = {
        "member_id": joined.member_id,
        "public_key": joined.public_key,
        "name": joined.name,
        "team": joined.team,
        "policy": str(joined.policy_path),
        "policy_written": joined.policy_written,
    }
    note = "" if joined.policy_written else f"\n(kept the existing {joined.policy_path})"
    emit(args, data, joined.member_id + note)
    if not getattr(args, "json", False):
        print(
            f"identity created; edit {joined.policy_path} to choose what may be shared",
            file=sys.stderr,
        )
    return ExitCode.OK


def run_policy(args: argparse.Namespace) -> int:
    home = home_of(args)
    path = home / POLICY_FILENAME
    if args.action == "path":
        emit(args, {"path": str(path)}, str(path))
        return ExitCode.OK
    policy = load_policy(home)
    if args.action == "check":
        summary = policy_summary(policy)
        emit(args, {"ok": True, "path": str(path), "summary": summary}, f"{path}: valid; {summary}")
        return ExitCode.OK
    data = msgspec.to_builtins(policy)
    emit(args, {"policy": data}, json.dumps(data, indent=2))
    return ExitCode.OK


def run_publish(args: argparse.Namespace) -> int:
    from memmesh.cli.errors import UsageError

    if bool(args.ids) == args.eligible:
        raise UsageError("team publish", "give the ids of the items to publish, or --eligible")
    if args.eligible and (args.force or args.again):
        raise UsageError(
            "team publish",
            "--eligible publishes what the policy allows: it does not go with --force or --again",
        )
    left_out: list[str] = []
    to = [name for names in args.to for name in names] if args.to else None
    with _member(args) as team:
        ids = args.ids
        if args.eligible:
            ids, left_out = team.eligible()
        planned: list[Planned] = []
        warning = None
        readers: dict[str, list[str] | None] = {}
        audiences: dict[str, tuple[str, ...] | None] = {}
        if ids:
            access = team.access_for()
            with _pushing(args) as progress:
                options = {"force": args.force, "dry_run": args.dry_run, "again": args.again}
                planned, warning = team.publish(
                    ids, **options, progress=progress, to=to, access=access
                )
            me = team.identity.key_id
            readers = {p.item.id: readable(access, me, p.item.project, p.audience) for p in planned}
            audiences = {p.item.id: names_of(access, p.audience) for p in planned}
        warn(embedder_mismatch(team.store, team.policy), "embedder_mismatch")
        shown = shown_ids(team.store, [p.item.id for p in planned])
        unpadded = shown_ids(team.store, left_out, pad=False)
    warn(warning, "auto_sync")
    rows = [
        {
            "id": p.item.id,
            "action": reported_action(p, dry_run=args.dry_run),
            "version": p.version,
            "rule": p.decision.rule,
            "forced": p.decision.forced,
            "text": p.item.text,
            "audience": None if p.audience is None else msgspec.to_builtins(p.audience),
            "readers": readers.get(p.item.id),
        }
        for p in planned
    ]
    lines = []
    for p, row in zip(planned, rows, strict=True):
        forced = " (forced)" if row["forced"] else ""
        where = f"{row['action']:<10} v{row['version']}  {shown[p.item.id]}"
        lines.append(f"{where}  [{row['rule']}]{forced}")
        if args.dry_run and row["action"] == "publish":
            lines.append(f"           would send: {row['text']}")
            lines.append(f"           readable by: {_readers_line(readers.get(p.item.id))}")
        if audiences.get(p.item.id) and row["action"] in ("publish", "unchanged"):
            lines.append(f"           for: {', '.join(audiences[p.item.id] or ())}")
        elif row["action"] == "retracted":
            lines.append(
                f"           retracted before: --again shares it anew as v{row['version']}, "
                "which teammates see like any new item"
            )
    data: dict[str, Any] = {"dry_run": args.dry_run, "items": rows}
    if args.eligible:
        data["left_out"] = left_out
        if not rows:
            retracted = " or was retracted" if left_out else ""
            lines.append(
                f"nothing to publish: every item the policy allows is published{retracted}"
            )
        if left_out:
            lines.append(
                f"left out, retracted before: {', '.join(unpadded.values())} "
                "(publish each again with `mem team publish ID --again`)"
            )
    emit(args, data, "\n".join(lines))
    actions = {row["action"] for row in rows}
    if "refused" in actions:
        return ExitCode.REFUSED
    return ExitCode.USAGE if "retracted" in actions else ExitCode.OK


def _readers_line(names: list[str] | None) -> str:
    """Who could read an item, in words: ``None`` is every member of the team."""
    return "every member of the team" if names is None else ", ".join(names) or "nobody"


def run_sync(args: argparse.Namespace) -> int:
    with _member(args) as team, _pushing(args) as progress:
        report = team.sync(progress)
        listed = report.withdrawn + report.withheld + report.rejected + report.bad_receipts
        shown = shown_ids(team.store, [item for item, _ in listed], pad=False)
    data = msgspec.to_builtins(report)
    lines = [
        f"sent {report.sent} in {counted(report.batches, 'batch', 'batches')}: "
        f"{report.accepted} accepted, "
        f"{report.already_known} already known, {report.stale} stale; "
        f"{report.skipped} no longer live, not sent"
    ]
    if report.withdrawn:
        lines.append(
            f"retracted {counted(len(report.withdrawn), 'item')} the policy no longer allows:"
        )
        lines += [f"    {shown[item]} [{rule}]" for item, rule in report.withdrawn]
    lines += [f"withheld, not sent: {shown[item]} [{rule}]" for item, rule in report.withheld]
    lines += [f"rejected by the coordinator: {shown[item]}: {why}" for item, why in report.rejected]
    lines += [f"receipt refused: {shown[item]}: {why}" for item, why in report.bad_receipts]
    lines += _tally_lines(report.tallies)
    emit(args, data, "\n".join(lines))
    return ExitCode.ERROR if report.rejected else ExitCode.OK


def _tally_lines(tallies: "TallyReport") -> list[str]:
    """What a sync did with tallies, when it did anything."""
    lines = []
    if tallies.sent or tallies.folded:
        lines.append(
            f"tallies: {tallies.sent} sent on teammates' items, {tallies.folded} folded in on yours"
        )
    lines += [f"tally refused: {item[:10]}: {why}" for item, why in tallies.rejected]
    lines += [f"teammates' tallies dropped: {why} ({n})" for why, n in tallies.dropped.items()]
    return lines


def run_retract(args: argparse.Namespace) -> int:
    with _member(args, need_policy=False) as team:
        entries, warning = team.retract(args.ids)
        shown = shown_ids(team.store, [e.item_id for e in entries], pad=False)
    warn(warning, "auto_sync")
    rows = [{"id": e.item_id, "version": e.version, "seq": e.seq} for e in entries]
    emit(
        args,
        {"retracted": rows},
        "\n".join(f"retracted  v{e.version}  {shown[e.item_id]}" for e in entries),
    )
    return ExitCode.OK


def run_status(args: argparse.Namespace) -> int:
    from memmesh.team.contradicted import contradicted
    from memmesh.team.status import team_status

    with _member(args) as team:
        status = team_status(team)
        policy, identity = team.policy, team.identity
        unreceipted = shown_ids(team.store, status.unreceipted, pad=False)
        live = team.registry.live()
        said = contradicted(team.store.home, live, own_key=identity.key_id)
        contested = shown_ids(team.store, [own.id for own in said])
        assert policy is not None  # _member loaded it
        reach = restricted_reach(policy, team.store.home, identity.key_id, live)
        reached = shown_ids(team.store, [held["id"] for held in reach], pad=False)
    lines = [
        f"member {status.member_id} in team {status.team}; "
        f"coordinator {status.coordinator or 'not set (nothing leaves)'}; "
        f"{counted(status.awaiting_sync, 'registry entry', 'registry entries')} awaiting sync",
        f"public key {status.public_key}"
        # Only before a team is joined: after it, the roster already holds the key.
        + (
            ""
            if status.coordinator
            else " (joining with an invite code, mem team join CODE, puts it on the team's roster)"
        ),
    ]
    for name, row in status.projects.items():
        lines.append(
            f"{name}: {row.private} private ({row.eligible} eligible), "
            f"{row.published} published, {row.withheld} withheld"
        )
        for rule, count in sorted(row.blocked.items()):
            lines.append(f"    blocked by {rule}: {count}")
    hint = withholding(len(status.policy_withholds))
    if hint:
        lines.append(hint)
    lines += [status.embedder_mismatch] if status.embedder_mismatch else []
    if status.unreceipted:
        lines.append(
            f"retractions without the coordinator's receipt: {len(status.unreceipted)} "
            f"({', '.join(unreceipted.values())}); `mem team sync` asks again"
        )
    if said:
        lines.append(
            f"teammates say otherwise of {len(said)} of your published items "
            "(as the team cache holds theirs):"
        )
    for own in said:
        lines.append(printable(f"    {contested[own.id]}  {own.text}"))
        lines += [
            printable(f"       {other.author} says otherwise: {other.text} ({other.item_id})")
            for other in own.contradicted_by
        ]
    if reach:
        lines.append(
            f"published for some of the team: {counted(len(reach), 'item')} (as the roster kept "
            "here says; who was served each: mem team disclosures ID):"
        )
    for held in reach:
        readers = _readers_line(held["readers"])
        audience = ", ".join(held["audience"])
        lines.append(printable(f"    {reached[held['id']]}  for {audience}: readable by {readers}"))
    data = msgspec.to_builtins(status)
    data["contradicted"] = msgspec.to_builtins(said)
    data["restricted"] = reach
    code = ExitCode.OK
    if args.check:
        from memmesh.cli._team_net import team_check

        data["check"], checked, code = team_check(args, policy, identity)
        lines += checked
    emit(args, data, "\n".join(lines))
    return code


def run_log(args: argparse.Namespace) -> int:
    with _member(args, need_policy=False, reconcile_first=False) as team:
        entries = team.registry.entries()
        shown = shown_ids(team.store, [e.item_id for e in entries], pad=False)
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
        f"{r['seq']:>5}  {r['recorded_at']}  {r['kind']:<11} v{r['version']}  "
        f"{shown[e.item_id]}" + (f"  forced over [{r['forced_rule']}]" if r["forced_rule"] else "")
        for e, r in zip(entries, rows, strict=True)
    ]
    emit(args, {"entries": rows}, "\n".join(lines) or "the registry is empty")
    return ExitCode.OK


def run_verify(args: argparse.Namespace) -> int:
    with _member(args, need_policy=False, reconcile_first=False) as team:
        problems = team.registry.verify()
        count = len(team.registry.entries())
    intact = f"ok: {counted(count, 'entry', 'entries')}, chain and signatures intact"
    emit(
        args,
        {"ok": not problems, "entries": count, "problems": problems},
        "\n".join(problems) if problems else intact,
    )
    return ExitCode.ERROR if problems else ExitCode.OK
