"""`mem coordinator items` and `purge`: what the coordinator keeps for each member key, read
and erased on its data folder by its operator (while it runs or not)."""

import argparse
import contextlib
import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from memmesh.cli._common import Command, emit, lazy, nonempty
from memmesh.cli._database import add_database_option, database_of
from memmesh.cli._terminal import confirm
from memmesh.cli.errors import UsageError
from memmesh.errors import ExitCode
from memmesh.text import counted
from memmesh.views import held_item_json, key_holdings_json

if TYPE_CHECKING:
    from memmesh.coordinator.holdings import HeldItem, Holdings, KeyHoldings

__all__ = ["register_items"]

_KEY_HELP = "a member key (as in its envelopes) or its member id"


def register_items(command: Command) -> None:
    """Add `mem coordinator items` and `mem coordinator purge`."""
    p = command(
        "items",
        lazy("memmesh.cli._coordinator_items", "run_items"),
        "List what the coordinator keeps for each member key, or one key's items.",
        "mem coordinator items --data /var/lib/memmesh --member bob",
        description="List what the coordinator keeps for each member key (items, live and "
        "retracted, and bytes of text: what its quotas count), the largest first; with --key "
        "or --member, that key's items: id, live or retracted, version, bytes of text, when "
        "its author published it and when the coordinator stored it, and the start of its "
        "first line. Reads the data folder, whether the coordinator runs or not.",
        json_shape='{"keys": [{"key", "key_id", "name", "items", "text_bytes"}]} or {"key", '
        '"items": [{"item_id", "status", "version", "text_bytes", "published_at", "stored_at", '
        '"first_line"}]}; times are ISO 8601 UTC',
    )
    _data_and_key(p, required=False)

    p = command(
        "purge",
        lazy("memmesh.cli._coordinator_items", "run_purge"),
        "Erase every live item of one member key from the coordinator, for good.",
        "mem coordinator purge --data /var/lib/memmesh --key 3f2kq7xw9m4tz8pe --yes",
        description="Erase every live item of one member key from the coordinator: text, "
        "tags and vector leave its store, search and the changes feed in one transaction; "
        "the key can never bring one back by sending it again (only a newer version it "
        "publishes since is taken). Its tombstones stay; the key itself is not refused (for "
        "that, an admin revokes it: mem team revoke). Safe while the coordinator runs: the "
        "purge takes the store's write lock like a publish, and the running coordinator "
        "drops the items from memory at its next search. Asks first unless --yes; without a "
        "terminal to ask on, or with --json, it purges only with --yes.",
        json_shape='{"key", "purged"}',
    )
    _data_and_key(p, required=True)
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")


def _data_and_key(p: argparse.ArgumentParser, *, required: bool) -> None:
    p.add_argument("--data", required=True, type=nonempty, metavar="DIR", help="data folder")
    add_database_option(p)
    which = p.add_mutually_exclusive_group(required=required)
    which.add_argument("--key", type=nonempty, metavar="KEY", help=_KEY_HELP)
    which.add_argument(
        "--member", type=nonempty, metavar="NAME", help="the key of this member on the roster"
    )


def run_items(args: argparse.Namespace) -> int:
    with _holdings(args, "items") as holdings:
        if args.key is None and args.member is None:
            shares = holdings.keys()
            emit(args, {"keys": [key_holdings_json(s) for s in shares]}, _shares_text(shares))
            return ExitCode.OK
        key = holdings.find(key=args.key, member=args.member)
        items = holdings.items(key)
    emit(args, {"key": key, "items": [held_item_json(i) for i in items]}, _items_text(items))
    return ExitCode.OK


def run_purge(args: argparse.Namespace) -> int:
    with _holdings(args, "purge") as holdings:
        key = holdings.find(key=args.key, member=args.member)
        live = sum(1 for item in holdings.items(key) if item.status == "live")
        question = (
            f"Erase the {counted(live, 'live item')} of the key {key} from the coordinator, "
            "for good?"
        )
        confirm(args, "nothing was purged", lambda: question)
        purged = holdings.purge(key)
    text = f"purged {counted(purged, 'live item')} of the key {key}"
    emit(args, {"key": key, "purged": purged}, text)
    return ExitCode.OK


@contextlib.contextmanager
def _holdings(args: argparse.Namespace, name: str) -> Iterator["Holdings"]:
    """The holdings of the coordinator's data folder ``--data`` (which must hold its store:
    a mistyped folder is not made into an empty coordinator)."""
    from memmesh.coordinator.holdings import Holdings
    from memmesh.coordinator.storage import open_storage
    from memmesh.local.store import DB_FILENAME

    data = Path(args.data).expanduser()
    database = database_of(args, f"coordinator {name}")
    if database is None and not (data / DB_FILENAME).is_file():
        problem = f"{args.data} holds no coordinator data (no {DB_FILENAME})"
        raise UsageError(f"coordinator {name}", problem)
    store = open_storage(data, database=database)
    try:
        yield Holdings(store)
    finally:
        store.close()


def _when(moment: float | None) -> str:
    if moment is None:
        return "-"
    return datetime.datetime.fromtimestamp(moment, datetime.UTC).strftime("%Y-%m-%d %H:%M")


def _shares_text(shares: "list[KeyHoldings]") -> str:
    if not shares:
        return "the coordinator keeps no items"
    rows = [f"{'member id':<16}  {'name':<16}  {'items':>7}  {'text bytes':>11}  key"]
    rows += [
        f"{s.key_id:<16}  {s.name or '-':<16}  {s.items:>7,}  {s.text_bytes:>11,}  {s.key}"
        for s in shares
    ]
    return "\n".join(rows)


def _items_text(items: "list[HeldItem]") -> str:
    if not items:
        return "no items"
    rows = [f"{'id':<26}  {'status':<9}  {'v':>3}  {'bytes':>5}  {'published':<16}  "
            f"{'stored':<16}  first line"]  # fmt: skip
    for item in items:
        # The text is the member's, and may hold anything: control characters are escaped.
        line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in item.first_line)
        rows.append(
            f"{item.item_id:<26}  {item.status:<9}  {item.version:>3}  {item.text_bytes:>5}  "
            f"{_when(item.published_at):<16}  {_when(item.stored_at):<16}  {line}"
        )
    return "\n".join(rows)
