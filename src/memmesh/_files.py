"""The files and folders memmesh creates are private to their user, whatever the umask.

A folder memmesh makes (the home and any missing parent of it) is ``0700``; a file it makes is
``0600`` from its first byte. A folder or file that already exists keeps the mode its user gave
it. Like :mod:`memmesh._urls`, this sits below every layer: each caller turns the ``OSError``
these raise into its own typed error (:func:`reason` words it).
"""

import errno
import os
import pwd
import stat
from pathlib import Path

__all__ = [
    "FILE_MODE",
    "FOLDER_MODE",
    "private_file",
    "private_folder",
    "reason",
    "refuse_link",
    "unsafe_folder",
    "write_atomically",
]

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def private_folder(path: Path) -> None:
    """Make ``path`` a folder, with its missing parents, each ``0700``; an existing folder is
    left as it is. Raises ``OSError``: ``FileExistsError`` when ``path`` is a file,
    ``NotADirectoryError`` when a parent is."""
    if path.is_dir():
        return
    parent = path.parent
    if parent != path and not parent.is_dir():
        if parent.exists() or parent.is_symlink():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(parent))
        private_folder(parent)
    try:
        path.mkdir(mode=FOLDER_MODE)
    except FileExistsError:
        if not path.is_dir():
            raise


def private_file(path: Path) -> bool:
    """Create ``path`` empty and ``0600`` unless something is there already (then nothing is
    touched); returns whether it was created. Raises ``OSError``."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def write_atomically(path: Path, text: str, mode: int) -> None:
    """Replace ``path`` with ``text`` at once (a reader sees the old file or the new, never half
    of one), with permissions ``mode``: written beside it, synced, renamed over it. Raises
    ``OSError``; the temporary file never stays behind."""
    import tempfile  # here: with random and shutil, 1 ms that a reading command never needs

    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        Path(temporary).chmod(mode)
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def refuse_link(path: Path) -> None:
    """Raise ``OSError`` (``ELOOP``) when ``path`` is a symbolic link: memmesh writes its files
    in place, never through a link, which may point anywhere (and a dangling one would have the
    file created where it points)."""
    if path.is_symlink():
        problem = "it is a symbolic link, which memmesh does not write through"
        raise OSError(errno.ELOOP, problem, str(path))


def unsafe_folder(folder: Path, found: os.stat_result) -> str:
    """What is wrong with ``folder`` (``found`` its ``lstat``), meant to be this user's alone,
    and what to do about it: another user's, one others may enter, or no folder."""
    if found.st_uid != os.getuid():
        try:
            owner = f"user {pwd.getpwuid(found.st_uid).pw_name} (id {found.st_uid})"
        except KeyError:
            owner = f"user id {found.st_uid}"
        return (
            f"{folder} belongs to {owner}, not to you; remove it (or set TMPDIR to a folder "
            "of your own), then try again"
        )
    if not stat.S_ISDIR(found.st_mode):
        return f"{folder} is not a folder; remove it, then try again"
    return (
        f"{folder} may be entered by other users; make it private (chmod 700 {folder}) or "
        "remove it, then try again"
    )


def reason(exc: OSError) -> str:
    """What went wrong, in the system's words ("Permission denied"), without the path."""
    return exc.strerror or str(exc)
