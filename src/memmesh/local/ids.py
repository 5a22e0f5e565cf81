"""Item ids: ULIDs, sortable by creation time and unique without coordination."""

import os
import time

__all__ = ["is_valid_id", "new_id"]

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
