"""The store's files are private: a home memmesh makes is 0700 (its missing parents too), and
the store file, its WAL and shared-memory files and its backups are 0600, whatever the umask.
A home or store file that already exists keeps the mode its user gave it."""

from pathlib import Path

import pytest

from memmesh.local.store import DB_FILENAME, Store
from tests.conftest import mode_of
from tests.local.test_migrations import _version_one_store

pytestmark = pytest.mark.usefixtures("usual_umask")


def test_a_new_home_and_its_missing_parents_are_0700(tmp_path: Path) -> None:
    home = tmp_path / "a" / "b" / "home"
    with Store(home, author="tester"):
        pass
    assert [mode_of(p) for p in (home, home.parent, home.parent.parent)] == [0o700] * 3


def test_the_store_file_its_wal_and_its_shared_memory_are_0600(home: Path) -> None:
    with Store(home, author="tester") as store:
        store.remember("The billing service retries webhooks 5 times", kind="fact")
        files = {p.name: mode_of(p) for p in home.iterdir()}
    assert {f"{DB_FILENAME}-wal", f"{DB_FILENAME}-shm"} <= set(files)
    assert files[DB_FILENAME] == 0o600
    assert files[f"{DB_FILENAME}-wal"] == 0o600
    assert files[f"{DB_FILENAME}-shm"] == 0o600


def test_an_existing_home_and_store_file_keep_their_modes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    with Store(home, author="tester"):
        pass
    (home / DB_FILENAME).chmod(0o640)
    with Store(home, author="tester") as store:
        store.remember("The billing service retries webhooks 5 times", kind="fact")
    assert (mode_of(home), mode_of(home / DB_FILENAME)) == (0o755, 0o640)


def test_an_existing_parent_folder_keeps_itsmode_of(tmp_path: Path) -> None:
    parent = tmp_path / "parent"
    parent.mkdir()
    parent.chmod(0o755)
    with Store(parent / "home", author="tester"):
        pass
    assert (mode_of(parent), mode_of(parent / "home")) == (0o755, 0o700)


def test_a_backup_before_a_migration_is_0600(home: Path) -> None:
    _version_one_store(home).chmod(0o644)
    with Store(home, author="tester"):
        pass
    (backup,) = home.glob(f"{DB_FILENAME}.v1-*.bak")
    assert mode_of(backup) == 0o600
    assert mode_of(home / DB_FILENAME) == 0o644


def test_the_team_cache_refresh_lock_is_0600_and_never_followed_through_a_link(
    home: Path, tmp_path: Path
) -> None:
    from memmesh.local import teamcache
    from memmesh.local.errors import CorruptDatabase

    home.mkdir()
    with teamcache.refresh_lock(home) as held:
        assert held
    assert mode_of(home / "agents.db.refresh.lock") == 0o600
    (home / "agents.db.refresh.lock").unlink()
    (home / "agents.db.refresh.lock").symlink_to(tmp_path / "elsewhere")
    with (
        pytest.raises(CorruptDatabase, match="it is a symbolic link"),
        teamcache.refresh_lock(home),
    ):
        pass
    assert not (tmp_path / "elsewhere").exists()
