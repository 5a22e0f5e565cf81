"""`mem team invite`, `join`, `members`, `revoke` and `disclosures` through the real command
line, against a real server: the stand-in for the coordinator's roster routes, and (once the
coordinator serves them) the real coordinator."""

import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memmesh.coordinator.invites import JoinCode, new_secret
from memmesh.coordinator.protocol import Disclosure
from memmesh.net.server import free_port
from memmesh.policy import POLICY_FILENAME, load_policy
from memmesh.registry import create_identity, load_identity
from memmesh.registry.identity import KEY_FILENAME
from memmesh.team import roster
from tests.cli._output import error_line, json_error, json_of
from tests.cli._standin import StandIn, serving
from tests.cli._terminal import on_terminal
from tests.conftest import MemRunner

Result = subprocess.CompletedProcess[str]


@pytest.fixture
def standin() -> Iterator[StandIn]:
    with serving(StandIn()) as running:
        yield running


@pytest.fixture
def admin(standin: StandIn, tmp_path: Path) -> MemRunner:
    """`mem` for a home that joined as the team's first admin."""
    return MemRunner(standin.join_admin(tmp_path / "admin"), tmp_path / "cwd")


def _runner(tmp_path: Path, name: str) -> MemRunner:
    return MemRunner(tmp_path / name, tmp_path / "cwd")


def _joined(tmp_path: Path, admin: MemRunner, name: str) -> MemRunner:
    """`mem` for a home that joined as ``name`` with an invite from ``admin``."""
    home = tmp_path / name
    policy, identity = load_policy(admin.home), load_identity(admin.home)
    roster.join(home, roster.invite(policy, identity, name).code)
    return MemRunner(home, tmp_path / "cwd")


def _untouched(home: Path) -> None:
    assert not (home / POLICY_FILENAME).exists()
    assert not (home / KEY_FILENAME).exists()


# -- a new laptop joins in two commands ---------------------------------------------------------


def test_a_new_laptop_joins_with_an_invite_in_two_commands(
    standin: StandIn, admin: MemRunner, tmp_path: Path
) -> None:
    invited = admin("team", "invite", "bob")
    assert invited.returncode == 0, invited.stderr
    code = invited.stdout.strip()
    assert re.fullmatch(r"memmesh-join:[A-Za-z0-9_-]+", code)
    assert "once" in invited.stderr
    assert "until" in invited.stderr
    bob = _runner(tmp_path, "bob")
    joined = bob("team", "join", code)
    assert joined.returncode == 0, joined.stderr
    assert joined.stdout.strip() == load_identity(bob.home).key_id
    assert "joined team acme as bob" in joined.stderr
    listed = json_of(bob("team", "members", "--json"))
    assert listed["enforced"] is True
    assert [(m["name"], m["admin"]) for m in listed["members"]] == [("admin", True), ("bob", False)]
    assert listed["members"][1]["key_id"] == joined.stdout.strip()
    assert listed["members"][1]["revoked_at"] is None


def test_join_reads_the_code_from_stdin(standin: StandIn, tmp_path: Path) -> None:
    bob = _runner(tmp_path, "bob")
    data = json_of(bob("team", "join", "-", "--json", stdin=standin.code("bob") + "\n"))
    assert (data["name"], data["team"], data["coordinator"]) == ("bob", "acme", standin.url)
    assert (data["identity_created"], data["policy_created"], data["admin"]) == (True, True, False)
    assert data["policy"] == str(bob.home / POLICY_FILENAME)


def test_join_with_a_damaged_code_exits_2_and_writes_nothing(
    standin: StandIn, tmp_path: Path
) -> None:
    bob = _runner(tmp_path, "bob")
    result = bob("team", "join", standin.code("bob")[:-10] + "!!")
    assert result.returncode == 2
    assert error_line(result) == (
        "mem: error: this join code cannot be used: it is damaged (was it copied whole?)"
    )
    _untouched(bob.home)


def test_join_with_an_expired_code_exits_2_and_writes_nothing(
    standin: StandIn, tmp_path: Path
) -> None:
    code = JoinCode(
        url=standin.url, team="acme", name="bob", secret=new_secret(), expires_at=time.time() - 1
    ).encode()
    bob = _runner(tmp_path, "bob")
    result = bob("team", "join", code)
    assert result.returncode == 2
    assert "it has expired; ask an admin for a new one" in error_line(result)
    _untouched(bob.home)
    assert standin.joins == 0


def test_a_join_code_the_coordinator_refuses_writes_no_team_yaml(
    standin: StandIn, tmp_path: Path
) -> None:
    code = standin.code("bob")
    standin.invites.clear()
    bob = _runner(tmp_path, "bob")
    result = bob("team", "join", code)
    assert result.returncode == 3
    line = error_line(result)
    assert line.startswith("mem: error: the coordinator did not accept this join code (")
    assert line.endswith("ask an admin for a new one (mem team invite NAME)")
    assert not (bob.home / POLICY_FILENAME).exists()


