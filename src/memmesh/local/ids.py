"""Item ids: ULIDs, sortable by creation time and unique without coordination; and the short
ids shown for them.

A ULID's first 10 characters are its creation time in milliseconds, the other 16 are random.
So a 7-character prefix, enough for git's random hashes, is shared by every item made within
the same 33 seconds or so: an id shown that short would become ambiguous as soon as the next
item was remembered. An id is shown by its first :data:`SHOWN_LENGTH` characters, or by more
when another item in the store shares them (two items made in the same millisecond), as git
lengthens an abbreviation until it is unique. Any unique prefix of at least
:data:`MIN_PREFIX` characters names an item.
"""

import os
import time
from collections.abc import Iterable

__all__ = ["MIN_PREFIX", "SHOWN_LENGTH", "is_valid_id", "new_id", "shortest_unique"]

SHOWN_LENGTH = 10  # the time part of a ULID, to the millisecond
MIN_PREFIX = 4
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_VALID = frozenset(_CROCKFORD)


def new_id(now: float | None = None) -> str:
    """A new 26-character ULID: 48 bits of milliseconds, then 80 random bits."""
    millis = int((time.time() if now is None else now) * 1000) & ((1 << 48) - 1)
    value = (millis << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def is_valid_id(text: str) -> bool:
    """Whether ``text`` is a well-formed ULID (upper-case Crockford base32)."""
    return len(text) == 26 and set(text) <= _VALID and text[0] in "01234567"


def shortest_unique(item_id: str, neighbours: Iterable[str | None]) -> str:
    """The id to show for ``item_id``: its shortest prefix of at least :data:`SHOWN_LENGTH`
    characters that none of ``neighbours`` starts with.

    ``neighbours`` are the ids just before and after it in sorted order (``None`` where there
    is none): no other id shares a longer prefix with it than one of those two.
    """
    length = SHOWN_LENGTH
    for other in neighbours:
        if other is not None:
            shared = next(
                (n for n, (a, b) in enumerate(zip(item_id, other, strict=False)) if a != b), 26
            )
            length = max(length, shared + 1)
    return item_id[:length]
