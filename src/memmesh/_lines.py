"""Lines of a file read with a bound on each: a longer line is passed over, never held whole.

Reading a JSON Lines file line by line still holds one whole line, and a file of one line of
a gigabyte would be held entire; :func:`bounded_lines` reads at most ``max_bytes`` of a line,
then reads on in small pieces to the next newline, dropping them.
"""

from collections.abc import Iterator
from typing import BinaryIO, NamedTuple

__all__ = ["Line", "bounded_lines"]

_PIECE = 64 * 1024


class Line(NamedTuple):
    """One line of the file (1-based ``number``); ``data`` is ``None`` for a line longer than
    the bound, which was passed over. ``data`` keeps its newline, if it had one."""

    number: int
    data: bytes | None


def bounded_lines(handle: BinaryIO, max_bytes: int) -> Iterator[Line]:
    """Each line of ``handle`` that holds at most ``max_bytes`` bytes (its newline aside),
    and ``None`` in place of each longer one."""
    number = 0
    while raw := handle.readline(max_bytes + 1):
        number += 1
        if raw.endswith(b"\n") or len(raw) <= max_bytes:
            yield Line(number, raw)
            continue
        while (rest := handle.readline(_PIECE)) and not rest.endswith(b"\n"):
            pass
        yield Line(number, None)