# -- invites -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ttl", "problem"),
    [
        ("2w", "'w' is not a unit of time"),
        ("24", "'24' has no unit"),
        ("1.5h", "'1.5h' is not a time like 30m, 24h or 7d"),
        ("31d", "an invite lasts at most 30 days"),
    ],
)
def test_an_invite_with_an_unusable_ttl_exits_2_and_registers_nothing(
    standin: StandIn, admin: MemRunner, ttl: str, problem: str
) -> None:
    result = admin("team", "invite", "bob", "--ttl", ttl)
    assert result.returncode == 2
    assert problem in error_line(result)
    assert standin.invite_requests == []


def test_an_invite_asked_by_a_member_who_is_no_admin_says_only_admins_may(
    standin: StandIn, admin: MemRunner, tmp_path: Path
) -> None:
    bob = _joined(tmp_path, admin, "bob")
    result = bob("team", "invite", "mallory")
    assert result.returncode == 3
    key_id = load_identity(bob.home).key_id
    assert error_line(result).startswith(
        f"mem: error: this key ({key_id}) may not invite members in team acme: only its admins may"
    )
    assert [request.name for request in standin.invite_requests] == ["bob"]


def test_a_key_outside_the_roster_is_told_to_ask_for_an_invite(
    standin: StandIn, admin: MemRunner, tmp_path: Path
) -> None:
    stranger = _runner(tmp_path, "stranger")
    identity = create_identity(stranger.home)
    (stranger.home / POLICY_FILENAME).write_text(
        f"team: acme\ncoordinator: {standin.url}\n", encoding="utf-8"
    )
    result = stranger("team", "members")
    assert result.returncode == 3
    assert error_line(result) == (
        f"mem: error: this key ({identity.key_id}) is not a member of team acme "
        "(ask an admin for an invite: mem team invite)"
    )


# -- the roster --------------------------------------------------------------------------------


def test_members_lists_the_roster_as_a_table(admin: MemRunner, tmp_path: Path) -> None:
    _joined(tmp_path, admin, "bob")
    result = admin("team", "members", "list")
    assert result.returncode == 0, result.stderr
    header, first, second, signed = result.stdout.splitlines()
    assert signed == "roster: not signed"
    assert header.split() == ["NAME", "MEMBER", "ID", "ADMIN", "ADDED", "REVOKED", "ROLE"]
    assert first.split()[:3] == ["admin", load_identity(admin.home).key_id, "yes"]
    assert second.split()[0::2] == ["bob", "no", "-"]


def test_members_add_puts_a_key_on_the_roster(standin: StandIn, admin: MemRunner) -> None:
    carol = create_identity(admin.home.parent / "carol")
    data = json_of(admin("team", "members", "add", "carol", carol.public_key_text, "--json"))
    (added,) = data["added"]
    assert (added["name"], added["key_id"], added["admin"]) == ("carol", carol.key_id, False)
    assert (data["already"], data["not_addable"]) == ([], [])
    assert carol.public_key_text in standin.roster


@pytest.mark.parametrize(
    "words",
    [["carol"], [], ["carol", "KEY", "--from-policy"]],
    ids=["no key", "nothing", "both forms"],
)
def test_members_add_takes_name_and_key_or_from_policy(
    standin: StandIn, admin: MemRunner, words: list[str]
) -> None:
    result = admin("team", "members", "add", *words)
    assert result.returncode == 2
    assert error_line(result).endswith("(see `mem team members add --help`)")
    assert len(standin.roster) == 1


def test_revoke_asks_first_and_revokes_nothing_without_a_yes(
    standin: StandIn, admin: MemRunner, tmp_path: Path
) -> None:
    bob = _joined(tmp_path, admin, "bob")
    code, out, shown = on_terminal(admin.home, "team", "revoke", "bob", typed="n\n")
    assert (code, out) == (1, "")
    key_id = load_identity(bob.home).key_id
    assert shown == (
        f"Revoke bob ({key_id}) from team acme: refuse their key from now on? [y/N] "
        "mem: error: nothing was revoked: not confirmed (answer y, or give --yes)\n"
    )
    assert all(member.revoked_at is None for member in standin.roster.values())


def test_revoke_with_json_or_without_a_terminal_asks_nothing_and_revokes_nothing(
    standin: StandIn, admin: MemRunner, tmp_path: Path
) -> None:
    _joined(tmp_path, admin, "bob")
    as_json = admin("team", "revoke", "bob", "--json", stdin="y\n")
    piped = admin("team", "revoke", "bob", stdin="y\n")
    assert json_error(as_json) == {
        "error": "nothing was revoked: with --json nothing is asked: give --yes to go ahead",
        "code": "not_confirmed",
        "exit": 1,
    }
    assert piped.returncode == 1
    assert error_line(piped) == (
        "mem: error: nothing was revoked: there is no terminal to ask on: give --yes to go ahead"
    )
    assert all(member.revoked_at is None for member in standin.roster.values())


