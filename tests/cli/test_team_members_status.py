"""What `mem team status` says about how a key gets on the team's roster: by joining with an
invite code (or an admin adding it), not by a list in team.yaml."""

from memmesh.registry import load_identity
from tests.conftest import MemRunner


def test_status_says_joining_with_a_code_puts_the_key_on_the_roster(mem: MemRunner) -> None:
    assert mem("team", "init", "--name", "ada", "--team", "acme").returncode == 0

    shown = mem("team", "status")

    assert shown.returncode == 0, shown.stderr
    key = load_identity(mem.home).public_key_text
    (line,) = [line for line in shown.stdout.splitlines() if line.startswith("public key")]
    assert "members: in team.yaml" not in line
    assert line == (
        f"public key {key} (joining with an invite code, mem team join CODE, puts it on the "
        "team's roster)"
    )


def test_status_help_says_how_a_key_gets_on_the_roster(mem: MemRunner) -> None:
    shown = " ".join(mem("team", "status", "--help").stdout.split())

    assert "members: in team.yaml" not in shown
    assert "joining with an invite code (mem team join CODE) puts it on the team's roster" in shown
