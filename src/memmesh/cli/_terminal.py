"""What a command shows or asks the person at the terminal: how far a long operation is, and
whether to go on with one that cannot be undone.

Both are for a person, so neither happens with ``--json``, whose stderr holds JSON lines only
(see :mod:`memmesh.cli._common`):

* **Progress** shows on stderr in text mode only: a line rewritten in place on a terminal,
  else one line once every step is done; an operation of fewer steps than it is given
  (``at_least``) goes by too fast to watch and shows none. Every long operation's progress
  goes through :func:`progress` (re-embedding, pushing registry entries).
* **Confirmation** (:func:`confirm`) is asked only on a terminal, and never with ``--json``:
  without one, the command does nothing and says to give ``--yes``, at once (it never waits on
  an input nobody types into).
"""

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from memmesh.cli._common import note
from memmesh.cli.errors import NotConfirmed

__all__ = ["MANY", "Progress", "confirm", "progress"]

Progress = Callable[[int, int], None]
# The steps an operation that is quick per step (an entry sent, an item published) takes
# before its progress is shown.
MANY = 50


@contextmanager
def progress(
    args: argparse.Namespace, doing: str, did: str, *, at_least: int = 1
) -> Iterator[Progress | None]:
    """The progress callback ``(done, total)`` of a long operation for ``args``' output mode
    (``None`` with ``--json``); ``doing`` and ``did`` say it, ``{}`` standing for ``done/total``
    (``"re-embedding {}"``). Nothing shows while ``total`` is under ``at_least``. The line is
    ended on leaving."""
    if getattr(args, "json", False):
        yield None
        return
    terminal = sys.stderr.isatty()
    shown: list[bool] = []

    def step(done: int, total: int) -> None:
        if total < at_least:
            return
        if terminal:
            print("\r" + doing.format(f"{done}/{total}"), end="", file=sys.stderr, flush=True)
            shown.append(True)
        elif done == total:
            print(did.format(f"{done}/{total}"), file=sys.stderr, flush=True)

    try:
        yield step
    finally:
        if shown:
            print(file=sys.stderr, flush=True)


def confirm(args: argparse.Namespace, undone: str, question: Callable[[], str]) -> None:
    """Go on only when ``--yes`` was given or ``question()`` is answered y[es] on the terminal.

    Raises :class:`NotConfirmed` (``undone``: what was not done, "nothing was purged") at once
    with ``--json`` or without a terminal on stdin, else on any other answer (none is no).
    ``question`` is called only when it is to be asked."""
    if getattr(args, "yes", False):
        return
    if getattr(args, "json", False):
        raise NotConfirmed(undone, "with --json nothing is asked: give --yes to go ahead")
    if sys.stdin is None or not sys.stdin.isatty():
        raise NotConfirmed(undone, "there is no terminal to ask on: give --yes to go ahead")
    note(f"{question()} [y/N] ", end="")
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise NotConfirmed(undone, "not confirmed (answer y, or give --yes)")