def test_revoke_with_yes_revokes_and_purges(
    standin: StandIn, admin: MemRunner, tmp_path: Path
) -> None:
    bob = _joined(tmp_path, admin, "bob")
    bob_key = load_identity(bob.home).public_key_text
    standin.published[bob_key] = 2
    data = json_of(admin("team", "revoke", "bob", "--purge", "--yes", "--json"))
    assert (data["member"]["name"], data["purged"]) == ("bob", 2)
    assert data["member"]["revoked_at"] is not None
    assert bob("team", "members").returncode == 3


# -- disclosures -------------------------------------------------------------------------------


def test_disclosures_list_what_was_served_of_my_items_newest_first(
    standin: StandIn, admin: MemRunner
) -> None:
    mine = load_identity(admin.home).public_key_text
    standin.disclosed += [
        (mine, Disclosure(item_id="A1", asker_key_id="b" * 16, asker_name="bob", served_at=100.0)),
        (mine, Disclosure(item_id="A2", asker_key_id="c" * 16, asker_name="cy", served_at=200.0)),
        (
            "someone-else",
            Disclosure(item_id="Z", asker_key_id="d" * 16, asker_name="d", served_at=1),
        ),
    ]
    data = json_of(admin("team", "disclosures", "--json"))
    assert data == {
        "entries": [
            {"item_id": "A2", "asker_key_id": "c" * 16, "asker_name": "cy",
             "served_at": "1970-01-01T00:03:20+00:00", "source": "coordinator"},
            {"item_id": "A1", "asker_key_id": "b" * 16, "asker_name": "bob",
             "served_at": "1970-01-01T00:01:40+00:00", "source": "coordinator"},
        ]
    }  # fmt: skip


# -- help --------------------------------------------------------------------------------------


def test_init_still_works_offline_and_its_help_points_to_join(mem: MemRunner) -> None:
    shown = mem("team", "init", "--help")
    assert "mem team join CODE" in " ".join(shown.stdout.split())
    made = mem("team", "init", "--name", "ada", "--team", "acme")
    assert made.returncode == 0, made.stderr
    assert load_policy(mem.home).coordinator is None


# -- against the real coordinator ----------------------------------------------------------------


def _admin_code(process: "subprocess.Popen[str]", seconds: float = 20.0) -> str:
    """The admin join code the coordinator prints on its first start."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.2)
        except queue.Empty:
            continue
        found = re.search(r"memmesh-join:[A-Za-z0-9_-]+", line)
        if found:
            return found.group(0)
    raise AssertionError("the coordinator printed no admin join code")


def test_a_new_laptop_joins_the_real_coordinator_in_two_commands(tmp_path: Path) -> None:
    port = free_port()
    env = {key: value for key, value in os.environ.items() if key != "MEM_TEAM_TOKEN"}
    process = subprocess.Popen(
        [sys.executable, "-m", "memmesh", "coordinator", "serve", "--data",
         str(tmp_path / "data"), "--port", str(port), "--team", "acme"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        code = _admin_code(process)
        admin, bob = _runner(tmp_path, "admin"), _runner(tmp_path, "bob")
        first = admin("team", "join", code)
        assert first.returncode == 0, first.stderr
        invited = admin("team", "invite", "bob")
        assert invited.returncode == 0, invited.stderr
        joined = bob("team", "join", invited.stdout.strip())
        assert joined.returncode == 0, joined.stderr
        listed = json_of(bob("team", "members", "--json"))
        assert {(m["name"], m["admin"]) for m in listed["members"]} >= {
            ("admin", True),
            ("bob", False),
        }
        assert load_policy(bob.home).coordinator_key
    finally:
        process.terminate()
        process.wait(timeout=10)
        assert process.stderr is not None
        process.stderr.close()


def test_disclosures_show_every_asker_by_default_however_often_one_searched(
    standin: StandIn, admin: MemRunner
) -> None:
    mine = load_identity(admin.home).public_key_text
    standin.disclosed += [
        (mine, Disclosure(item_id="A1", asker_key_id="c" * 16, asker_name="cy", served_at=1.0))
    ] + [
        (mine, Disclosure(item_id="A2", asker_key_id="b" * 16, asker_name="bob", served_at=n))
        for n in range(2, 202)
    ]  # fmt: skip

    shown = json_of(admin("team", "disclosures", "--json"))["entries"]
    every = json_of(admin("team", "disclosures", "--per-asker", "0", "--json"))["entries"]

    assert [e["asker_name"] for e in shown] == ["bob"] * 10 + ["cy"]
    assert len(every) == 100
    assert {e["asker_name"] for e in every} == {"bob"}
