"""Reading, replacing and backing up a client's configuration files.

A file is read as bytes and decoded as they are, so line endings come back unchanged; it is
replaced at once (a client reads the old file or the new one, never half of one); and before
memmesh changes a file it copies it to ``NAME.memmesh-backup-STAMP``, of which the newest
:data:`BACKUPS_KEPT` per file are kept. A planned change is a :class:`FileChange`;
:func:`apply` makes a list of them, all or none.
"""

import difflib
import re
import shutil
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import msgspec

from memmesh._files import write_atomically
from memmesh.agents.errors import ConfigFileError

__all__ = [
    "BACKUPS_KEPT",
    "FileChange",
    "apply",
    "backup_path",
    "folder_left_empty",
    "old_backups",
    "read_text",
]

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


class FileChange(msgspec.Struct, frozen=True, kw_only=True):
    """One file of a client's configuration, before and after the install.

    ``remove``: the file goes instead of keeping ``after`` (memmesh created it, and nothing
    but memmesh's entries was in it). ``folder``: the path is a folder memmesh owns, removed
    (with the interpreter's cache of the plugin memmesh wrote in it) once nothing else is in
    it; ``before`` is then ``""`` when it is there.
    """

    path: Path
    before: str | None
    after: str
    what: str
    remove: bool = False
    folder: bool = False

    @property
    def changed(self) -> bool:
        """Whether the file would be written or removed (a missing file left empty is not)."""
        if self.before is None:
            return self.after != "" and not self.remove
        return self.remove or self.before != self.after

    def diff(self) -> str:
        """The change as a unified diff (empty when there is none); a folder's removal as one
        line."""
        if self.folder:
            return f"remove folder {self.path} (once empty)\n" if self.changed else ""
        return "".join(
            difflib.unified_diff(
                (self.before or "").splitlines(keepends=True),
                [] if self.remove else self.after.splitlines(keepends=True),
                fromfile=str(self.path) if self.before is not None else "/dev/null",
                tofile="/dev/null" if self.remove else str(self.path),
            )
        )


def apply(changes: list[FileChange], *, clock: Callable[[], float] = time.time) -> list[Path]:
    """Write (or remove) the changed files, each written one after backing it up; returns the
    backups made. Of each file's backups the newest :data:`BACKUPS_KEPT` are kept.

    All or nothing: if any file changed on disk since it was read, none is written (run again);
    if writing one fails, the files already written are put back as they were.
    """
    pending = [change for change in changes if change.changed]
    for change in pending:
        if _current(change) != change.before:
            raise ConfigFileError(str(change.path), "changed while memmesh was editing it")
    done: list[tuple[FileChange, Path | None]] = []
    try:
        for change in pending:
            done.append((change, _write(change, clock())))
    except OSError as exc:
        for written, backup in reversed(done):
            _restore(written, backup)
        raise ConfigFileError(str(change.path), exc.strerror or str(exc)) from None
    for change, _ in done:
        if change.folder:
            continue
        for old in old_backups(change.path.resolve(), BACKUPS_KEPT):
            with suppress(OSError):  # the files are written; an old backup left is no failure
                old.unlink()
    return [backup for _, backup in done if backup is not None]


def _current(change: FileChange) -> str | None:
    if change.folder:
        return "" if change.path.is_dir() else None
    return read_text(change.path)


def _write(change: FileChange, now: float) -> Path | None:
    """Back up (if it exists) and replace one file, or remove it; returns the backup."""
    if change.folder:
        _remove_folder(change.path)
        return None
    target = change.path.resolve()  # write through a symlink, keep the link
    if change.remove:
        target.unlink()  # nothing but memmesh's entries was in it: no backup to keep
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    mode = 0o600
    if change.before is not None:
        backup = backup_path(target, now)
        shutil.copy2(target, backup)
        mode = target.stat().st_mode & 0o777
    write_atomically(target, change.after, mode)
    return backup


def _remove_folder(folder: Path) -> None:
    """Remove ``folder`` if nothing but the cache of memmesh's ``__init__.py`` is left in it;
    a folder holding anything else stays as it is."""
    if not folder_left_empty(folder, set()):
        return
    cache = folder / "__pycache__"
    if cache.is_dir():
        for entry in cache.iterdir():
            entry.unlink()
        cache.rmdir()
    folder.rmdir()


def folder_left_empty(folder: Path, going: set[str]) -> bool:
    """Whether ``folder`` holds nothing once the files named ``going`` are gone, but for the
    interpreter's cache of the ``__init__.py`` memmesh wrote there."""
    try:
        entries = list(folder.iterdir())
        cache = folder / "__pycache__"
        cached = list(cache.iterdir()) if cache.is_dir() and not cache.is_symlink() else []
    except OSError:
        return False
    if any(entry.name not in {*going, "__pycache__"} for entry in entries):
        return False
    return all(entry.name.startswith("__init__.") and entry.suffix == ".pyc" for entry in cached)


def _restore(change: FileChange, backup: Path | None) -> None:
    target = change.path.resolve()
    if change.folder:
        target.mkdir(parents=True, exist_ok=True)
    elif change.remove:
        write_atomically(target, change.before or "", 0o600)
    elif backup is None:
        target.unlink(missing_ok=True)
    else:
        shutil.copy2(backup, target)
        backup.unlink()


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
