"""Setting a few keys of team.yaml leaves every other line as its user wrote it, and an edit
that would change anything more is refused."""

import stat
from pathlib import Path

import pytest

from memmesh.policy import parse_policy, policy_template, update_policy
from memmesh.policy.config import read_policy_source, write_policy_source
from memmesh.policy.errors import PolicyInvalid, PolicyNotEditable

PIN = "sha256:" + "ab" * 32
KEY = "cM8vZ2X1YtqkQm0pN3r4s5t6u7v8w9x0y1z2A3B4C5D"
JOINED = {
    "team": "acme",
    "identity.name": "bob",
    "coordinator": "https://team-host:8400",
    "coordinator_pin": PIN,
    "coordinator_key": KEY,
}


def test_values_are_replaced_where_they_stand_and_comments_stay() -> None:
    text = (
        "# my settings\n"
        "team: old   # the old team\n"
        "identity:\n"
        "  name: 'robert'  # me\n"
        "coordinator: http://127.0.0.1:8400\n"
        "share:\n"
        "  kinds: [fact]  # facts only\n"
    )
    edited = update_policy(text, JOINED)
    assert edited == (
        "# my settings\n"
        'team: "acme"   # the old team\n'
        "identity:\n"
        '  name: "bob"  # me\n'
        'coordinator: "https://team-host:8400"\n'
        "share:\n"
        "  kinds: [fact]  # facts only\n"
        f'coordinator_pin: "{PIN}"\n'
        f'coordinator_key: "{KEY}"\n'
    )


def test_the_templates_commented_examples_become_the_values() -> None:
    template = policy_template(name="bob", team="acme", coordinator=None)
    edited = update_policy(template, JOINED)
    assert "# coordinator_pin:" not in edited
    assert f'\ncoordinator_pin: "{PIN}"\n' in edited
    assert f'\ncoordinator_key: "{KEY}"\n' in edited
    assert '\ncoordinator: "https://team-host:8400"\n' in edited
    assert "# insecure_http: false" in edited  # not asked for: still a comment
    before, after = template.splitlines(), edited.splitlines()
    assert len(before) == len(after)
    changed = [old for old, new in zip(before, after, strict=True) if old != new]
    assert [line.split(":")[0] for line in changed] == [
        "# coordinator",
        "# coordinator_pin",
        "# coordinator_key",
    ]


def test_an_empty_parent_and_an_empty_file_take_the_keys() -> None:
    assert parse_policy(update_policy("identity:\n", {"identity.name": "bob"})).identity
    edited = update_policy("", JOINED)
    policy = parse_policy(edited)
    assert policy.identity is not None
    assert (policy.team, policy.identity.name, policy.coordinator_key) == ("acme", "bob", KEY)


def test_none_writes_null_and_adds_nothing_for_an_absent_key() -> None:
    assert update_policy("team: a\n", {"coordinator_pin": None}) == "team: a\n"
    template = policy_template(name="bob", team="acme", coordinator=None)
    assert update_policy(template, {"coordinator_pin": None}) == template
    edited = update_policy(f"coordinator_pin: {PIN}\n", {"coordinator_pin": None})
    assert edited == "coordinator_pin: null\n"


def test_line_endings_of_the_file_are_kept() -> None:
    edited = update_policy("team: a\r\nauto_sync: true\r\n", {"team": "b", "coordinator_key": KEY})
    assert edited == f'team: "b"\r\nauto_sync: true\r\ncoordinator_key: "{KEY}"\r\n'


def test_a_value_over_several_lines_is_not_edited() -> None:
    with pytest.raises(PolicyNotEditable) as refused:
        update_policy("team: >\n  old\nauto_sync: true\n", JOINED)
    assert refused.value.keys == ["team"]
    assert "nothing was changed" in refused.value.message


def test_an_alias_shared_by_two_keys_is_not_edited_through() -> None:
    text = "team: &same acme\ntoken_env: MEM_TEAM_TOKEN\nidentity:\n  name: *same\n"
    with pytest.raises(PolicyNotEditable) as refused:
        update_policy(text, {"team": "other"})
    assert refused.value.keys == ["team"]


def test_an_invalid_policy_is_refused_before_any_edit() -> None:
    with pytest.raises(PolicyInvalid):
        update_policy("share:\n  kinds: [gotchas]\n", JOINED)


def test_writing_team_yaml_replaces_it_whole_and_keeps_its_permissions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = write_policy_source(home, "team: a\n")
    path.chmod(0o600)
    write_policy_source(home, "team: b\n")
    assert read_policy_source(home) == "team: b\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in home.iterdir()] == ["team.yaml"]
