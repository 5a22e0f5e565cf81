"""`mem consolidate` and `mem resolve`: memory that stays true (docs/consolidation.md)."""

import argparse
from typing import TYPE_CHECKING, Any

from memmesh.cli._common import command_adder, emit, home_of, open_store, positive_int, warn
from memmesh.cli.errors import UsageError
from memmesh.errors import ExitCode
from memmesh.local.items import iso
from memmesh.text import counted

if TYPE_CHECKING:
    from memmesh.consolidate.actions import Applied, Entry
    from memmesh.consolidate.plan import Plan
    from memmesh.local import Item
    from memmesh.local.store import Store

__all__ = ["register"]

_CONSOLIDATE = (
    "Find near-duplicate items, contradictions, items past their use and items whose code "
    "changed; with --apply, merge the duplicates and archive what is past its use."
)
_DESCRIPTION = (
    _CONSOLIDATE + " Without --apply nothing changes. Each action --apply takes is written to "
    "an audit journal (--log) and can be taken back (--undo ID): a merge is a revision that "
    "keeps every author and the track record the items earned together; archiving is what "
    "`mem forget` does. Contradictions are only shown: settle each with `mem resolve A B "
    "--keep A|B|both`. Items anchored to a file (`mem remember --about`) that changed enough "
    "are only shown. Published items an action changes are retracted, as `mem forget` does. "
    "With MEM_JUDGE_COMMAND set, the near pairs the word rules call duplicates or compatible "
    "are also given to that program (JSON in, JSON out: docs/consolidation.md), whose verdict "
    "on a pair has the last word."
)


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add `mem consolidate` and `mem resolve` to the parser."""
    command = command_adder(commands)
    p = command(
        "consolidate",
        _consolidate,
        _CONSOLIDATE,
        "mem consolidate --apply",
        description=_DESCRIPTION,
    )
    p.add_argument("--apply", action="store_true", help="merge duplicates, archive decayed items")
    p.add_argument(
        "--only",
        choices=("duplicates", "decay"),
        action="append",
        help="with --apply, only this kind of action (repeatable)",
    )
    p.add_argument(
        "--half-life",
        type=positive_int,
        default=90,
        metavar="DAYS",
        help="an item nobody recalled, reinforced or changed for two half-lives is proposed "
        "for archiving (default: 90)",
    )
    p.add_argument(
        "--record",
        action="store_true",
        help="keep this run's findings for the session brief and the page (what the schedule "
        "and the end of an agent's session run)",
    )
    p.add_argument("--log", action="store_true", help="list the audit journal, newest first")
    p.add_argument("--undo", metavar="ID", help="take back the journal entry ID")
    p = command(
        "resolve",
        _resolve,
        "Settle a contradiction: keep item A, item B, or both.",
        "mem resolve 01J9AB 01J9CD --keep A",
        description="Settle a contradiction `mem consolidate` showed: --keep A archives B, "
        "--keep B archives A, --keep both keeps both and the pair is not raised again. "
        "Written to the audit journal; `mem consolidate --undo ID` takes it back.",
    )
    p.add_argument("a", help="the first item (id or unique prefix)")
    p.add_argument("b", help="the second item")
    p.add_argument(
        "--keep",
        required=True,
        type=str.lower,
        choices=("a", "b", "both"),
        help="which to keep: A, B or both",
    )


def _consolidate(args: argparse.Namespace) -> int:
    from memmesh.consolidate.actions import apply, history, undo
    from memmesh.consolidate.plan import plan

    chosen = [args.log, args.undo is not None, args.apply]
    if sum(chosen) > 1:
        raise UsageError("consolidate", "give one of --apply, --log and --undo")
    if args.only and not args.apply:
        raise UsageError("consolidate", "--only goes with --apply")
    if args.record and (args.log or args.undo is not None):
        raise UsageError("consolidate", "--record goes with a run, not with --log or --undo")
    with open_store(args) as store:
        if args.log:
            entries = history(store)
            emit(args, {"entries": [_entry_json(e) for e in entries]}, _log_text(entries))
            return ExitCode.OK
        if args.undo is not None:
            entry = undo(store, args.undo)
            _retract(args, store)
            emit(
                args, {"undone": _entry_json(entry)}, f"took back {entry.id}: {_entry_text(entry)}"
            )
            return ExitCode.OK
        found = plan(store, half_life_days=float(args.half_life), judge=True)
        applied = (
            apply(store, found, only=args.only or ("duplicates", "decay")) if args.apply else None
        )
        if applied is not None and applied.done:
            _retract(args, store)
        if args.record:
            from memmesh.consolidate.runs import record

            record(home_of(args), found, applied, now=store.clock())
    warn(found.judge_error, "judge_failed")
    emit(args, _plan_json(found, applied), _plan_text(found, applied))
    return ExitCode.OK


def _resolve(args: argparse.Namespace) -> int:
    from memmesh.consolidate.actions import resolve

    with open_store(args) as store:
        entry = resolve(store, args.a, args.b, args.keep)
        _retract(args, store)
    emit(
        args,
        {"entry": _entry_json(entry)},
        f"{entry.reason} (undo: mem consolidate --undo {entry.id})",
    )
    return ExitCode.OK


def _retract(args: argparse.Namespace, store: "Store") -> None:
    """Retract the publications of what an action changed, as `mem forget` does."""
    from memmesh.team.member import retract_changed

    _, warning = retract_changed(store, home_of(args))
    warn(warning, "auto_sync")


def _plan_json(found: "Plan", applied: "Applied | None") -> dict[str, Any]:
    return {
        "duplicates": [
            {"item_ids": [i.id for i in g.items], "keep": g.keep, "reason": g.reason}
            for g in found.duplicates
        ],
        "contradictions": [
            {
                "a": c.a.id,
                "b": c.b.id,
                "a_text": c.a.text,
                "b_text": c.b.text,
                "subject": c.subject,
                "values": list(c.values),
                "reason": c.reason,
            }
            for c in found.contradictions
        ],
        "decay": [
            {"id": a.item.id, "text": a.item.text, "why": a.why, "since": iso(a.since)}
            for a in found.decay
        ],
        "stale": [
            {
                "id": s.item.id,
                "text": s.item.text,
                "files": [
                    {
                        "path": f.path,
                        "changed": round(f.changed, 3),
                        "gone": f.gone,
                        "anchored_at": iso(f.anchored_at),
                    }
                    for f in s.files
                ],
            }
            for s in found.stale
        ],
        "compared": found.compared,
        "seconds": round(found.seconds, 3),
        "applied": None if applied is None else [_entry_json(e) for e in applied.done],
        "skipped": None
        if applied is None
        else [{"item_ids": list(ids), "reason": why} for ids, why in applied.skipped],
    }


def _plan_text(found: "Plan", applied: "Applied | None") -> str:
    lines = [
        f"{counted(len(found.duplicates), 'group')} of duplicates, "
        f"{counted(len(found.contradictions), 'contradiction')}, "
        f"{len(found.decay)} past their use, {len(found.stale)} may be stale "
        f"({counted(found.compared, 'near pair')} read in {found.seconds:.1f} s)"
    ]
    if found.duplicates:
        lines.append("duplicates (--apply merges each group, keeping the text marked *):")
        for group in found.duplicates:
            lines += [f"  {'*' if i.id == group.keep else ' '} {_line(i)}" for i in group.items]
    if found.contradictions:
        lines.append("contradictions (settle with `mem resolve A B --keep A|B|both`):")
        for c in found.contradictions:
            lines += [f"  A {_line(c.a)}", f"  B {_line(c.b)}", f"      {c.reason}"]
    if found.decay:
        lines.append("past their use (--apply archives them):")
        lines += [f"  {_line(a.item)}  [{a.why} since {iso(a.since)[:10]}]" for a in found.decay]
    if found.stale:
        lines.append("may be stale (their code changed; shown only):")
        for s in found.stale:
            changes = ", ".join(
                _file_text(f.path, f.changed, f.gone, f.anchored_at) for f in s.files
            )
            lines.append(f"  {_line(s.item)}  [{changes}]")
    if applied is None:
        if found.duplicates or found.decay:
            lines.append("nothing was changed: --apply merges and archives (each undoable)")
    else:
        lines += [f"done {e.id}: {_entry_text(e)}" for e in applied.done]
        lines += [f"skipped {' '.join(ids)}: {why}" for ids, why in applied.skipped]
    return "\n".join(lines)


def _file_text(path: str, changed: float, gone: bool, since: float) -> str:
    """``PATH changed since DATE`` as recall and consolidation say it of an anchored file."""
    if gone:
        return f"{path} is gone"
    return f"{path} changed ({changed:.0%} of its lines) since {iso(since)[:10]}"


def _line(item: "Item") -> str:
    text = item.text if len(item.text) <= 100 else item.text[:99] + "\u2026"
    return f"{item.id[:10]}  {text}"


def _entry_json(entry: "Entry") -> dict[str, Any]:
    return {
        "id": entry.id,
        "at": iso(entry.at),
        "action": entry.action,
        "item_ids": list(entry.item_ids),
        "result_id": entry.result_id,
        "reason": entry.reason,
        "undone_at": None if entry.undone_at is None else iso(entry.undone_at),
    }


def _entry_text(entry: "Entry") -> str:
    acted = ", ".join(item_id[:10] for item_id in entry.item_ids)
    if entry.action == "merge":
        return f"merged {acted} into {(entry.result_id or '')[:10]}"
    if entry.action == "archive":
        return f"archived {acted} ({entry.reason})"
    return f"resolved {acted}: {entry.reason}"


def _log_text(entries: "list[Entry]") -> str:
    if not entries:
        return "the consolidation journal is empty"
    lines = []
    for entry in entries:
        undone = f"  (taken back {iso(entry.undone_at)[:16]})" if entry.undone_at else ""
        lines.append(f"{entry.id}  {iso(entry.at)[:16]}  {_entry_text(entry)}{undone}")
    return "\n".join(lines)
