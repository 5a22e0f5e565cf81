"""The files memmesh writes in its home, through the real command line: never through a
symbolic link, and private to their user."""

import os
from pathlib import Path

import pytest

from tests.cli._output import error_line
from tests.conftest import MemRunner


def test_a_store_file_or_its_wal_that_is_a_symlink_is_refused_and_nothing_is_written_through(
    mem: MemRunner, home: Path, tmp_path: Path
) -> None:
    home.mkdir()
    target = tmp_path / "elsewhere.db"
    (home / "memory.db").symlink_to(target)

    refused = mem("remember", "Use uv, not pip")

    assert refused.returncode == 1
    assert error_line(refused) == (
        f"mem: error: {home / 'memory.db'} is not a usable memmesh store: it is a symbolic "
        "link, which memmesh does not write through; put the file itself there, or remove "
        "the link"
    )
    assert not target.exists()
    (home / "memory.db").unlink()
    (home / "memory.db-wal").symlink_to(tmp_path / "elsewhere.db-wal")
    assert mem("remember", "Use uv, not pip").returncode == 1
    assert not (tmp_path / "elsewhere.db-wal").exists()


def _long_home(tmp_path: Path) -> Path:
    """A home whose socket path is too long for a socket: the warm server's goes in $TMPDIR."""
    home = tmp_path / ("h" * 100)
    home.mkdir()
    return home


def test_a_squatted_socket_folder_is_refused_naming_it_its_owner_and_what_to_do(
    mem: MemRunner, tmp_path: Path
) -> None:
    home, temp = _long_home(tmp_path), tmp_path / "tmp"
    folder = temp / f"memmesh-{os.getuid()}"
    folder.mkdir(parents=True, mode=0o777)
    folder.chmod(0o777)
    env = {"TMPDIR": str(temp), "MEM_HOOK_WARM": "1"}
    mem("--home", str(home), "remember", "Use uv, not pip", home=False)

    refused = mem("--home", str(home), "hook", "warm", env=env, home=False)

    assert refused.returncode == 1
    assert error_line(refused) == (
        f"mem: error: the warm prompt server cannot start: {folder} may be entered by other "
        f"users; make it private (chmod 700 {folder}) or remove it, then try again"
    )


@pytest.mark.skipif(os.getuid() != 0, reason="giving a folder to another user needs root")
def test_a_socket_folder_of_another_user_is_refused_naming_its_owner(
    mem: MemRunner, tmp_path: Path
) -> None:
    home, temp = _long_home(tmp_path), tmp_path / "tmp"
    folder = temp / f"memmesh-{os.getuid()}"
    folder.mkdir(parents=True, mode=0o700)
    os.chown(folder, 54321, -1)
    env = {"TMPDIR": str(temp), "MEM_HOOK_WARM": "1"}
    mem("--home", str(home), "remember", "Use uv, not pip", home=False)

    refused = mem("--home", str(home), "hook", "warm", env=env, home=False)

    assert refused.returncode == 1
    assert error_line(refused) == (
        f"mem: error: the warm prompt server cannot start: {folder} belongs to user id 54321, "
        "not to you; remove it (or set TMPDIR to a folder of your own), then try again"
    )
