"""Groups, roles, grants and publishing for an audience, through the real command line against a
real coordinator with a signed roster: every change is an admin's signed statement, and a
publish the roster refuses (a name it lacks, a reader, a project's publishers) is refused before
anything is recorded, with the reason in one line."""

from pathlib import Path

import msgspec
import pytest

from memmesh.local.store import Store
from memmesh.policy import load_policy
from memmesh.registry import Registry, load_identity
from memmesh.registry.envelopes import Audience, Publication, open_envelope
from memmesh.team.chain import kept_chain
from tests.cli._output import json_error, json_of
from tests.cli._signed_team import SignedTeam
from tests.conftest import MemRunner
from tests.team._team import Team


def _share(path: Path) -> None:
    """team.yaml at ``path`` sharing facts and decisions (and its share: block last)."""
    text = path.read_text().replace("  kinds: []\n", "  kinds: [fact, decision]\n")
    start = text.index("\nshare:\n")
    end = text.index("\nnever:", start)
    path.write_text(text[:start] + text[end:] + text[start:end].rstrip("\n") + "\n")


@pytest.fixture
def trio(loopback_team: Team, tmp_path: Path) -> SignedTeam:
    """ada (admin, root), bob and cy, each sharing facts and decisions; ada and bob are the
    backend group."""
    team = SignedTeam(loopback_team, tmp_path / "homes")
    team.start("ada")
    team.join("bob")
    team.join("cy")
    for name in ("ada", "bob", "cy"):
        _share(team.root / name / "team.yaml")
    made = team.mem("ada")("team", "group", "add", "backend", "ada", "bob")
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == "group backend: ada, bob"
    return team


def _remember(mem: MemRunner, text: str, *, project: str = "api", kind: str = "fact") -> str:
    made = json_of(mem("remember", text, "--kind", kind, "--project", project, "--json"))
    return str(made["id"])


def _publications(home: Path) -> list[Publication]:
    """The publications this home's registry signed, oldest first."""
    policy = load_policy(home)
    with Store(home) as store:
        entries = Registry(store, load_identity(home), policy.team).entries()
    bodies = [open_envelope(e.envelope) for e in entries]
    return [b for b in bodies if isinstance(b, Publication)]


def test_groups_are_listed_and_a_member_leaves_one(trio: SignedTeam) -> None:
    ada = trio.mem("ada")
    ada("team", "group", "add", "ops", "cy")
    removed = json_of(ada("team", "group", "remove", "backend", "bob", "--json"))
    listed = json_of(trio.mem("cy")("team", "group", "list", "--json"))

    assert removed == {"group": {"name": "backend", "members": ["ada"]}}
    assert listed == {
        "groups": [{"name": "backend", "members": ["ada"]}, {"name": "ops", "members": ["cy"]}]
    }
    # Genesis, two invites and joins, three group statements.
    assert len(kept_chain(trio.root / "ada", team="acme", root=trio.key_id("ada"))) == 8


def test_only_an_admin_changes_a_group_and_a_name_the_roster_lacks_is_refused(
    trio: SignedTeam,
) -> None:
    by_member = trio.mem("cy")("team", "group", "add", "backend", "cy", "--json")
    stranger = trio.mem("ada")("team", "group", "add", "backend", "zed")
    clash = trio.mem("ada")("team", "group", "add", "cy", "ada")

    assert by_member.returncode == 3
    assert json_error(by_member)["code"] == "not_an_admin"
    assert stranger.returncode != 0
    assert "zed" in stranger.stderr
    assert clash.returncode == 2
    assert "another active member or a group has that name" in clash.stderr


def test_publish_to_a_group_signs_the_audience_and_dry_run_names_the_readers(
    trio: SignedTeam,
) -> None:
    bob = trio.mem("bob")
    item = _remember(bob, "the api gateway retries twice")

    dry = bob("team", "publish", item, "--to", "backend", "--dry-run")
    done = json_of(bob("team", "publish", item, "--to", "backend", "--json"))

    assert dry.returncode == 0, dry.stderr
    assert "           readable by: ada, bob" in dry.stdout.splitlines()
    assert done["items"][0]["audience"] == {"groups": ["backend"]}
    assert done["items"][0]["readers"] == ["ada", "bob"]
    (publication,) = _publications(trio.root / "bob")
    assert publication.audience == Audience(groups=("backend",))


def test_publishing_for_another_audience_is_a_new_version_and_none_keeps_the_last(
    trio: SignedTeam,
) -> None:
    bob = trio.mem("bob")
    item = _remember(bob, "the api gateway retries twice")
    bob("team", "publish", item, "--to", "backend")
    again = json_of(bob("team", "publish", item, "--json"))
    widened = json_of(bob("team", "publish", item, "--to", "backend,cy", "--json"))
    everyone = json_of(bob("team", "publish", item, "--to", "everyone", "--json"))

    assert (again["items"][0]["action"], again["items"][0]["version"]) == ("unchanged", 1)
    assert (widened["items"][0]["action"], widened["items"][0]["version"]) == ("published", 2)
    assert [p.audience for p in _publications(trio.root / "bob")] == [
        Audience(groups=("backend",)),
        Audience(groups=("backend",), members=(trio.key_id("cy"),)),
        None,
    ]
    assert everyone["items"][0]["version"] == 3


