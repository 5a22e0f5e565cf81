"""Standard output that may not be there: a reader that went away (`mem list | head -0`), or
a command started with stdout closed (`mem remember TEXT >&-`). Neither is the command's
failure, so neither reaches the user as a traceback or an internal error."""

import io
import os
import sys

__all__ = ["discard", "ensure"]


def ensure() -> None:
    """Give a process started with stdout closed (``sys.stdout`` is None) one that discards
    what is written, so that the command still does its work."""
    if sys.stdout is None:
        sys.stdout = io.TextIOWrapper(io.FileIO(os.devnull, "w"), write_through=True)


def discard() -> None:
    """Send what stdout still buffers, and all it is given from now on, nowhere: its reader
    went away, and the flush at exit would otherwise fail once more."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real file (a test's capture): nothing
        pass
