"""Which client files memmesh created, so that uninstalling removes them once they are empty.

`mem hook install` notes each file it creates (``~/.cursor/hooks.json`` where there was none)
in ``agent-files.json`` in the memmesh home, before it writes anything. `mem hook uninstall`
removes a noted file that holds nothing else once memmesh's entries are gone; a file the user
had, or one they have since added to, stays. Without the record (another home, a damaged
record) every file stays, as a file the user had would.
"""

from collections.abc import Iterable
from pathlib import Path

import msgspec

from memmesh._files import FILE_MODE, private_folder, reason, write_atomically
from memmesh.agents.errors import ConfigFileError
from memmesh.agents.install import FileChange

__all__ = ["RECORD_FILENAME", "created_files", "note_changes"]

RECORD_FILENAME = "agent-files.json"


class _Record(msgspec.Struct, frozen=True, kw_only=True):
    created: tuple[str, ...] = ()


def created_files(home: Path) -> frozenset[Path]:
    """The files memmesh noted as created from ``home``; none when there is no readable
    record (then every file is kept)."""
    try:
        record = msgspec.json.decode((home / RECORD_FILENAME).read_bytes(), type=_Record)
    except (OSError, msgspec.DecodeError):
        return frozenset()
    return frozenset(Path(path) for path in record.created)


def note_changes(home: Path, changes: Iterable[FileChange]) -> None:
    """Note the files ``changes`` create and forget those they remove, before they are
    applied (so a failed write leaves a note on a file that is not there, which removes
    nothing). :class:`ConfigFileError` when the record cannot be written."""
    before = created_files(home)
    after = set(before)
    for change in changes:
        if change.remove:
            after.discard(change.path)
        elif change.before is None and change.changed:
            after.add(change.path)
    if after == before:
        return
    path = home / RECORD_FILENAME
    text = msgspec.json.encode(_Record(created=tuple(sorted(map(str, after))))).decode()
    try:
        private_folder(home)
        write_atomically(path, text + "\n", FILE_MODE)
    except OSError as exc:
        raise ConfigFileError(str(path), reason(exc)) from None
