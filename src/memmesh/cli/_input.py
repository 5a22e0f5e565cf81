"""What a command is about to store: its text, from the command line or from standard input
(for ``-``), with the secrets in it and its tags redacted unless ``--keep-secret``.

The secrets are named as every front end names them
(:func:`memmesh.local.inbox_review.secrets_named`, given here to the commands too).
"""

import argparse
import sys
from typing import Any, NamedTuple

from memmesh.cli._common import warn
from memmesh.cli.errors import UsageError
from memmesh.local.inbox_review import redacted_notice, secrets_named
from memmesh.local.items import MAX_TEXT_BYTES

__all__ = [
    "STDIN_MAX",
    "Screened",
    "keep_secret_option",
    "screened",
    "secrets_named",
    "text_argument",
]

# What is read at most: a text at the limit with room around it; more is refused unread.
STDIN_MAX = 2 * MAX_TEXT_BYTES


def text_argument(value: str, command: str) -> str:
    """``value`` as given, or for ``-`` what standard input holds (UTF-8, not empty, at most
    :data:`STDIN_MAX` bytes; the store then holds the stripped text to 8 KiB).

    Raises :class:`UsageError`, naming ``command``'s help, for input it cannot take.
    """
    if value != "-":
        return value
    data = sys.stdin.buffer.read(STDIN_MAX + 1) if sys.stdin is not None else b""
    if len(data) > STDIN_MAX:
        raise UsageError(
            command,
            f"standard input holds more than {STDIN_MAX} bytes; the limit is {MAX_TEXT_BYTES} "
            "bytes (8 KiB): remember one fact at a time",
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UsageError(command, "standard input is not UTF-8 text") from None
    if not text.strip():
        raise UsageError(
            command, "standard input is empty: pipe the text in, or give it as an argument"
        )
    return text


def keep_secret_option(parser: argparse.ArgumentParser) -> None:
    """Give a command the ``--keep-secret`` option :func:`screened` reads."""
    parser.add_argument(
        "--keep-secret",
        action="store_true",
        help="store a detected secret as written, not redacted; the item can then never be "
        "published",
    )


class Screened(NamedTuple):
    """What is about to be stored, after :func:`screened`, and the detectors that fired."""

    text: str
    tags: list[str]
    redacted: tuple[str, ...]
    kept: list[str]

    def report(self, data: dict[str, Any]) -> None:
        """Warn of what was redacted or kept, and say it in ``data`` (the ``--json`` shape)."""
        if self.redacted:
            warn(
                f"{redacted_notice(self.redacted)}; to store the text as written, add "
                "--keep-secret",
                "secret_redacted",
            )
            data["redacted"] = list(self.redacted)
        if self.kept:
            kept = f"kept {secrets_named(self.kept)} as written: this item can never be published"
            warn(kept, "secret_kept")
            data["kept_secrets"] = self.kept


def screened(args: argparse.Namespace, text: str, tags: list[str]) -> Screened:
    """``text`` and ``tags`` with every detected secret redacted, unless ``--keep-secret``."""
    from memmesh.policy import find_secrets, redact

    if args.keep_secret:
        kept = [f.detector for f in find_secrets("\n".join([text, *tags]))]
        return Screened(text, tags, (), kept)
    clean = redact(text, tags)
    return Screened(clean.text, list(clean.tags), clean.detectors, [])
