"""`mem team recall-team`'s scope, end to end: which project it asked the team about, said in
every answer, and `--all-projects`, honoured by a real coordinator and a real peer daemon on
127.0.0.1; a plain ask stays what daemons older than `--all-projects` accept."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner
from tests.team._team import FakeSource, Member, Team, serving, team_on_loopback

pytestmark = pytest.mark.usefixtures("team_token")

INVOICES = "The billing service sends invoices on the first day of every month"
INVOICES_QUERY = "when does the billing service send invoices"


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    with team_on_loopback(tmp_path) as members:
        yield members


@pytest.fixture
def web(tmp_path: Path) -> Path:
    """A work tree of the git repository ``web``: the project a command run there is in."""
    folder = tmp_path / "code" / "web"
    (folder / ".git").mkdir(parents=True)
    return folder


def _in(member: Member, cwd: Path) -> MemRunner:
    return MemRunner(member.home, cwd)


def _ask(runner: MemRunner, *args: str, **env: str) -> dict[str, Any]:
    return json_of(runner("team", "recall-team", INVOICES_QUERY, *args, "--json", env=env))


def test_an_answer_says_which_project_it_searched_and_why(team: Team, web: Path) -> None:
    ada, bob = team.add("ada"), team.add("bob")
    invoices = ada.share(INVOICES, project="billing")
    as_bob = _in(bob, web)

    text = as_bob("team", "recall-team", INVOICES_QUERY)
    data = _ask(as_bob)
    elsewhere = _ask(as_bob, "--project", "billing")
    from_environment = _ask(as_bob, MEM_PROJECT="billing")

    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == [
        "nothing relevant from the team (abstained)",
        "sources: coordinator ok, 0 hits",
        "searched: project web + global (the git repository's name); "
        "--project P or --all-projects asks elsewhere",
    ]
    assert (data["hits"], data["abstained"]) == ([], True)
    assert data["scope"] == {
        "projects": ["web", "global"], "all_projects": False, "project_from": "git repository",
        "author": None,
    }  # fmt: skip
    assert [hit["id"] for hit in elsewhere["hits"]] == [invoices]
    assert elsewhere["scope"] == {
        "projects": ["billing", "global"], "all_projects": False, "project_from": "--project",
        "author": None,
    }  # fmt: skip
    assert [hit["id"] for hit in from_environment["hits"]] == [invoices]
    assert from_environment["scope"]["project_from"] == "MEM_PROJECT"


def test_all_projects_asks_every_project_the_coordinator_and_live_peers_hold(
    team: Team, web: Path
) -> None:
    ada, bob = team.add("ada"), team.add("bob")
    invoices = ada.share(INVOICES, project="billing")
    team.serve(ada)
    team.wait_for_presence(ada)
    as_bob = _in(bob, web)
    assert _ask(as_bob)["hits"] == []  # the control: not in web + global

    data = _ask(as_bob, "--all-projects")
    text = as_bob("team", "recall-team", INVOICES_QUERY, "--all-projects")

    assert [(h["id"], h["project"], h["source"]) for h in data["hits"]] == [
        (invoices, "billing", "peer ada")
    ]
    assert {s["name"]: (s["status"], s["hits"]) for s in data["sources"]} == {
        "coordinator": ("ok", 1), "ada": ("ok", 1),
    }  # fmt: skip
    assert data["scope"] == {
        "projects": [], "all_projects": True, "project_from": "", "author": None,
    }  # fmt: skip
    assert text.stdout.splitlines()[-1] == "searched: every project"

    by_carol = as_bob("team", "recall-team", INVOICES_QUERY, "--all-projects", "--author", "carol")
    assert by_carol.stdout.splitlines()[0] == "nothing relevant from the team (abstained)"
    assert by_carol.stdout.splitlines()[-1] == "searched: every project, items by carol only"
    assert _ask(as_bob, "--all-projects", "--author", "carol")["scope"]["author"] == "carol"


def test_project_and_all_projects_together_are_a_usage_error(team: Team, web: Path) -> None:
    bob = team.add("bob")

    result = _in(bob, web)("team", "recall-team", INVOICES_QUERY, "--project", "web",
                           "--all-projects")  # fmt: skip

    assert result.returncode == 2
    assert "not allowed with argument" in error_line(result)


def test_a_plain_ask_sends_only_what_older_daemons_accept(tmp_path: Path, web: Path) -> None:
    fake = FakeSource()  # a coordinator of any version: it records what it was sent
    with serving(fake) as url:
        bob = Member("bob", tmp_path / "bob", team="acme", coordinator=url)
        plain = _ask(_in(bob, web))
        everything = _ask(_in(bob, web), "--all-projects")

    assert plain["sources"][0]["status"] == everything["sources"][0]["status"] == "ok"
    sent = [json.loads(h.body) for h in fake.heard if h.path == "/v1/search"]
    assert len(sent) == 2
    assert "all_projects" not in sent[0]
    assert sent[0]["project"] == "web"
    assert sent[1]["all_projects"] is True
