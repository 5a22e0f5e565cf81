"""`mem coordinator migrate`: move a stopped coordinator from its SQLite file to a PostgreSQL
database, and check the move (:mod:`memmesh.coordinator.migration`)."""

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from memmesh.cli._common import Command, emit, lazy, nonempty
from memmesh.cli._terminal import progress
from memmesh.cli.errors import UsageError
from memmesh.errors import ExitCode
from memmesh.local.items import iso

if TYPE_CHECKING:
    from memmesh.coordinator.migration import Moved

__all__ = ["register_migrate", "run_migrate"]

_COMMAND = "coordinator migrate"


def register_migrate(command: Command) -> None:
    """Add `mem coordinator migrate`."""
    p = command(
        "migrate",
        lazy("memmesh.cli._coordinator_migrate", "run_migrate"),
        "Move a stopped coordinator from its SQLite file into a PostgreSQL database, and check "
        "the move.",
        "mem coordinator migrate --from /var/lib/memmesh --to postgresql://memmesh@db-host/memmesh",
        description="Move the coordinator whose data folder is --from into the PostgreSQL "
        "database --to: its roster (members in their order, invites, the signed roster), "
        "every item and tombstone at its cursor (members go on following the changes feed "
        "where they were), the vectors of live items, the marks of purges, tallies, the "
        "disclosure log and the embedder. Presence is not moved. Stop the coordinator first, "
        "every worker process of it: a data folder another process holds open is refused, "
        "and a coordinator that writes during the copy is reported (exit 1): stop it and run "
        "the same command again. A move that was killed or interrupted goes on where it "
        "stopped when run again. At the end every table is compared (its rows on both sides), "
        "every envelope's signature checked, the usage figures, roster and feed marks "
        "compared and the signed roster verified; it prints what it moved and the verdict "
        "(exit 1 when the check fails). A database holding any other data is refused (exit 2), "
        "and nothing is changed. Then serve the team from the database: mem coordinator serve "
        "--data DIR --database URL (the coordinator's key and TLS files stay in DIR); the "
        "nonces of the requests it answered lately move too, so none can be answered twice.",
        json_shape='{"source", "database", "team", "embedder", "rows": {"members", "invites", '
        '"roster_statements", "publications", "tombstones", "vectors", "purge_marks", '
        '"tallies", "disclosures"}, "earlier", "verdict", "problems", "moved_at", "before"}; '
        'verdict is "verified", "mismatch" or "source_changed"; moved_at is ISO 8601 UTC',
    )
    p.add_argument(
        "--from",
        dest="source",
        required=True,
        type=nonempty,
        metavar="DIR",
        help="the data folder of the coordinator to move (stopped)",
    )
    p.add_argument(
        "--to",
        dest="target",
        required=True,
        type=nonempty,
        metavar="URL",
        help="the PostgreSQL database to move it into (postgresql://USER@HOST/DBNAME): empty, "
        "or holding this move; the password from PGPASSWORD or ~/.pgpass",
    )


def run_migrate(args: argparse.Namespace) -> int:
    """`mem coordinator migrate`: the move, its progress on stderr, and its verdict."""
    from memmesh.coordinator.migration import Refused, migrate
    from memmesh.local.nonces import NonceFile

    data = Path(args.source).expanduser()
    with progress(args, "copying {} rows", "copied {} rows") as step:
        outcome = migrate(data, args.target, nonces=NonceFile(data), progress=step)
    if isinstance(outcome, Refused):
        raise UsageError(_COMMAND, outcome.problem)
    shown = {**msgspec.to_builtins(outcome), "moved_at": iso(outcome.moved_at)}
    emit(args, shown, _text(outcome, args.source))
    return ExitCode.OK if outcome.verdict == "verified" else ExitCode.ERROR


def _text(moved: "Moved", folder: str) -> str:
    """What a move did and its verdict, for the terminal."""
    from memmesh.coordinator.membership import when

    rows = moved.rows
    team = f"team {moved.team!r}, " if moved.team else ""
    done = f"moved on {when(moved.moved_at)}" if moved.before else "moved"
    lines = [
        f"{done}: {folder} into {moved.database} ({team}embedder {moved.embedder})",
        f"  members {rows['members']:,}, invites {rows['invites']:,}, "
        f"signed roster statements {rows['roster_statements']:,}",
        f"  live items {rows['publications']:,} (vectors {rows['vectors']:,}), "
        f"tombstones {rows['tombstones']:,}, purge marks {rows['purge_marks']:,}",
        f"  tallies {rows['tallies']:,}, disclosures {rows['disclosures']:,}",
    ]
    if moved.earlier:
        lines.append(f"  ({moved.earlier:,} rows were copied by an earlier run)")
    if moved.verdict == "source_changed":
        lines.append(
            "not finished: the coordinator wrote to its data folder during the copy; stop it "
            "(every worker process) and run this again, which starts the copy over"
        )
        return "\n".join(lines)
    if moved.verdict == "mismatch":
        lines.append("the check FAILED; do not serve from the database:")
        lines += [f"  - {problem}" for problem in moved.problems]
        return "\n".join(lines)
    lines += [
        "verified: every table holds the same rows, every envelope verifies, the usage "
        "figures, roster and feed marks are the same, the signed roster verifies",
        f"serve it with: mem coordinator serve --data {folder} --database {moved.database}"
        + (f" --team {moved.team}" if moved.team else ""),
    ]
    return "\n".join(lines)
