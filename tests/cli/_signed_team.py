"""A team with a signed roster, made through the real command line: a real coordinator on
127.0.0.1 (served in this process), its first admin's code joined with `mem team join`, and
members invited and joined with `mem team invite` and `mem team join`."""

import subprocess
from pathlib import Path

import msgspec

from memmesh.coordinator.bootstrap import admin_join_code
from memmesh.coordinator.invites import JoinCode
from memmesh.net.presence import Roster
from memmesh.registry import load_identity
from tests._signed import signed_client
from tests.cli._output import json_of
from tests.conftest import MemRunner
from tests.team._team import TOKEN, Team

Result = subprocess.CompletedProcess[str]


class SignedTeam:
    """Homes under ``root`` for members of the loopback ``team``, run through `mem`."""

    def __init__(self, team: Team, root: Path) -> None:
        self.team = team
        self.root = root
        (root / "cwd").mkdir(parents=True, exist_ok=True)

    def mem(self, name: str) -> MemRunner:
        """`mem` for the home of ``name`` (a folder name: a second home of one member has
        another)."""
        return MemRunner(self.root / name, self.root / "cwd")

    def first_admin_code(self, name: str = "ada") -> str:
        """The code `mem coordinator serve` prints for the team's first admin."""
        assert self.team.host is not None
        code = admin_join_code(
            self.team.host.membership, self.root / "coordinator-data", url=self.url, pin=None,
            name=name,
        )  # fmt: skip
        assert code is not None, "the roster has a member already"
        return code.encode()

    @property
    def url(self) -> str:
        assert self.team.coordinator is not None
        return self.team.coordinator

    def start(self, name: str = "ada") -> MemRunner:
        """``name`` joins with the first admin's code: the signed roster starts."""
        (self.root / "coordinator-data").mkdir(exist_ok=True)
        runner = self.mem(name)
        joined = runner("team", "join", self.first_admin_code(name))
        assert joined.returncode == 0, joined.stderr
        return runner

    def invite(self, name: str, *, by: str = "ada", admin: bool = False) -> str:
        """A join code for ``name``, made by the admin ``by``."""
        flags = ["--admin"] if admin else []
        return str(json_of(self.mem(by)("team", "invite", name, *flags, "--json"))["code"])

    def join(self, name: str, *, by: str = "ada", home: str | None = None) -> MemRunner:
        """``name`` invited by ``by`` and joined from the home ``home`` (``name`` by default)."""
        code = self.invite(name, by=by)
        runner = self.mem(home or name)
        joined = runner("team", "join", code)
        assert joined.returncode == 0, joined.stderr
        return runner

    def key_id(self, home: str) -> str:
        return load_identity(self.root / home).key_id

    def coordinator_roster(self, home: str = "ada") -> Roster:
        """The roster as the coordinator serves it (asked as the member in ``home``)."""
        identity = load_identity(self.root / home)
        with signed_client(self.url, identity, team=self.team.team, token=TOKEN) as client:
            return client.get("/v1/members", Roster)


def with_root(code: str, root: str) -> str:
    """``code`` naming ``root`` as the signed roster's root instead of its own."""
    return msgspec.structs.replace(JoinCode.decode(code), root=root).encode()
