"""`mem export`, `mem import`, `mem backup` and `mem restore`: memory out of a home and in.

An export is a JSON Lines file (:mod:`memmesh.local.transfer`: every item with its history and
track record, for `mem import` into another home) or one Markdown file to read, commit or
paste into an agent. A backup is a copy of the store file (:mod:`memmesh.local.backup`), which
`mem restore` puts back. Long exports and imports show their progress on stderr, in text mode
(:func:`memmesh.cli._terminal.progress`).
"""

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memmesh.cli._common import (
    Command,
    emit,
    home_of,
    lazy,
    nonempty,
    open_store,
    positive_int,
    shown_ids,
    warn,
)
from memmesh.cli._input import keep_secret_option, secrets_named
from memmesh.cli._terminal import progress
from memmesh.cli.errors import UsageError
from memmesh.errors import ExitCode
from memmesh.local.items import GLOBAL, KINDS, Item
from memmesh.text import counted

if TYPE_CHECKING:
    from memmesh.local.transfer import Imported

__all__ = ["add_transfer", "markdown_of", "screen"]

_STATUSES = ("active", "archived", "superseded", "all")
# Exports and imports of fewer items than this go by too fast for their progress to show.
_WATCHED = 1000
_LISTED = 20  # conflicts named one by one in the summary, at most
_MODULE = "memmesh.cli._transfer"


