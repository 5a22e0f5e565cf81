"""The quota flags of `mem coordinator serve`: the limits of what the coordinator stores."""

import argparse
import re

from memmesh.cli._common import positive_int
from memmesh.net.quotas import (
    DEFAULT_MEMBER_BYTES,
    DEFAULT_MEMBER_ITEMS,
    DEFAULT_PRESENCES,
    DEFAULT_TOTAL_BYTES,
    DEFAULT_TOTAL_ITEMS,
)

__all__ = ["byte_size", "quota_flags"]


def quota_flags(p: argparse.ArgumentParser) -> None:
    """The limits of what the coordinator stores (docs/operations.md, "Memory and quotas")."""
    limits = p.add_argument_group(
        "quotas", "publishes past them are refused whole (HTTP 413): see docs/operations.md"
    )
    for flag, default, what in (
        ("--member-items", DEFAULT_MEMBER_ITEMS, "items one member key keeps, live and retracted"),
        ("--member-bytes", DEFAULT_MEMBER_BYTES, "bytes of text in one key's live items"),
        ("--total-items", DEFAULT_TOTAL_ITEMS, "items of every key together"),
        ("--total-bytes", DEFAULT_TOTAL_BYTES, "bytes of text of every key together"),
        ("--presences", DEFAULT_PRESENCES, "members online at once (a new one past it: refused)"),
    ):
        counted = not flag.endswith("bytes")
        shown = f"{default:,}" if counted else _size_text(default)
        parse = positive_int if counted else byte_size
        metavar = "N" if counted else "SIZE"
        limits.add_argument(
            flag, type=parse, default=default, metavar=metavar, help=f"{what} ({shown})"
        )


_SIZES = {
    "": 1,
    "k": 1 << 10,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gib": 1 << 30,
}


def byte_size(value: str) -> int:
    """An argparse type: a size in bytes, ``4194304``, ``512K``, ``4M`` or ``1G`` (binary)."""
    match = re.fullmatch(r"([0-9]{1,12})\s*([a-z]*)", value.strip().lower())
    if match is None or match.group(2) not in _SIZES:
        raise argparse.ArgumentTypeError(f"{value!r} is not a size like 4194304, 512K, 4M or 1G")
    size = int(match.group(1)) * _SIZES[match.group(2)]
    if size < 1:
        raise argparse.ArgumentTypeError("must be 1 byte or more")
    return size


def _size_text(size: int) -> str:
    """``4194304`` as ``4M``, a size not a whole number of KiB as it is."""
    for unit, factor in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)
