"""What each service runs: the command line, the home named in it, and the names its unit
files take (the default home's plain, any other home's with a short suffix of its own)."""

import sys
from pathlib import Path

import pytest

from memmesh.cli.main import build_parser
from memmesh.service.units import (
    BACKUP_KEEP,
    KINDS,
    PEER_HOST,
    PEER_PORT,
    SCHEDULED,
    UI_PORT,
    backup_spec,
    consolidate_spec,
    peer_spec,
    service_id,
    this_mem,
    ui_spec,
)

MEM = ("/opt/memmesh/bin/mem",)


def test_the_default_homes_services_have_plain_names(user_home: Path) -> None:
    peer = service_id("peer", user_home / ".memmesh")

    assert (peer.stem, peer.label) == ("memmesh-peer", "dev.memmesh.peer")
    assert service_id("backup", Path("~/.memmesh")).stem == "memmesh-backup"


def test_another_home_gets_a_stable_suffix_of_its_own(user_home: Path, tmp_path: Path) -> None:
    first = service_id("peer", tmp_path / "work")
    again = service_id("peer", tmp_path / "work" / ".." / "work")
    second = service_id("peer", tmp_path / "play")

    assert first.stem.startswith("memmesh-peer-")
    assert len(first.suffix) == 8
    assert first.label == f"dev.memmesh.peer.{first.suffix}"
    assert again.stem == first.stem
    assert second.stem != first.stem


def test_the_peer_listens_for_teammates_names_its_home_and_is_not_restarted_once_revoked(
    user_home: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"

    spec = peer_spec(home, MEM, host=PEER_HOST, port=PEER_PORT, advertise=None)

    assert spec.argv == (
        *MEM, "--home", str(home), "team", "serve", "--host", PEER_HOST, "--port", "8410"
    )  # fmt: skip
    assert spec.final_exit == 3
    assert spec.schedule is None


def test_an_advertised_url_is_passed_to_the_peer(user_home: Path, tmp_path: Path) -> None:
    spec = peer_spec(tmp_path, MEM, host=PEER_HOST, port=9000, advertise="https://ada.lan:9000")

    assert spec.argv[-2:] == ("--advertise", "https://ada.lan:9000")


def test_the_page_keeps_a_fixed_port_and_opens_no_browser(user_home: Path, tmp_path: Path) -> None:
    spec = ui_spec(tmp_path, MEM, port=UI_PORT)

    assert spec.argv[-4:] == ("ui", "--no-browser", "--port", "8420")
    assert spec.final_exit is None


def test_the_backup_runs_on_a_schedule_and_keeps_n_copies(user_home: Path, tmp_path: Path) -> None:
    spec = backup_spec(tmp_path, MEM, keep=BACKUP_KEEP, every="weekly")

    assert spec.argv[-3:] == ("backup", "--keep", "10")
    assert spec.schedule == "weekly"


def test_consolidation_without_apply_only_reports_and_records_its_run(
    user_home: Path, tmp_path: Path
) -> None:
    spec = consolidate_spec(tmp_path, MEM, every="daily", apply=False)

    assert spec.argv == (*MEM, "--home", str(tmp_path), "consolidate", "--record")
    assert spec.schedule == "daily"
    assert spec.id.stem.startswith("memmesh-consolidate-")


def test_consolidation_with_apply_merges_and_archives(user_home: Path, tmp_path: Path) -> None:
    spec = consolidate_spec(tmp_path, MEM, every="hourly", apply=True)

    assert spec.argv[-3:] == ("consolidate", "--record", "--apply")
    assert spec.schedule == "hourly"


@pytest.mark.parametrize("apply", [False, True])
def test_the_consolidation_command_line_is_one_mem_accepts(tmp_path: Path, apply: bool) -> None:
    spec = consolidate_spec(tmp_path, MEM, every="daily", apply=apply)

    args = build_parser().parse_args(list(spec.argv[1:]))

    assert (args.home, args.record, args.apply) == (str(tmp_path), True, apply)


def test_scheduled_kinds_run_on_a_schedule_and_daemons_do_not(tmp_path: Path) -> None:
    specs = [
        peer_spec(tmp_path, MEM, host=PEER_HOST, port=PEER_PORT, advertise=None),
        ui_spec(tmp_path, MEM, port=UI_PORT),
        backup_spec(tmp_path, MEM, keep=BACKUP_KEEP, every="daily"),
        consolidate_spec(tmp_path, MEM, every="daily", apply=False),
    ]

    assert [spec.id.kind for spec in specs] == list(KINDS)
    assert [spec.id.kind for spec in specs if spec.id.scheduled] == list(SCHEDULED)
    assert all((spec.schedule is not None) == spec.id.scheduled for spec in specs)
    assert SCHEDULED == ("backup", "consolidate")


def test_this_mem_is_the_script_beside_this_python(tmp_path: Path) -> None:
    beside = Path(sys.executable).with_name("mem")

    assert this_mem() == (str(beside),)


def test_without_a_script_beside_python_it_runs_the_package(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    python = tmp_path / "python3"
    python.symlink_to(sys.executable)
    monkeypatch.setattr(sys, "executable", str(python))

    assert this_mem() == (str(python), "-m", "memmesh")
