"""How much a daemon stores for each member key and in all (no server imports, so that the
CLI can read the defaults); the coordinator enforces them (``memmesh.coordinator.quotas``).

The defaults keep a coordinator of a team of 50 members with 5,000 items each at realistic
sizes under 1 GB of memory, and one member with a grudge under about 90 MB (docs/operations.md,
"Memory and quotas").
"""

import msgspec

__all__ = [
    "DEFAULT_MEMBER_BYTES",
    "DEFAULT_MEMBER_ITEMS",
    "DEFAULT_PRESENCES",
    "DEFAULT_TOTAL_BYTES",
    "DEFAULT_TOTAL_ITEMS",
    "Quotas",
]

_MIB = 1 << 20
DEFAULT_MEMBER_ITEMS = 10_000
DEFAULT_MEMBER_BYTES = 4 * _MIB
DEFAULT_TOTAL_ITEMS = 250_000
DEFAULT_TOTAL_BYTES = 64 * _MIB
# Members online at once, each with one presence: every member's recall-team verifies the list.
DEFAULT_PRESENCES = 1_000


class Quotas(msgspec.Struct, frozen=True, kw_only=True):
    """The most a daemon keeps.

    * ``member_items`` / ``member_bytes`` - for one member key: its items (live and
      retracted) and the UTF-8 bytes of its live items' text.
    * ``total_items`` / ``total_bytes`` - the same for every key together.
    * ``presences`` - unexpired presences (one per key): a key not online yet is refused past
      it, so that keys holding only the team token cannot make the list every member fetches
      and verifies grow without end.
    """

    member_items: int = DEFAULT_MEMBER_ITEMS
    member_bytes: int = DEFAULT_MEMBER_BYTES
    total_items: int = DEFAULT_TOTAL_ITEMS
    total_bytes: int = DEFAULT_TOTAL_BYTES
    presences: int = DEFAULT_PRESENCES
