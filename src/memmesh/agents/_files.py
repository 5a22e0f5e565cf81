"""Reading, replacing and backing up a client's configuration files.

A file is read as bytes and decoded as they are, so line endings come back unchanged; it is
replaced at once (a client reads the old file or the new one, never half of one); and before
memmesh changes a file it copies it to ``NAME.memmesh-backup-STAMP``, of which the newest
:data:`BACKUPS_KEPT` per file are kept.
"""

import re
import time
from pathlib import Path

from memmesh.agents.errors import ConfigFileError

__all__ = ["BACKUPS_KEPT", "backup_path", "old_backups", "read_text"]

BACKUPS_KEPT = 3
_BACKUP = ".memmesh-backup-"


def read_text(path: Path) -> str | None:
    """The file's text, or ``None`` when there is none; :class:`ConfigFileError` otherwise."""
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise ConfigFileError(str(path), "not UTF-8 text") from None
    except OSError as exc:
        raise ConfigFileError(str(path), exc.strerror or str(exc)) from None


def backup_path(path: Path, now: float) -> Path:
    """A name for a new backup of ``path`` taken at ``now``, next to it, after every backup
    there is: a second one in the same second gets ``-2``, then ``-3``, and so on."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
    taken = [number for when, number, _ in _backups(path) if when == stamp]
    if not taken:
        return path.with_name(f"{path.name}{_BACKUP}{stamp}")
    return path.with_name(f"{path.name}{_BACKUP}{stamp}-{max(taken) + 1}")


def old_backups(path: Path, keep: int = BACKUPS_KEPT) -> list[Path]:
    """memmesh's backups of ``path`` beyond the newest ``keep``, oldest first (files named
    otherwise, the user's own copies among them, are never listed)."""
    found = _backups(path)
    return [entry for _, _, entry in found[: max(len(found) - keep, 0)]]


def _backups(path: Path) -> list[tuple[str, int, Path]]:
    """memmesh's backups of ``path`` as (stamp, number, path), oldest first."""
    pattern = re.compile(re.escape(path.name + _BACKUP) + r"(\d{8}T\d{6})(?:-(\d+))?")
    found: list[tuple[str, int, Path]] = []
    try:
        for entry in path.parent.iterdir():
            match = pattern.fullmatch(entry.name)
            if match and entry.is_file() and not entry.is_symlink():
                found.append((match.group(1), int(match.group(2) or 1), entry))
    except OSError:
        return []
    return sorted(found)
