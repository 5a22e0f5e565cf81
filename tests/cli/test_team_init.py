"""`mem team init` writes only what every later command accepts, in a private home; file errors
anywhere end in one line and exit 1; a hostile team.yaml stops the team commands at once and
leaves the others working: the real command line, in a subprocess."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memmesh.errors import ExitCode
from tests.cli._output import error_line
from tests.conftest import MemRunner, mode_of

pytestmark = pytest.mark.timeout(60)


def _run(home: Path, *args: str, unprivileged: bool = False) -> subprocess.CompletedProcess[str]:
    """``mem --home HOME ARGS``; ``unprivileged``: without the power to write where file modes
    forbid it (root runs it without CAP_DAC_OVERRIDE)."""
    command = [sys.executable, "-m", "memmesh", "--home", str(home), *args]
    if unprivileged and os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv to give up CAP_DAC_OVERRIDE")
        command = [setpriv, "--bounding-set=-dac_override,-dac_read_search", *command]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=30, check=False, umask=0o022
    )


# -- arguments: refused at init, or accepted everywhere after; a private home ----------------


def test_init_with_a_name_holding_a_space_is_refused_and_writes_nothing(home: Path) -> None:
    refused = _run(home, "team", "init", "--name", "Ada Lovelace")
    assert refused.returncode == ExitCode.USAGE
    line = error_line(refused)
    assert line.startswith("mem team init: error: argument --name: 'Ada Lovelace' is not a")
    assert "no spaces (say Ada-Lovelace)" in line
    assert line.endswith("(see `mem team init --help`)")
    assert not home.exists()


def test_after_init_with_a_name_every_command_in_that_home_works(
    home: Path, mem: MemRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEM_AUTHOR")  # the name then comes from team.yaml
    assert _run(home, "team", "init", "--name", "Ada-Lovelace").returncode == 0
    for args in (
        ("remember", "The billing service retries webhooks 5 times", "--kind", "fact"),
        ("list", "--json"),
        ("recall", "webhooks"),
        ("team", "status"),
        ("team", "policy", "check"),
    ):
        result = mem(*args)
        assert result.returncode == 0, (args, result.stderr)
    assert '"author": "Ada-Lovelace"' in mem("list", "--json").stdout


def test_init_with_a_coordinator_without_a_scheme_suggests_https_and_writes_nothing(
    home: Path,
) -> None:
    refused = _run(home, "team", "init", "--name", "ada", "--coordinator", "team-host:8400")
    assert refused.returncode == ExitCode.USAGE
    assert error_line(refused) == (
        "mem team init: error: argument --coordinator: 'team-host:8400' is not a usable URL: "
        "only http:// and https:// URLs are contacted; did you mean https://team-host:8400? "
        "(see `mem team init --help`)"
    )
    assert not home.exists()


def test_init_makes_a_private_home_key_and_policy(tmp_path: Path) -> None:
    home = tmp_path / "new" / "home"
    assert _run(home, "team", "init", "--name", "ada").returncode == 0
    modes = {p.name: mode_of(p) for p in (home, *home.iterdir())}
    assert modes == {"home": 0o700, "identity.key": 0o600, "team.yaml": 0o600}
    assert mode_of(home.parent) == 0o700


# -- file errors: one line, exit 1 -----------------------------------------------------------


def _file_error(result: subprocess.CompletedProcess[str]) -> str:
    line = error_line(result)
    assert result.returncode == ExitCode.ERROR, line
    assert "internal error" not in line
    return line


@pytest.mark.parametrize(
    "args",
    [
        ("team", "init", "--name", "ada"),
        ("remember", "The billing service retries webhooks 5 times", "--kind", "fact"),
        ("list",),
        ("team", "policy", "check"),
        ("team", "status"),
    ],
)
def test_a_home_that_is_a_file_is_one_line_and_exit_1(tmp_path: Path, args: tuple[str]) -> None:
    home = tmp_path / "home"
    home.write_text("not a folder")
    line = _file_error(_run(home, *args))
    assert str(home) in line
    assert home.read_text() == "not a folder"


@pytest.mark.parametrize(
    "args", [("team", "init", "--name", "ada"), ("list",), ("team", "policy", "check")]
)
def test_a_home_inside_a_file_is_one_line_and_exit_1(tmp_path: Path, args: tuple[str]) -> None:
    (tmp_path / "file").write_text("")
    line = _file_error(_run(tmp_path / "file" / "home", *args))
    assert "Not a directory" in line


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("team", "init", "--name", "ada"), "Permission denied"),
        (("remember", "The billing service retries webhooks 5 times"), "Permission denied"),
        (("list",), "Permission denied"),
    ],
)
def test_an_unwritable_home_is_one_line_and_exit_1(
    tmp_path: Path, args: tuple[str], says: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o500)
    try:
        line = _file_error(_run(home, *args, unprivileged=True))
    finally:
        home.chmod(0o700)
    assert says in line
    assert list(home.iterdir()) == []


def test_an_unwritable_parent_is_one_line_and_exit_1(tmp_path: Path) -> None:
    parent = tmp_path / "parent"
    parent.mkdir()
    parent.chmod(0o500)
    try:
        line = _file_error(
            _run(parent / "home", "team", "init", "--name", "ada", unprivileged=True)
        )
    finally:
        parent.chmod(0o700)
    assert (
        line == f"mem: error: cannot create the memmesh home {parent / 'home'}: Permission denied"
    )


# -- a hostile team.yaml ---------------------------------------------------------------------


def _laughs() -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 9) + "]" for n in range(1, 9)]
    return "\n".join(lines) + "\npeers: *a8\n"


@pytest.mark.parametrize(
    "bomb",
    [
        pytest.param(_laughs(), id="billion-laughs"),
        pytest.param("peers: " + "[" * 5000 + "]" * 5000 + "\n", id="nested-5000"),
        pytest.param("peers: &loop [*loop]\n", id="self-alias"),
    ],
)
def test_a_team_yaml_bomb_leaves_mem_list_working_and_team_commands_refusing(
    home: Path, mem: MemRunner, bomb: str
) -> None:
    home.mkdir()
    (home / "team.yaml").write_text(bomb, encoding="utf-8")
    assert mem("remember", "The billing service retries webhooks 5 times").returncode == 0
    answering: list[tuple[str, ...]] = [("list",), ("recall", "how often are webhooks retried")]
    for args in answering:
        answered = mem(*args)
        assert answered.returncode == 0, answered.stderr
        assert "webhooks" in answered.stdout
    refusing: list[tuple[str, ...]] = [("team", "status"), ("team", "policy", "check")]
    for args in [*refusing, ("team", "publish", "x")]:
        refused = mem(*args)
        assert refused.returncode == ExitCode.REFUSED, refused.stderr
        line = error_line(refused)
        assert line.startswith(f"mem: error: {home / 'team.yaml'}:")
        assert "deeper than 32 levels" in line or "more than 10,000 values" in line
