"""The first admin's join code: a coordinator whose roster is empty makes one on start.

The code is written to ``DATA/admin-join-code`` (mode 0600) as well as printed, so that the
operator can read it later; a restart prints the same code while its invite is unused and
unexpired, and a new one (the old one then admits nobody) otherwise. The first admin joins
with it by signing the genesis of the team's signed roster. Once the roster has a member, or
is signed, the file is deleted on the next start.
"""

import contextlib
import os
from pathlib import Path

from memmesh.coordinator.errors import BadJoinCode
from memmesh.coordinator.invites import JoinCode
from memmesh.coordinator.membership import Membership

__all__ = ["ADMIN_CODE_FILENAME", "DEFAULT_ADMIN_NAME", "admin_join_code"]

ADMIN_CODE_FILENAME = "admin-join-code"
DEFAULT_ADMIN_NAME = "admin"


def admin_join_code(
    membership: Membership,
    data: Path,
    *,
    url: str,
    pin: str | None,
    name: str = DEFAULT_ADMIN_NAME,
) -> JoinCode | None:
    """The join code of the first admin's invite, written to ``data``; ``None`` (and the file
    deleted) once the roster has a member.

    ``url`` and ``pin`` are where and how members reach this coordinator (``pin``: the TLS
    certificate's, or ``None`` for plain http or a certificate from a public authority).
    """
    path = data / ADMIN_CODE_FILENAME
    made = membership.bootstrap(name, reuse=_earlier_secret(path, membership.team))
    if made is None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return None
    secret, expires_at = made
    code = JoinCode(
        url=url, team=membership.team, name=name, secret=secret, expires_at=expires_at, pin=pin,
        admin=True, start=True,
    )  # fmt: skip
    _write_private(path, code.encode() + "\n")
    return code


def _earlier_secret(path: Path, team: str) -> str | None:
    """The secret of the code in ``path``, if it holds one of ``team``'s."""
    try:
        # Its expiry is the database's business: it holds the invite.
        code = JoinCode.decode(path.read_text(encoding="utf-8"), now=0.0)
    except (OSError, UnicodeError, BadJoinCode):
        return None
    return code.secret if code.team == team else None


def _write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``, readable by its owner only from the first byte."""
    partial = path.with_name(path.name + ".partial")
    with contextlib.suppress(FileNotFoundError):
        partial.unlink()
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    partial.replace(path)
