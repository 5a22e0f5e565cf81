"""team.yaml on disk: created private, an existing file keeps its mode, and a file that cannot
be read or written is a one-line :class:`PolicyFileError` (exit 1), never a raw ``OSError``."""

from pathlib import Path

import pytest

from memmesh.errors import ExitCode
from memmesh.policy import POLICY_FILENAME, load_policy
from memmesh.policy.config import read_policy_source, write_policy_source
from memmesh.policy.errors import PolicyError, PolicyFileError
from tests.conftest import mode_of

pytestmark = pytest.mark.usefixtures("usual_umask")


def test_a_new_team_yaml_is_0600_in_a_new_home_of_0700(tmp_path: Path) -> None:
    home = tmp_path / "new" / "home"
    path = write_policy_source(home, "team: a\n")
    assert mode_of(path) == 0o600
    assert (mode_of(home), mode_of(home.parent)) == (0o700, 0o700)


def test_an_existing_home_and_team_yaml_keep_their_modes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    path = home / POLICY_FILENAME
    path.write_text("team: a\n")
    path.chmod(0o644)
    write_policy_source(home, "team: b\n")
    assert (mode_of(home), mode_of(path)) == (0o755, 0o644)
    assert read_policy_source(home) == "team: b\n"


def test_a_team_yaml_that_is_a_folder_is_a_file_error(tmp_path: Path) -> None:
    (tmp_path / POLICY_FILENAME).mkdir()
    with pytest.raises(PolicyFileError) as caught:
        load_policy(tmp_path)
    assert isinstance(caught.value, PolicyError)
    assert caught.value.exit_code == ExitCode.ERROR
    assert caught.value.message.startswith(
        f"cannot read {tmp_path / POLICY_FILENAME}: it is not a regular file"
    )


def test_a_home_under_a_file_is_a_file_error_on_read_and_write(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    home = tmp_path / "file" / "home"
    with pytest.raises(PolicyFileError) as read:
        load_policy(home)
    assert read.value.message == f"cannot read {home / POLICY_FILENAME}: Not a directory"
    with pytest.raises(PolicyFileError) as written:
        write_policy_source(home, "team: a\n")
    assert written.value.message == f"cannot write {home / POLICY_FILENAME}: Not a directory"
    assert "\n" not in written.value.message


def test_a_home_that_is_a_file_is_a_file_error_on_write(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_text("")
    with pytest.raises(PolicyFileError) as caught:
        write_policy_source(home, "team: a\n")
    assert caught.value.message == f"cannot write {home / POLICY_FILENAME}: File exists"
    assert home.read_text() == ""
