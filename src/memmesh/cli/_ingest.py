"""`mem ingest claude|codex PATH...`: coding agents' transcripts proposed to the inbox.

Registered by :mod:`memmesh.cli._inbox`; what a transcript proposes is
:mod:`memmesh.agents.transcripts` (imported when the command runs). Nothing becomes an item
until the member accepts it with `mem inbox accept`.
"""

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from memmesh.cli._common import command_adder, emit, lazy, nonempty, open_store, warn
from memmesh.cli._input import secrets_named
from memmesh.errors import ExitCode
from memmesh.text import counted, printable

if TYPE_CHECKING:
    from memmesh.agents.transcripts import Report

__all__ = ["register", "run_ingest"]


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add `mem ingest` to the `mem` parser."""
    p = command_adder(commands)(
        "ingest",
        lazy("memmesh.cli._ingest", "run_ingest"),
        "Propose what coding agents' session transcripts taught to the inbox: the user's "
        "stated rules and preferences (convention), decisions with their reason (decision), "
        "a failing command fixed by what ran in between (gotcha) and a changed command that "
        "worked after failures (command). Reads Claude Code's ~/.claude/projects/*/*.jsonl "
        "or Codex's ~/.codex/sessions/**/rollout-*.jsonl, never the assistant's prose; "
        "secrets are redacted first. Nothing becomes an item until accepted. A file that "
        "cannot be read is named, and the others still go in (exit 1); a line of one longer "
        "than 4 MiB or nested too deeply is skipped and named, and the rest goes in. With "
        "$MEM_EXTRACT_COMMAND, that program's candidates are added too.",
        "mem ingest claude ~/.claude/projects/-home-me-billing",
    )
    p.add_argument("client", choices=("claude", "codex"), help="the client that wrote them")
    p.add_argument(
        "paths", nargs="+", metavar="PATH", help="a transcript (.jsonl), or a folder: every "
        ".jsonl under it",
    )  # fmt: skip
    p.add_argument(
        "--project", metavar="P", type=nonempty, help="the project proposed (default: the "
        "name of the session's working folder)",
    )  # fmt: skip


def _report_line(report: "Report") -> str:
    decided = f", decided before {report.decided_before}" if report.decided_before else ""
    skipped = f", skipped {counted(len(report.skipped), 'line')}" if report.skipped else ""
    return (
        f"{printable(report.path)}: proposed {len(report.proposed)}, already pending "
        f"{report.already_pending}{decided}{skipped}"
    )


def _skipped_line(report: "Report") -> str:
    lines = ", ".join(f"line {s.line} ({s.reason})" for s in report.skipped)
    return f"{report.path}: skipped {lines}; the other lines were read"


def run_ingest(args: argparse.Namespace) -> int:
    from memmesh.agents.transcripts import Report, propose_transcript, transcript_files
    from memmesh.local.items import check_name

    project = check_name(args.project, "project") if args.project else None
    reports: list[Report] = []
    with open_store(args) as store:
        for name in args.paths:
            files = transcript_files(Path(name))
            if not files:
                reports.append(Report(name, error=f"{name}: a folder without .jsonl files"))
            reports += [propose_transcript(store, args.client, f, project) for f in files]
    rows, lines = [], []
    for report in reports:
        if report.error:
            warn(report.error, "transcript_unreadable")
        if report.skipped:
            warn(_skipped_line(report), "transcript_lines_skipped")
        if report.extract_error:
            warn(report.extract_error, "extract_failed")
        if report.redacted:
            warn(f"{report.path}: redacted {secrets_named(report.redacted)}", "secret_redacted")
        rows.append(
            {
                "path": report.path, "error": report.error,
                "extract_error": report.extract_error,
                "proposed": [c.to_dict() for c in report.proposed],
                "already_pending": report.already_pending,
                "decided_before": report.decided_before, "redacted": list(report.redacted),
                "skipped": [{"line": s.line, "reason": s.reason} for s in report.skipped],
            }
        )  # fmt: skip
        if not report.error:
            lines.append(_report_line(report))
    if any(r.proposed for r in reports):
        lines.append("review them with `mem inbox`")
    emit(args, {"files": rows}, "\n".join(lines) or "nothing was added")
    failed = any(r.error or r.extract_error for r in reports)
    return ExitCode.ERROR if failed else ExitCode.OK
