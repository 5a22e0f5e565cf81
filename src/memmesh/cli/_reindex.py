"""Re-embedding a store from the command line: `mem reindex`, `mem coordinator reindex`, and
the switch `mem team join` makes to the team's embedder; their progress on stderr.

Progress is for the person at the terminal, so it shows in text mode only (never with
``--json``): a line rewritten in place on a terminal, else one line once every item is done.
"""

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from memmesh.cli._common import emit
from memmesh.cli.errors import UsageError
from memmesh.errors import ExitCode

if TYPE_CHECKING:
    from memmesh.local.store import Store

__all__ = ["reindex_progress", "reindexed", "run_coordinator_reindex"]


def reindexed(args: argparse.Namespace, store: "Store", embedder: str | None) -> int:
    """:meth:`Store.reindex` with ``embedder``, its progress on stderr; how many items."""
    with reindex_progress(args) as progress:
        return store.reindex(embedder, progress)


@contextmanager
def reindex_progress(args: argparse.Namespace) -> Iterator[Callable[[int, int], None] | None]:
    """The progress callback of a reindex for ``args``' output mode (``None`` with
    ``--json``); its line is ended on leaving."""
    if getattr(args, "json", False):
        yield None
        return
    terminal = sys.stderr.isatty()
    shown: list[bool] = []

    def progress(done: int, total: int) -> None:
        if terminal:
            print(f"\rre-embedding {done}/{total}", end="", file=sys.stderr, flush=True)
            shown.append(True)
        elif done == total:
            print(f"re-embedded {done}/{total}", file=sys.stderr, flush=True)

    try:
        yield progress
    finally:
        if shown:
            print(file=sys.stderr, flush=True)


def run_coordinator_reindex(args: argparse.Namespace) -> int:
    """`mem coordinator reindex`: re-embed the cache in ``--data``, which a running
    coordinator takes up at its next request (see :mod:`memmesh.coordinator._space`)."""
    from memmesh.local.store import DB_FILENAME, Store

    data = Path(args.data).expanduser()
    if not (data / DB_FILENAME).is_file():
        problem = f"{args.data} holds no coordinator data (no {DB_FILENAME})"
        raise UsageError("coordinator reindex", problem)
    with Store(data, author="coordinator", durable=True, repair=True) as store:
        count = reindexed(args, store, args.embedder)
        fingerprint = store.embedder.fingerprint
    text = f"{count} items now use {fingerprint}; a running coordinator takes it up at once"
    emit(args, {"reindexed": count, "embedder": fingerprint}, text)
    return ExitCode.OK
