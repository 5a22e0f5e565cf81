"""Re-embedding a store from the command line: `mem reindex`, `mem coordinator reindex`, and
the switch `mem team join` makes to the team's embedder; their progress on stderr, as every
long operation's (:func:`memmesh.cli._terminal.progress`: text mode only, never with
``--json``).
"""

import argparse
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from memmesh.cli._common import emit
from memmesh.cli._terminal import Progress, progress
from memmesh.cli.errors import UsageError
from memmesh.errors import ExitCode

if TYPE_CHECKING:
    from memmesh.local.store import Store

__all__ = ["reindex_progress", "reindexed", "run_coordinator_reindex"]


def reindexed(args: argparse.Namespace, store: "Store", embedder: str | None) -> int:
    """:meth:`Store.reindex` with ``embedder``, its progress on stderr; how many items."""
    with reindex_progress(args) as step:
        return store.reindex(embedder, step)


def reindex_progress(args: argparse.Namespace) -> AbstractContextManager[Progress | None]:
    """The progress of a reindex (:func:`~memmesh.cli._terminal.progress`): every item counts,
    an embedder being slow enough per item for one to be watched."""
    return progress(args, "re-embedding {}", "re-embedded {}")


def run_coordinator_reindex(args: argparse.Namespace) -> int:
    """`mem coordinator reindex`: re-embed the cache in ``--data``, which a running
    coordinator takes up at its next request (see :mod:`memmesh.coordinator._space`)."""
    from memmesh.coordinator.storage import CACHE_FOLDER
    from memmesh.local.store import DB_FILENAME, Store

    data = Path(args.data).expanduser()
    if not (data / DB_FILENAME).is_file() and (data / CACHE_FOLDER).is_dir():
        problem = (
            f"the coordinator of {args.data} keeps its state in PostgreSQL, whose vectors "
            "cannot be re-embedded in place yet (docs/operations.md, the coordinator on "
            "PostgreSQL)"
        )
        raise UsageError("coordinator reindex", problem)
    if not (data / DB_FILENAME).is_file():
        problem = f"{args.data} holds no coordinator data (no {DB_FILENAME})"
        raise UsageError("coordinator reindex", problem)
    with Store(data, author="coordinator", durable=True, repair=True) as store:
        count = reindexed(args, store, args.embedder)
        fingerprint = store.embedder.fingerprint
    text = f"{count} items now use {fingerprint}; a running coordinator takes it up at once"
    emit(args, {"reindexed": count, "embedder": fingerprint}, text)
    return ExitCode.OK
