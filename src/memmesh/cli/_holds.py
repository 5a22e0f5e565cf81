"""What keeps an item true, as the command line takes and shows it: the dates it holds between
(``--valid-from``, ``--until``), the files it speaks of (``--about``), and the warning that a
file changed since (docs/consolidation.md)."""

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from memmesh.local.items import iso

if TYPE_CHECKING:
    from memmesh.local import Item, Transaction
    from memmesh.local.anchors import Anchor

__all__ = [
    "Holds",
    "add_as_of",
    "add_holds",
    "as_of",
    "holds_of",
    "keep",
    "validity_lines",
]

_DATE = "YYYY-MM-DD[THH:MM] (UTC)"


class Holds(NamedTuple):
    """The dates and files given for an item."""

    valid_from: float | None
    valid_until: float | None
    anchors: "list[Anchor]"

    @property
    def given(self) -> bool:
        return self.valid_from is not None or self.valid_until is not None or bool(self.anchors)


def add_holds(parser: argparse.ArgumentParser) -> None:
    """Add ``--about``, ``--valid-from`` and ``--until`` to `mem remember`."""
    parser.add_argument(
        "--about",
        action="append",
        default=[],
        metavar="PATH[:LINES]",
        help="a file of a git repository the item speaks of, or its lines N or N-M "
        "(repeatable): when it changes enough, recall says the item may be stale",
    )
    parser.add_argument("--valid-from", metavar="DATE", help=f"it holds from DATE ({_DATE})")
    parser.add_argument(
        "--until", metavar="DATE", help=f"it holds until DATE, through that day ({_DATE})"
    )


def add_as_of(parser: argparse.ArgumentParser) -> None:
    """Add ``--as-of`` to `mem recall`."""
    parser.add_argument(
        "--as-of",
        metavar="DATE",
        help=f"answer as the store stood at the end of DATE ({_DATE}), by meaning alone",
    )


def as_of(args: argparse.Namespace) -> float | None:
    """``--as-of`` as Unix seconds, or ``None``: a date alone is its last moment (a
    microsecond before the next day, so that what starts the next day is not yet in force and
    what holds "until" that date still is)."""
    from memmesh.local.validity import parse_date

    given: str | None = args.as_of
    if given is None:
        return None
    moment = parse_date(given, end_of_day=True)
    return moment - 1e-6 if moment != parse_date(given) else moment


def holds_of(args: argparse.Namespace, now: float) -> Holds:
    """The dates and anchors `mem remember` was given, read and checked (the files as they
    are now); :class:`memmesh.local.InvalidInput` says what is wrong."""
    from memmesh.local.anchors import anchor_file, parse_about
    from memmesh.local.validity import parse_date

    start = None if args.valid_from is None else parse_date(args.valid_from)
    until = None if args.until is None else parse_date(args.until, end_of_day=True)
    anchors = []
    for spec in args.about:
        repo, path, first, last = parse_about(spec, Path.cwd())
        anchors.append(anchor_file(repo, path, first, last, now))
    return Holds(start, until, anchors)


def keep(tx: "Transaction", item_id: str, holds: Holds, now: float) -> None:
    """Give the item the dates and anchors of ``holds``, inside the caller's transaction."""
    from memmesh.local.anchors import save
    from memmesh.local.validity import set_validity

    if holds.valid_from is not None or holds.valid_until is not None:
        set_validity(tx, item_id, holds.valid_from, holds.valid_until, now)
    save(tx, item_id, holds.anchors)


def validity_lines(item: "Item") -> list[str]:
    """`mem show`'s lines for the dates the item holds between, and its co-authors."""
    lines = []
    if item.valid_from is not None or item.valid_until is not None:
        start = iso(item.valid_from) if item.valid_from is not None else "always"
        until = iso(item.valid_until) if item.valid_until is not None else "further notice"
        lines.append(f"holds:          from {start} until {until}")
    if item.coauthors:
        lines.append(f"co-authors:     {', '.join(item.coauthors)}")
    return lines