def add_transfer(command: Command) -> None:
    """Add `mem export`, `mem import`, `mem backup` and `mem restore` to the parser."""
    p = command(
        "export",
        lazy(_MODULE, "run_export"),
        "Write your items out: --format jsonl (the default) every item with its history, "
        "track record and tags, for `mem import` into another home; --format markdown the "
        "active items as one readable file, by project and kind. To standard output, or -o.",
        "mem export -o memory.jsonl\n  mem export --format markdown --project billing -o notes.md",
        json_shape='{"exported", "format", "file"} (needs -o)',
    )
    p.add_argument("--format", choices=("jsonl", "markdown"), default="jsonl")
    p.add_argument("--project", metavar="P", type=nonempty, help="only items of project P")
    p.add_argument(
        "--status",
        choices=_STATUSES,
        help="only items with this status (default: all for jsonl, active for markdown)",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (0600), not stdout")

    p = command(
        "import",
        lazy(_MODULE, "run_import"),
        "Import a `mem export` JSON Lines file: its items keep their ids, history and track "
        "records, and are embedded with this store's embedder. An id already here is never "
        "overwritten; the same text under another id reinforces the item here; importing "
        "again adds nothing. A malformed line stops it, naming the line, before anything is "
        "stored. A secret in a text is stored as [redacted: <kind>], as by mem remember. Any "
        "other file (notes.md, CLAUDE.md, AGENTS.md, .cursorrules) is read as notes: its "
        "bullets and short paragraphs become candidates in the review inbox (`mem inbox`), "
        "as by `mem inbox add-notes`; none is an item until accepted.",
        "mem import memory.jsonl",
        json_shape='{"file", "created", "reinforced", "skipped", "redacted", "reasons", '
        '"reinforced_items": [{"id", "from"}], "conflicts"}',
    )
    p.add_argument("file", help="a .jsonl file `mem export` wrote, or a notes file")
    p.add_argument(
        "--project",
        metavar="P",
        type=nonempty,
        help="for a notes file: the project proposed for its candidates",
    )
    keep_secret_option(p)

    p = command(
        "backup",
        lazy(_MODULE, "run_backup"),
        "Copy the store file, consistently even while it is in use, into DEST (default "
        "$MEM_HOME/backups/, 0700) as memory-<UTC time>.db (0600); only the newest --keep "
        "of those copies stay (no other file there is removed).",
        "mem backup --keep 10",
        json_shape='{"backup", "pruned"}',
    )
    p.add_argument("dest", nargs="?", help="the folder to copy into")
    p.add_argument("--keep", type=positive_int, default=5, metavar="N", help="default: 5")

    p = command(
        "restore",
        lazy(_MODULE, "run_restore"),
        "Put a backup in place of the store. The file must be a memmesh store of a schema "
        "this memmesh reads, pass SQLite's integrity check and hold no trigger, view or table "
        "memmesh does not make; the current store is kept as "
        "memory.db.before-restore-<time>. Refused while another process (a peer daemon, "
        "an MCP server) holds the store; a warm prompt server is stopped first.",
        "mem restore ~/.memmesh/backups/memory-20261201T193552Z.db",
        json_shape='{"restored", "aside", "schema_version", "items"}',
    )
    p.add_argument("file", help="a store file `mem backup` wrote")


def run_export(args: argparse.Namespace) -> int:
    from memmesh._files import FILE_MODE, reason, write_atomically
    from memmesh.local.transfer import export_lines

    if args.output is None and getattr(args, "json", False):
        raise UsageError("export", "--json needs -o FILE: the export itself is the output")
    status = args.status or ("all" if args.format == "jsonl" else "active")
    wanted = None if status == "all" else status
    with open_store(args) as store:
        if args.format == "markdown":
            items = store.items(project=args.project, status=wanted)
            text, count = markdown_of(items, shown_ids(store, [i.id for i in items], pad=False))
        else:
            with progress(args, "exporting {}", "exported {}", at_least=_WATCHED) as step:
                lines = list(
                    export_lines(store, project=args.project, status=wanted, progress=step)
                )
            text, count = "".join(line + "\n" for line in lines), len(lines) - 1
    if args.output is None:
        sys.stdout.write(text)
        return ExitCode.OK
    path = Path(args.output).expanduser()
    try:
        write_atomically(path, text, FILE_MODE)
    except OSError as exc:
        raise UsageError("export", f"cannot write {args.output}: {reason(exc)}") from None
    data = {"exported": count, "format": args.format, "file": str(path)}
    emit(args, data, f"exported {counted(count, 'item')} to {args.output}")
    return ExitCode.OK


def markdown_of(items: list[Item], shown: dict[str, str]) -> tuple[str, int]:
    """``items`` as one Markdown file, by project (global first) then kind, each a bullet
    (later lines indented under it) ending with its id as ``shown``; and how many."""
    from memmesh.local.transfer import MARKDOWN_TITLE

    lines = [f"# {MARKDOWN_TITLE}"]
    order = sorted(items, key=lambda i: (i.project != GLOBAL, i.project, KINDS.index(i.kind)))
    project = kind = None
    for item in order:
        if item.project != project:
            project, kind = item.project, None
            lines += ["", f"## {project}"]
        if item.kind != kind:
            kind = item.kind
            lines += ["", f"### {kind}", ""]
        lines += _bullet(item, shown[item.id])
    if not items:
        lines += ["", "(no items)"]
    return "\n".join(lines) + "\n", len(items)


def _bullet(item: Item, shown: str) -> list[str]:
    first, *rest = item.text.split("\n")
    end = (f"_({', '.join(item.tags)})_ " if item.tags else "") + f"`{shown}`"
    if not rest:
        return [f"- {first} {end}"]
    return [f"- {first}", *(f"  {line}".rstrip() for line in rest), f"  {end}"]


def _format_of(path: Path) -> str:
    """What kind of file ``path`` is, for the importer to choose: ``jsonl`` for a
    `mem export`, else ``notes`` (Markdown or text, proposed to the review inbox)."""
    if path.suffix.lower() in (".jsonl", ".json", ".ndjson") or _starts_as_export(path):
        return "jsonl"
    return "notes"


def _starts_as_export(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(64).lstrip().startswith(b'{"format": "memmesh-export"')
    except OSError:
        return False


def run_import(args: argparse.Namespace) -> int:
    from memmesh.local.transfer import import_file

    path = Path(args.file).expanduser()
    if not path.is_file():
        raise UsageError("import", f"no file {args.file}")
    if _format_of(path) == "notes":
        from memmesh.cli._inbox import run_add_notes

        args.files = [args.file]
        return run_add_notes(args)
    if args.project is not None:
        raise UsageError("import", "--project is for notes files; an export keeps its projects")
    with open_store(args) as store:
        with progress(args, "embedding {}", "embedded {}", at_least=_WATCHED) as step:
            done = import_file(
                store, path, screen=None if args.keep_secret else screen, progress=step
            )
        shown = shown_ids(store, [mine for mine, _ in done.reinforced], pad=False)
    _warn_secrets(args, path, done)
    data = _summary(path, done)
    emit(args, data, _summary_text(args.file, done, data, shown))
    return ExitCode.OK


def screen(text: str, tags: tuple[str, ...]) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """The import's screen: ``text`` and ``tags`` as `mem remember` stores them."""
    from memmesh.policy import find_secrets, redact

    if not find_secrets("\n".join([text, *tags])):
        return text, tags, ()  # most items: one pass over everything, instead of one per part
    clean = redact(text, tags)
    return clean.text, clean.tags, clean.detectors


def _warn_secrets(args: argparse.Namespace, path: Path, done: "Imported") -> None:
    if done.redacted:
        detectors = [name for _, found in done.redacted for name in found]
        warn(
            f"redacted {secrets_named(detectors)} in {counted(len(done.redacted), 'item')} "
            "before storing them; to store them as written, add --keep-secret",
            "secret_redacted",
        )
    if args.keep_secret:
        from memmesh.policy import find_secrets

        created = set(done.created)
        with path.open("r", encoding="utf-8") as handle:
            kept = sum(1 for line in handle if created and find_secrets(line))
        if kept:
            warn(
                f"kept the secrets of up to {counted(kept, 'item')} as written: such an "
                "item can never be published",
                "secret_kept",
            )


def _summary(path: Path, done: "Imported") -> dict[str, Any]:
    reasons = Counter(reason for _, reason in done.skipped)
    return {
        "file": str(path),
        **done.counts(),
        "reasons": dict(reasons),
        "reinforced_items": [{"id": mine, "from": theirs} for mine, theirs in done.reinforced],
        "conflicts": [item_id for item_id, reason in done.skipped if "taken" in reason],
    }


def _summary_text(name: str, done: "Imported", data: dict[str, Any], shown: dict[str, str]) -> str:
    if not done.created and not done.reinforced:
        lines = [f"nothing new in {name}: {counted(len(done.skipped), 'item')} skipped"]
    else:
        lines = [
            f"imported {name}: {data['created']:,} created, {data['reinforced']:,} reinforced, "
            f"{data['skipped']:,} skipped"
        ]
    lines += [f"  {n:,} {reason}" for reason, n in data["reasons"].items()]
    lines += [
        f"  reinforced {shown.get(mine, mine)}: it says what {theirs} says"
        for mine, theirs in done.reinforced[:_LISTED]
    ]
    lines += [f"  not overwritten: {item_id}" for item_id in data["conflicts"][:_LISTED]]
    return "\n".join(lines)


def run_backup(args: argparse.Namespace) -> int:
    import time

    from memmesh.local.backup import backup

    folder = Path(args.dest).expanduser() if args.dest else home_of(args) / "backups"
    with open_store(args) as store:
        made = backup(store, folder, keep=args.keep, now=time.time())
    data = {"backup": str(made.path), "pruned": [str(p) for p in made.pruned]}
    gone = f" (removed {counted(len(made.pruned), 'older backup')})" if made.pruned else ""
    emit(args, data, f"backed up the store to {made.path}{gone}")
    return ExitCode.OK


def run_restore(args: argparse.Namespace) -> int:
    import time

    from memmesh.agents import warm
    from memmesh.local.backup import check_restorable, restore
    from memmesh.peer._disclosures import DISCLOSURES_SCHEMA
    from memmesh.registry._schema import REGISTRY_SCHEMA

    home = home_of(args)
    source = Path(args.file).expanduser()
    check_restorable(source)  # before stopping anything
    warm.stop(home, timeout=2.0)  # a cache of the store: it starts again with the next prompt
    # The tables a member's home keeps beside the store's own, which a backup may hold.
    schemas = (REGISTRY_SCHEMA, DISCLOSURES_SCHEMA)
    done = restore(home, source, now=time.time(), schemas=schemas)
    with open_store(args) as store:  # an older schema migrates here
        count = sum(store.counts()["by_status"].values())
    aside = None if done.aside is None else str(done.aside)
    data = {"restored": str(source), "aside": aside, "schema_version": done.version, "items": count}
    kept = f"; the store it replaced is kept as {done.aside.name}" if done.aside else ""
    emit(args, data, f"restored {args.file} ({counted(count, 'item')}){kept}")
    return ExitCode.OK
