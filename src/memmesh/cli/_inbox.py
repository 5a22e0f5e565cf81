"""`mem inbox`: candidate memories waiting for review, and notes files proposed to it.

Registered in :mod:`memmesh.cli.local`; the inbox is :mod:`memmesh.local.inbox`, notes files
are cut into candidates by :mod:`memmesh.agents.notes` (both imported when a command runs).
Nothing here publishes anything: an accepted candidate is an ordinary private item.
"""

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memmesh.cli import _ingest
from memmesh.cli._common import command_adder, emit, lazy, nonempty, open_store, shown_id, warn
from memmesh.cli._input import text_argument
from memmesh.cli.errors import UsageError
from memmesh.errors import ExitCode
from memmesh.local.inbox_review import (
    EMPTY,
    about_of,
    accepted_line,
    accepted_summary,
    project_for,
    redacted_notice,
    rejected_notice,
    secrets_named,
    source_of,
)
from memmesh.local.items import KINDS
from memmesh.text import printable

if TYPE_CHECKING:
    from memmesh.local.inbox import Candidate, Planned
    from memmesh.local.store import Store

__all__ = ["register", "run_accept", "run_add_notes", "run_edit", "run_list", "run_reject"]

_INBOX = (
    "List the candidate memories waiting for review, newest first: each with its id, "
    "proposed kind and project, and where it came from (file:line, under which heading). "
    "Candidates never become memories on their own: accept, edit or reject each. Nothing is "
    "ever published from the inbox; an accepted candidate is an ordinary private item."
)
_ID = "candidate id (as `mem inbox` shows it), or a unique prefix of at least 4 characters"


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add `mem inbox` and its subcommands, and `mem ingest`, to the `mem` parser."""
    _ingest.register(commands)
    group = command_adder(commands)(
        "inbox", lazy("memmesh.cli._inbox", "run_list"), _INBOX, "mem inbox --json"
    )
    command = command_adder(group.add_subparsers(title="inbox commands", metavar="COMMAND"))
    p = command(
        "accept",
        lazy("memmesh.cli._inbox", "run_accept"),
        "Accept a candidate: it becomes an ordinary private item (never published from here) "
        "of its proposed kind and project, or those given. A fact the store knows already "
        "is reinforced instead, and says so. With --all, every pending candidate.",
        "mem inbox accept 01J9ZC4XQM --kind decision",
    )
    p.add_argument("id", nargs="?", help=_ID)
    p.add_argument("--all", action="store_true", help="accept every pending candidate")
    p.add_argument(
        "--dry-run", action="store_true", help="with --all: only list what would be created "
        "and what reinforced; nothing changes",
    )  # fmt: skip
    p.add_argument("--kind", choices=KINDS, help="the item's kind (default: the proposed one)")
    p.add_argument(
        "--project", metavar="P", type=nonempty, help="the item's project (default: the "
        "proposed one, else $MEM_PROJECT, else the enclosing git repository, else global)",
    )  # fmt: skip
    p = command(
        "edit",
        lazy("memmesh.cli._inbox", "run_edit"),
        "Replace a pending candidate's text before accepting it. A secret in the new text is "
        "stored as [redacted: <kind>], as mem remember does; a warning says so.",
        'mem inbox edit 01J9ZC4XQM "Staging deploys run from main"',
    )
    p.add_argument("id", help=_ID)
    p.add_argument("text", help="the new text; - reads it from standard input")
    p = command(
        "reject",
        lazy("memmesh.cli._inbox", "run_reject"),
        "Reject a candidate: it leaves the inbox, and the same text is not proposed again. "
        "With --all, every pending candidate (the inbox is then empty).",
        "mem inbox reject 01J9ZC4XQM",
    )
    p.add_argument("id", nargs="?", help=_ID)
    p.add_argument("--all", action="store_true", help="reject every pending candidate")
    p = command(
        "add-notes",
        lazy("memmesh.cli._inbox", "run_add_notes"),
        "Propose the bullets, short paragraphs and code blocks of notes files (notes.md, "
        "CLAUDE.md, AGENTS.md, .cursorrules) to the inbox, each with its heading and line and "
        "a guessed kind; secrets in them are redacted first. Nothing becomes an item until "
        "accepted. A file that cannot be read is named, and the others still go in (exit 1).",
        "mem inbox add-notes CLAUDE.md docs/notes.md --project billing",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="a notes file (Markdown or text)")
    p.add_argument(
        "--project", metavar="P", type=nonempty,
        help="the project proposed (default: the default project when accepted)",
    )  # fmt: skip


def _line(candidate: "Candidate", shown: str) -> str:
    project = candidate.project or "default project"
    head = f"{shown}  [{candidate.kind}, {project}]  {printable(source_of(candidate)) or '-'}"
    lines = [printable(line) for line in candidate.text.split("\n")]
    if about := about_of(candidate):
        lines.append(f"about: {printable(about)}")
    return head + "".join(f"\n    {line}" for line in lines)


def _shown(store: "Store", candidates: list["Candidate"]) -> dict[str, str]:
    from memmesh.local import inbox

    short = inbox.short_ids(store, [c.id for c in candidates])
    width = max(map(len, short.values()), default=0)
    return {c.id: short.get(c.id, c.id).ljust(width) for c in candidates}


def run_list(args: argparse.Namespace) -> int:
    from memmesh.local import inbox

    with open_store(args) as store:
        candidates = inbox.pending(store)
        shown = _shown(store, candidates)
    text = "\n".join(_line(c, shown[c.id]) for c in candidates)
    data = {"candidates": [c.to_dict() for c in candidates]}
    emit(args, data, text or EMPTY)
    return ExitCode.OK


def run_accept(args: argparse.Namespace) -> int:
    from memmesh.local import inbox

    if args.all == (args.id is not None):
        raise UsageError("inbox accept", "give a candidate's id, or --all (not both)")
    if args.dry_run and not args.all:
        raise UsageError("inbox accept", "--dry-run goes with --all")
    project_of = project_for(args.project)
    with open_store(args) as store:
        if args.id is not None:
            candidate = inbox.find(store, args.id)
            accepted, item, how = inbox.accept(
                store, candidate.id, kind=args.kind, project=project_of(candidate)
            )
            data: dict[str, Any] = {
                "candidate": accepted.to_dict(),
                "status": how,
                "item": item.to_dict(),
            }
            emit(args, data, accepted_line(shown_id(store, item.id), how, item.reinforcements))
            return ExitCode.OK
        pending = list(reversed(inbox.pending(store)))  # oldest first, as they came
        if args.dry_run:
            return _dry_run(args, store, inbox.plan(store, pending, project_of))
        done = [inbox.accept(store, c.id, kind=args.kind, project=project_of(c)) for c in pending]
        shown = _shown(store, [c for c, _, _ in done])
        items = {item.id: shown_id(store, item.id) for _, item, _ in done}
    data = {
        "accepted": [
            {"candidate": c.to_dict(), "status": how, "item": item.to_dict()}
            for c, item, how in done
        ]
    }
    lines = [f"{shown[c.id]}  {how} {items[item.id]}" for c, item, how in done]
    summary = accepted_summary([how for _, _, how in done])
    emit(args, data, "\n".join([*lines, summary]) if done else EMPTY)
    return ExitCode.OK


def _dry_run(args: argparse.Namespace, store: "Store", planned: list["Planned"]) -> int:
    shown = _shown(store, [p.candidate for p in planned])
    rows, lines = [], []
    for plan in planned:
        item = plan.item.id if plan.item else None
        would = "reinforce" if plan.item or plan.repeats else "create"
        rows.append(
            {"candidate": plan.candidate.id, "would": would, "item": item, "project": plan.project}
        )
        target = f" {shown_id(store, plan.item.id)}" if plan.item else ""
        if plan.repeats:
            target = f" what {shown[plan.repeats.id].strip()} creates"
        lines.append(f"{shown[plan.candidate.id]}  would {would}{target} [{plan.project}]")
    creates = sum(1 for r in rows if r["would"] == "create")
    summary = f"would create {creates}, reinforce {len(rows) - creates}; nothing was changed"
    emit(args, {"dry_run": True, "planned": rows}, "\n".join([*lines, summary]))
    return ExitCode.OK


def run_edit(args: argparse.Namespace) -> int:
    from memmesh.local import inbox
    from memmesh.policy.redaction import redact_text

    text = text_argument(args.text, "inbox edit")
    with open_store(args) as store:
        candidate, redacted = inbox.edit(store, args.id, text, redact=redact_text)
        shown = _shown(store, [candidate])[candidate.id]
    data: dict[str, Any] = {"candidate": candidate.to_dict()}
    if redacted:
        warn(redacted_notice(redacted), "secret_redacted")
        data["redacted"] = list(redacted)
    emit(args, data, f"edited {shown}")
    return ExitCode.OK


def run_reject(args: argparse.Namespace) -> int:
    from memmesh.local import inbox

    if args.all == (args.id is not None):
        raise UsageError("inbox reject", "give a candidate's id, or --all (not both)")
    with open_store(args) as store:
        targets = inbox.pending(store) if args.all else [inbox.find(store, args.id)]
        shown = _shown(store, targets)
        rejected = [inbox.reject(store, c.id) for c in targets]
    data = {"rejected": [c.to_dict() for c in rejected]}
    emit(args, data, rejected_notice([shown[c.id] for c in rejected], every=args.all))
    return ExitCode.OK


def run_add_notes(args: argparse.Namespace) -> int:
    from memmesh.agents.notes import propose_notes
    from memmesh.local.items import check_name

    project = check_name(args.project, "project") if args.project else ""
    with open_store(args) as store:
        reports = [propose_notes(store, Path(name), project) for name in args.files]
    files, lines = [], []
    for report in reports:
        if report.error:
            warn(report.error, "notes_unreadable")
        elif report.redacted:
            warn(f"{report.path}: redacted {secrets_named(report.redacted)}", "secret_redacted")
        skipped = [{"line": s.line, "reason": s.reason} for s in report.skipped]
        files.append(
            {
                "path": report.path, "error": report.error,
                "proposed": [c.to_dict() for c in report.proposed],
                "already_pending": report.already_pending, "skipped": skipped,
                "redacted": list(report.redacted),
            }
        )  # fmt: skip
        if not report.error:
            lines.append(
                f"{printable(report.path)}: proposed {len(report.proposed)}, already pending "
                f"{report.already_pending}, skipped {len(report.skipped)}"
                + "".join(f"\n    line {s.line}: {s.reason}" for s in report.skipped)
            )
    if any(r.proposed for r in reports):
        lines.append("review them with `mem inbox`")
    emit(args, {"files": files}, "\n".join(lines) or "nothing was added")
    return ExitCode.ERROR if any(r.error for r in reports) else ExitCode.OK
