"""Files memmesh created go when uninstalling leaves them empty; backups stop at three a file."""

import json
from pathlib import Path

import pytest

from memmesh.agents._files import BACKUPS_KEPT, old_backups
from memmesh.agents.created import RECORD_FILENAME, created_files, note_changes
from memmesh.agents.install import Client, apply, plan_install, plan_uninstall
from tests.agents.test_install import LAUNCH, MOVED, NOW, SAMPLES, _write
from tests.conftest import mode_of

CLIENTS: list[Client] = ["claude", "cursor", "codex"]


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    folder = tmp_path / "user"
    folder.mkdir()
    return folder


@pytest.fixture
def mem_home(tmp_path: Path) -> Path:
    return tmp_path / "memmesh"


def _install(client: Client, user_home: Path, mem_home: Path) -> None:
    changes = plan_install(client, LAUNCH, environ={}, user_home=user_home)
    note_changes(mem_home, changes)
    apply(changes, clock=lambda: NOW)


def _uninstall(client: Client, user_home: Path, mem_home: Path) -> list[Path]:
    created = created_files(mem_home)
    changes = plan_uninstall(client, created=created, environ={}, user_home=user_home)
    note_changes(mem_home, changes)
    return apply(changes, clock=lambda: NOW)


@pytest.mark.parametrize("client", CLIENTS)
def test_files_the_install_created_are_removed_with_no_backup(
    client: Client, user_home: Path, mem_home: Path
) -> None:
    _install(client, user_home, mem_home)
    assert len(created_files(mem_home)) == {"claude": 5, "cursor": 2, "codex": 2}[client]

    backups = _uninstall(client, user_home, mem_home)

    assert backups == []
    assert [path for path in user_home.rglob("*") if path.is_file()] == []
    assert created_files(mem_home) == frozenset()


@pytest.mark.parametrize("client", CLIENTS)
def test_files_the_user_had_stay_even_when_empty_again(
    client: Client, user_home: Path, mem_home: Path
) -> None:
    originals = _write(user_home, SAMPLES[client])
    _install(client, user_home, mem_home)
    assert not created_files(mem_home) & set(originals)

    _uninstall(client, user_home, mem_home)

    assert {path: path.read_bytes() for path in originals} == originals


def test_the_record_of_created_files_is_private(
    user_home: Path, mem_home: Path, usual_umask: None
) -> None:
    _install("cursor", user_home, mem_home)

    assert mode_of(mem_home) == 0o700
    assert mode_of(mem_home / RECORD_FILENAME) == 0o600


def test_without_the_record_every_file_stays(user_home: Path, mem_home: Path) -> None:
    _install("cursor", user_home, mem_home)
    (mem_home / RECORD_FILENAME).write_text("not json")

    _uninstall("cursor", user_home, mem_home)

    assert json.loads((user_home / ".cursor/mcp.json").read_text()) == {}
    assert json.loads((user_home / ".cursor/hooks.json").read_text()) == {"version": 1}


def test_a_dry_run_of_the_removal_shows_every_line_going(user_home: Path, mem_home: Path) -> None:
    _install("codex", user_home, mem_home)
    config = user_home / ".codex/config.toml"

    changes = plan_uninstall(
        "codex", created=created_files(mem_home), environ={}, user_home=user_home
    )

    assert [change.remove for change in changes] == [True, True]
    diff = changes[0].diff()
    assert diff.startswith(f"--- {config}\n+++ /dev/null\n")
    assert all(line.startswith(("---", "+++", "@@", "-")) for line in diff.splitlines())


def test_a_created_file_reached_through_a_symlink_stays(
    user_home: Path, mem_home: Path, tmp_path: Path
) -> None:
    _install("cursor", user_home, mem_home)
    hooks = user_home / ".cursor/hooks.json"
    real = tmp_path / "dotfiles-hooks.json"
    hooks.rename(real)
    hooks.symlink_to(real)

    _uninstall("cursor", user_home, mem_home)

    assert hooks.is_symlink()
    assert json.loads(real.read_text()) == {"version": 1}


# -- backups ---------------------------------------------------------------------------------


def test_only_the_newest_backups_of_each_file_are_kept(user_home: Path) -> None:
    _write(user_home, SAMPLES["cursor"])
    made: list[Path] = []
    for turn in range(6):
        launch = MOVED if turn % 2 else LAUNCH
        changes = plan_install("cursor", launch, environ={}, user_home=user_home)
        made += apply(changes, clock=lambda: NOW)  # the same second: -2, -3, ... -10, -11

    for name in ("mcp.json", "hooks.json"):
        backups = sorted(p for p in (user_home / ".cursor").iterdir() if p.name != name)
        kept = [p for p in backups if p.name.startswith(name + ".")]
        assert len(kept) == BACKUPS_KEPT
        newest = [p for p in made if p.name.startswith(name + ".")][-BACKUPS_KEPT:]
        assert sorted(kept) == sorted(newest)


def test_backups_are_ordered_by_time_then_number_and_others_are_left_alone(
    tmp_path: Path,
) -> None:
    path = tmp_path / "hooks.json"
    names = [
        "hooks.json.memmesh-backup-20240101T000000",
        "hooks.json.memmesh-backup-20240101T000000-2",
        "hooks.json.memmesh-backup-20240101T000000-10",
        "hooks.json.memmesh-backup-20240102T000000",
        "hooks.json.memmesh-backup-20231231T235959-3",
        "hooks.json.memmesh-backup-20231231T235959.mine",  # not memmesh's name
        "other.json.memmesh-backup-20200101T000000",
    ]
    for name in names:
        (tmp_path / name).write_text("{}")

    assert [p.name for p in old_backups(path, keep=2)] == [
        "hooks.json.memmesh-backup-20231231T235959-3",
        "hooks.json.memmesh-backup-20240101T000000",
        "hooks.json.memmesh-backup-20240101T000000-2",
    ]
