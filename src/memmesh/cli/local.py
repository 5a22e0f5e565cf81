"""Commands on the private local store: remember, recall, show, list, and the rest."""

import argparse
import os
import sys
from typing import TYPE_CHECKING

from memmesh._embedders import EMBEDDER_NAMES
from memmesh.cli import _edit, _inbox, _transfer, _why
from memmesh.cli._common import (
    command_adder,
    emit,
    home_of,
    lazy,
    listed_text,
    nonempty,
    open_store,
    positive_int,
    shown_id,
    shown_ids,
    warn,
)
from memmesh.cli._holds import add_holds, holds_of, keep, validity_lines
from memmesh.cli._input import keep_secret_option, screened, text_argument
from memmesh.errors import ExitCode
from memmesh.local.items import GLOBAL, KINDS, iso
from memmesh.local.project import resolve_project
from memmesh.text import counted

if TYPE_CHECKING:
    from memmesh.local.items import Item

__all__ = ["register"]

_REMEMBER = (
    "Remember a fact, decision, gotcha or command. Prints the item's id. The same fact again "
    "reinforces the existing item instead of adding a copy (its kind stays; `mem edit` "
    "changes it)."
)
_ID = "item id, or a unique prefix of at least 4 characters"


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the local commands to the `mem` parser."""

    command = command_adder(commands)

    p = command(
        "remember",
        _remember,
        _REMEMBER,
        'mem remember "CI caches node_modules; bust it with CACHE_VERSION" --kind gotcha',
        description=_REMEMBER + " Ids are shown by their first 10 characters, more when "
        "another item shares them. A secret in the text (a token, a key, a password) is stored "
        "as [redacted: <kind>], and a tag holding one is dropped; a warning says so.",
    )
    p.add_argument("text", help="what to remember (at most 8 KiB); - reads it from standard input")
    p.add_argument("--kind", choices=KINDS, help="what sort of item (default: fact)")
    _project_options(p, allow_global=True)
    p.add_argument("--tag", action="append", default=[], metavar="T", help="a tag (repeatable)")
    keep_secret_option(p)
    add_holds(p)

    _why.add_recall(command, lambda parser: _project_options(parser, allow_global=False))

    p = command(
        "show",
        _show,
        "Show one item in full, by id or unique id prefix. A prefix several items share "
        "lists them.",
        "mem show 01J9",
    )
    p.add_argument("id", help=_ID)

    p = command(
        "list",
        _list,
        "List items, newest first. Without --project, every project's items are listed.",
        "mem list --project billing --kind decision",
    )
    p.add_argument("--project", metavar="P", type=nonempty, help="only items of project P")
    p.add_argument("--kind", choices=KINDS, help="only items of this kind")
    p.add_argument(
        "--status",
        choices=("active", "archived", "superseded", "all"),
        default="active",
        help="only items with this status (default: active)",
    )
    p.add_argument("--limit", type=positive_int, metavar="N", help="at most N items")

    p = command(
        "forget",
        _forget,
        "Archive an item: it stays in history but is never recalled again. If it was "
        "published, its publication is retracted: pushed at once with auto_sync, else at the "
        "next `mem team sync` (teammates see it until then).",
        "mem forget 01J9ZC4XQM",
    )
    p.add_argument("id", help=_ID)
    _edit.add_unforget(command, _ID)

    p = command(
        "revise",
        _revise,
        "Replace an item's text: a new item supersedes the old one, which is kept as history. "
        "Prints the new id. If the old one was published, it is retracted as by `mem forget`, "
        "and the new one is shared only once you publish it.",
        'mem revise 01J9ZC4XQM "Webhooks are retried 8 times, not 5"',
        description="Replace an item's text: a new item supersedes the old one, which is kept "
        "as history. Prints the new id. If the old one was published, it is retracted as by "
        "`mem forget`, and the new one is shared only once you publish it. A secret in the new "
        "text is stored as [redacted: <kind>], as mem remember does; a warning says so.",
    )
    p.add_argument("id", help=_ID)
    p.add_argument("text", help="the corrected text; - reads it from standard input")
    keep_secret_option(p)
    _edit.add_edit(command, _ID)
    _inbox.register(commands)

    p = command(
        "outcome",
        lazy("memmesh.cli._outcome", "run_outcome"),
        "Report whether acting on an item worked. Items that keep failing drop out of recall "
        "until their failures fade (counts halve every 90 days). A teammate's item that "
        "`mem team recall-team` gave you is credited too: the counts (never text) reach its "
        "author with the next `mem team sync` (at once with auto_sync). With --last instead "
        "of an id, for each item the newest answer showed (`mem recall`, an agent's recall, "
        "the session brief or the prompt hook), teammates' items from the team cache "
        "included.",
        "mem outcome 01J9ZC4XQM worked",
    )
    p.add_argument("id", nargs="?", help=_ID)
    p.add_argument("result", choices=("worked", "failed", "partial"))
    p.add_argument(
        "--last",
        action="store_true",
        help="credit every item the newest recall returned, instead of one id",
    )

    command("stats", _stats, "Summarise the store and its journal.", "mem stats --json")
    command(
        "doctor",
        _doctor,
        "Check the whole setup: the store (file, schema, embedder, indexes), the team "
        "(team.yaml, your key, whether the coordinator answers and accepts you, the team's "
        "embedder) and each coding agent client memmesh is installed into (its entries, and "
        "whether their command starts). Each problem says what to do. Exits 1 when something "
        "is wrong.",
        "mem doctor",
    ).add_argument(
        "--offline", action="store_true", help="do not ask the coordinator whether it answers"
    )
    p = command(
        "reindex",
        _reindex,
        "Re-embed every item, optionally switching the store to another embedder. Safe to "
        "interrupt: the old vectors stay in force until the end, and a rerun resumes.",
        "mem reindex --embedder e5-small",
    )
    p.add_argument(
        "--embedder", metavar="NAME", help=f"embedder to switch to ({', '.join(EMBEDDER_NAMES)})"
    )
    _transfer.add_transfer(command)


def _project_options(parser: argparse.ArgumentParser, *, allow_global: bool) -> None:
    what = "the project" if allow_global else "recall in project P (plus global)"
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--project",
        metavar="P",
        type=nonempty,
        help=f"{what} (default: $MEM_PROJECT, else the enclosing git repository, else global)",
    )
    if allow_global:
        group.add_argument("--global", dest="global_", action="store_true", help="a global item")


def _project(args: argparse.Namespace) -> str:
    if getattr(args, "global_", False):
        return GLOBAL
    return resolve_project(args.project)


def _remember(args: argparse.Namespace) -> int:
    project = _project(args)
    safe = screened(args, text_argument(args.text, "remember"), args.tag)
    with open_store(args) as store:
        holds = holds_of(args, store.clock())
        with store.transaction() as tx:
            item, status = store.remember(
                safe.text, kind=args.kind or "fact", project=project, tags=safe.tags, tx=tx
            )
            if holds.given:
                keep(tx, item.id, holds, store.clock())
        item = store.get(item.id) if holds.given else item
        shown = shown_id(store, item.id)
    data = {"id": item.id, "status": status, "item": item.to_dict()}
    safe.report(data)
    if status == "reinforced" and not getattr(args, "json", False):
        print(f"reinforced an existing item ({item.reinforcements}x)", file=sys.stderr)
    if args.kind not in (None, item.kind):
        warn(
            f"its kind stays {item.kind} (not {args.kind}); to change it: "
            f"`mem edit {shown} --kind {args.kind}`",
            "kind_kept",
        )
    emit(args, data, shown)
    return ExitCode.OK


def _show(args: argparse.Namespace) -> int:
    from memmesh.local import tallies
    from memmesh.local.anchors import note, staleness
    from memmesh.views import stale_json

    with open_store(args) as store:
        item = store.get(args.id)
        worked, failed, partial = tallies.team_records(store, [item.id]).get(item.id, (0, 0, 0))
        files = staleness(store, [item.id]).get(item.id, [])
    teammates = {"worked": worked, "failed": failed, "partial": partial}
    text = "\n".join([_item_text(item), *validity_lines(item)])
    for f in files:
        text += f"\nabout:          {f.path}" + (f" ({note([f])})" if f.stale else "")
    if worked or failed or partial:
        text += f"\nteammates:      worked {worked}, failed {failed}, partial {partial}"
    about = [stale_json(found) for found in files]
    emit(args, {"item": item.to_dict(), "teammates": teammates, "about": about}, text)
    return ExitCode.OK


def _item_text(item: "Item") -> str:
    lines = [
        f"id:             {item.id}",
        f"text:           {item.text}",
        f"kind:           {item.kind}",
        f"project:        {item.project}",
        f"tags:           {', '.join(item.tags) or '-'}",
        f"author:         {item.author}",
        f"status:         {item.status}",
        f"created:        {iso(item.created_at)}",
        f"updated:        {iso(item.updated_at)}",
        f"reinforcements: {item.reinforcements}",
        f"outcomes:       worked {item.worked:.2f}, failed {item.failed:.2f}, "
        f"partial {item.partial:.2f} (score {item.outcome_score:+.2f})",
    ]
    if item.supersedes:
        lines.append(f"supersedes:     {item.supersedes}")
    if item.superseded_by:
        lines.append(f"superseded by:  {item.superseded_by}")
    return "\n".join(lines)


def _list(args: argparse.Namespace) -> int:
    status = None if args.status == "all" else args.status
    with open_store(args) as store:
        items = store.items(project=args.project, kind=args.kind, status=status, limit=args.limit)
        shown = shown_ids(store, [i.id for i in items])
    text = "\n".join(
        f"{shown[i.id]}  [{i.kind}, {i.project}, {i.status}]  {listed_text(i.text, shown[i.id])}"
        for i in items
    )
    emit(args, {"items": [i.to_dict() for i in items]}, text or "no items")
    return ExitCode.OK


def _forget(args: argparse.Namespace) -> int:
    from memmesh.team.changes import forget

    with open_store(args) as store:
        forgotten = forget(home_of(args), store, args.id)
        shown = shown_id(store, forgotten.item.id)
    warn(forgotten.warning, "auto_sync")
    item = forgotten.item
    emit(args, {"id": item.id, "status": item.status, "item": item.to_dict()}, f"archived {shown}")
    return ExitCode.OK


def _revise(args: argparse.Namespace) -> int:
    from memmesh.team.changes import revise

    safe = screened(args, text_argument(args.text, "revise"), [])
    with open_store(args) as store:
        revised = revise(home_of(args), store, args.id, safe.text)
        shown = shown_id(store, revised.new.id)
    warn(revised.warning, "auto_sync")
    warn(revised.unshared, "revision_unshared")
    new = revised.new
    data = {"id": new.id, "status": "revised", "superseded": revised.old.id, "item": new.to_dict()}
    safe.report(data)
    emit(args, data, shown)
    return ExitCode.OK


def _stats(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        counts = store.counts()
        events = store.journal_summary()
    data = {"items": counts, "journal": events}
    by_status = counts["by_status"]
    latency = events["recall_latency_ms"]
    text = "\n".join(
        [
            "items:     "
            + (", ".join(f"{n} {status}" for status, n in sorted(by_status.items())) or "none"),
            "projects:  "
            + (", ".join(f"{p} ({n})" for p, n in sorted(counts["by_project"].items())) or "-"),
            "kinds:     "
            + (", ".join(f"{k} ({n})" for k, n in sorted(counts["by_kind"].items())) or "-"),
            f"recalls:   {events['recalls']} ({events['abstained']} abstained)"
            + (
                f", latency p50 {latency['p50']} ms, p95 {latency['p95']} ms"
                if events["recalls"]
                else ""
            ),
            "events:    " + (", ".join(f"{k} {n}" for k, n in events["events"].items()) or "-"),
        ]
    )
    emit(args, data, text)
    return ExitCode.OK


def _doctor(args: argparse.Namespace) -> int:
    from memmesh.cli._doctor import doctor

    return doctor(args)


def _reindex(args: argparse.Namespace) -> int:
    from memmesh.cli._reindex import reindexed

    with open_store(args, repair=True) as store:
        count = reindexed(args, store, args.embedder or os.environ.get("MEM_EMBEDDER"))
        fingerprint = store.embedder.fingerprint
    emit(
        args,
        {"reindexed": count, "embedder": fingerprint},
        f"{counted(count, 'item')} now embedded with {fingerprint}",
    )
    return ExitCode.OK