def test_an_unknown_audience_refuses_the_whole_publish_and_records_nothing(
    trio: SignedTeam,
) -> None:
    bob = trio.mem("bob")
    first = _remember(bob, "the api gateway retries twice")
    second = _remember(bob, "the queue keeps messages a week")

    refused = bob("team", "publish", first, second, "--to", "backend,frontend", "--json")

    assert refused.returncode == 3
    error = json_error(refused)
    assert error["code"] == "unknown_audience"
    assert "'frontend'" in error["error"]
    assert _publications(trio.root / "bob") == []


def test_a_reader_may_not_publish_and_a_member_again_may(trio: SignedTeam) -> None:
    ada, cy = trio.mem("ada"), trio.mem("cy")
    made = json_of(ada("team", "members", "role", "cy", "reader", "--json"))
    item = _remember(cy, "the api gateway retries twice")

    refused = cy("team", "publish", item, "--json")
    ada("team", "members", "role", "cy", "member")
    allowed = cy("team", "publish", item)

    assert made["role"] == "reader"
    assert refused.returncode == 3
    assert json_error(refused)["code"] == "publish_not_allowed"
    assert "is a reader of the team" in json_error(refused)["error"]
    assert allowed.returncode == 0, allowed.stderr


def test_a_project_s_publishers_are_granted_and_others_are_refused(trio: SignedTeam) -> None:
    ada, cy = trio.mem("ada"), trio.mem("cy")
    granted = ada("team", "grant", "set", "api", "--publish", "backend")
    listed = json_of(cy("team", "grant", "list", "--json"))
    in_api = _remember(cy, "the api gateway retries twice", project="api")
    in_web = _remember(cy, "the web app caches for a minute", project="web")

    refused = cy("team", "publish", in_api)
    allowed = cy("team", "publish", in_web)

    assert granted.stdout.strip() == "api: read everyone; publish backend"
    assert listed == {"grants": [{"project": "api", "read": None, "publish": ["backend"]}]}
    assert refused.returncode == 3
    assert "not among those an admin let publish in project 'api'" in refused.stderr
    assert allowed.returncode == 0, allowed.stderr


def test_team_yaml_sends_a_project_s_items_to_its_default_audience_fail_closed(
    trio: SignedTeam,
) -> None:
    bob = trio.mem("bob")
    path = trio.root / "bob" / "team.yaml"
    rules = "  audiences:\n    - {project: api, kind: decision, to: [backend]}\n"
    path.write_text(path.read_text() + rules)
    decision = _remember(bob, "we use the gateway's retries", kind="decision")
    fact = _remember(bob, "the gateway answers in json")

    done = json_of(bob("team", "publish", decision, fact, "--json"))
    path.write_text(path.read_text() + "    - {project: web, to: [frontend]}\n")
    web = _remember(bob, "the web app caches for a minute", project="web")
    refused = bob("team", "publish", web)

    audiences = {row["id"]: row["audience"] for row in done["items"]}
    assert audiences == {decision: {"groups": ["backend"]}, fact: None}
    assert refused.returncode == 3
    assert "unknown audience 'frontend'" in refused.stderr
    assert len(_publications(trio.root / "bob")) == 2


def test_an_audience_on_a_roster_not_signed_is_refused(mem: MemRunner) -> None:
    assert mem("team", "init", "--name", "ada", "--team", "acme").returncode == 0
    _share(mem.home / "team.yaml")
    item = _remember(mem, "the api gateway retries twice")

    refused = mem("team", "publish", item, "--to", "backend")

    assert refused.returncode == 3
    assert "the team's roster is not signed, so it has no groups" in refused.stderr
    assert msgspec.json.decode(mem("team", "log", "--json").stdout) == {"entries": []}


def test_status_lists_the_author_s_items_for_some_of_the_team_and_their_readers(
    trio: SignedTeam,
) -> None:
    bob = trio.mem("bob")
    item = _remember(bob, "the api gateway retries twice")
    _remember(bob, "the queue keeps messages a week")
    bob("team", "publish", item, "--to", "backend")

    shown = bob("team", "status")
    data = json_of(bob("team", "status", "--json"))

    assert shown.returncode == 0, shown.stderr
    assert f"    {item[:10]}  for backend: readable by ada, bob" in shown.stdout.splitlines()
    assert data["restricted"] == [{"id": item, "audience": ["backend"], "readers": ["ada", "bob"]}]


def test_the_roster_lists_a_reader_s_role(trio: SignedTeam) -> None:
    trio.mem("ada")("team", "members", "role", "cy", "reader")

    listed = trio.mem("bob")("team", "members")
    data = json_of(trio.mem("bob")("team", "members", "--json"))

    rows = {line.split()[0]: line.split()[-1] for line in listed.stdout.splitlines()[1:-1]}
    assert rows == {"ada": "admin", "bob": "member", "cy": "reader"}
    assert {m["name"]: m["reader"] for m in data["members"]} == {
        "ada": False,
        "bob": False,
        "cy": True,
    }
