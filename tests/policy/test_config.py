"""Loading ``team.yaml``: typed, fail-closed, and every error names the file, line and key."""

import json
from pathlib import Path

import pytest

from memmesh import embed
from memmesh.local.items import KINDS
from memmesh.local.store import Store
from memmesh.policy import (
    EMBEDDER_WHEN_ABSENT,
    POLICY_FILENAME,
    PolicyInvalid,
    PolicyMissing,
    decide,
    load_policy,
    parse_policy,
    policy_template,
)
from memmesh.policy.config import DEFAULT_SHARE_KINDS, DEFAULT_TOKEN_ENV, ProjectRule

PATH = "/team/home/team.yaml"
COORDINATOR = "http://team-host:8400"
DEFAULT_NEVER_TAGS = ("private", "secret", "personal")


def _invalid(source: str) -> PolicyInvalid:
    """The error that parsing ``source`` (as if read from PATH) raises."""
    with pytest.raises(PolicyInvalid) as caught:
        parse_policy(source, PATH)
    return caught.value


# -- every malformed policy is a PolicyInvalid naming file, line and key ---------------------

_SOUND = "must be an http:// or https:// URL naming only a host and port"
MALFORMED = [
    pytest.param(
        "version: 1\nteam: acme\n  extra: indented\n",
        3,
        "(yaml)",
        "broken YAML: mapping values are not allowed here",
        id="broken-yaml",
    ),
    pytest.param("version: 1\nbogus: 2\n", 2, "bogus", "unknown key", id="unknown-top-level-key"),
    pytest.param(
        "version: 1\nshare:\n  kinds: []\n  colour: red\n",
        4,
        "share.colour",
        "unknown key",
        id="unknown-nested-key",
    ),
    pytest.param(
        "never:\n  tags: []\n  regex: [abc]\n", 3, "never.regex", "unknown key", id="unknown-never"
    ),
    pytest.param(
        "members:\n  - name: bob\n    key: abc\n    role: admin\n",
        4,
        "members[0].role",
        "unknown key",
        id="unknown-member-key",
    ),
    pytest.param(
        "team: acme\nshare:\n  min_reinforcements: x\n",
        3,
        "share.min_reinforcements",
        "Expected `int`, got `str`",
        id="min-reinforcements-text",
    ),
    pytest.param(
        "team: acme\nshare:\n  min_reinforcements: true\n",
        3,
        "share.min_reinforcements",
        "Expected `int`, got `bool`",
        id="min-reinforcements-bool",
    ),
    pytest.param(
        'team: acme\ndiscovery: "yes"\n',
        2,
        "discovery",
        "Expected `bool`, got `str`",
        id="discovery-text",
    ),
    pytest.param(
        "team: acme\npeers: 3\n", 2, "peers", "Expected `array`, got `int`", id="peers-int"
    ),
    pytest.param(
        "share:\n  kinds: decision\n",
        2,
        "share.kinds",
        "Expected `array`, got `str`",
        id="kinds-not-a-list",
    ),
    pytest.param(
        "share:\n  kinds:\n    - decision\n    - rumour\n",
        4,
        "share.kinds[1]",
        "Invalid enum value 'rumour'",
        id="bad-kind",
    ),
    pytest.param(
        "never:\n  patterns:\n    - 'ok'\n    - '[unclosed'\n",
        4,
        "never.patterns[1]",
        "bad regular expression: unterminated character set at position 0",
        id="bad-regex",
    ),
    pytest.param("team: a\nversion: 1\nteam: b\n", 3, "team", "duplicate key", id="duplicate-key"),
    pytest.param(
        "share:\n  kinds: []\n  min_reinforcements: 1\n  kinds: [fact]\n",
        4,
        "share.kinds",
        "duplicate key",
        id="duplicate-nested-key",
    ),
    pytest.param(
        "team: acme\nshare:\n  min_reinforcements: -1\n",
        3,
        "share.min_reinforcements",
        "must be 0 or more",
        id="negative-min-reinforcements",
    ),
    pytest.param(
        "share:\n  projects:\n    web:\n      min_reinforcements: -2\n",
        4,
        "share.projects.web.min_reinforcements",
        "must be 0 or more",
        id="negative-project-min-reinforcements",
    ),
    pytest.param(
        "team: acme\ncoordinator: ftp://team-host\n",
        2,
        "coordinator",
        "must be an http:// or https:// URL",
        id="coordinator-ftp",
    ),
    pytest.param(
        "team: acme\ncoordinator: team-host:8400\n",
        2,
        "coordinator",
        "must be an http:// or https:// URL",
        id="coordinator-no-scheme",
    ),
    pytest.param(
        "coordinator: 8400\n",
        1,
        "coordinator",
        "Expected `str | array | null`, got `int`",
        id="coordinator-int",
    ),
    pytest.param(
        "peers:\n  - http://bob:8410\n  - bob-laptop\n",
        3,
        "peers[1]",
        "must be an http:// or https:// URL",
        id="bad-peer-url",
    ),
    pytest.param(
        "version: 2\n",
        1,
        "version",
        "unsupported version 2; this memmesh reads version 1",
        id="version-2",
    ),
    pytest.param(
        "team: acme\nembedder: word-llama\n",
        2,
        "embedder",
        f"unknown embedder 'word-llama'; choose one of: {', '.join(embed.EMBEDDER_NAMES)}",
        id="unknown-embedder",
    ),
    pytest.param(
        "token_env: 'MY TOKEN'\n",
        1,
        "token_env",
        "must be an environment variable name",
        id="token-env",
    ),
    pytest.param(
        "identity: ada\n", 1, "identity", "Expected `object | null`, got `str`", id="identity-text"
    ),
    pytest.param(
        "members:\n  - name: bob\n",
        2,
        "members[0]",
        "Object missing required field `key`",
        id="member-without-key",
    ),
    pytest.param("1: one\n", 1, "(top level)", "keys must be text", id="number-as-key"),
    pytest.param(
        "- team\n- acme\n",
        1,
        "(top level)",
        "the file must be a mapping of keys to values",
        id="list-file",
    ),
    pytest.param(
        "team: acme\nshare:\n  projects:\n    web: 3\n",
        4,
        "share.projects.web",
        "Expected `bool | object`, got `int`",
        id="project-rule-int",
    ),
    pytest.param(
        "share:\n  projects:\n    web:\n      kindz: [fact]\n",
        4,
        "share.projects.web.kindz",
        "unknown key",
        id="project-rule-unknown-key",
    ),
    pytest.param(
        "team: acme\ncoordinator: 'http://team host:8400'\n",
        2,
        "coordinator",
        "must be an http:// or https:// URL",
        id="coordinator-with-space",
    ),
    pytest.param(
        "team: acme\ncoordinator: 'http://[::1'\n",
        2,
        "coordinator",
        f"{_SOUND}: it is not a URL (Invalid IPv6 URL)",
        id="coordinator-unclosed-bracket",
    ),
    pytest.param(
        "coordinator: http://team-host:8400/collect?to=me\n",
        1,
        "coordinator",
        f"{_SOUND}: it has a query",
        id="coordinator-query",
    ),
    pytest.param(
        "coordinator: http://team-host:8400/collect\n",
        1,
        "coordinator",
        f"{_SOUND}: it has a path",
        id="coordinator-path",
    ),
    pytest.param(
        "coordinator: http://team-host:0\n",
        1,
        "coordinator",
        f"{_SOUND}: the port must be a number from 1 to 65535",
        id="coordinator-port-0",
    ),
    pytest.param(
        "team: acme\npeers:\n  - http://bob:8410\n  - http://bob:8410#x\n",
        4,
        "peers[1]",
        f"{_SOUND}: it has a fragment",
        id="peer-fragment",
    ),
    pytest.param(
        "peers:\n  - http://bob:8410\n  - http://127.0.0.1:99999\n",
        3,
        "peers[1]",
        f"{_SOUND}: the port must be a number from 1 to 65535",
        id="peer-port-99999",
    ),
    pytest.param(
        "team: !custom acme\n",
        1,
        "team",
        "",
        id="unknown-yaml-tag",
    ),
]


@pytest.mark.parametrize(("source", "line", "key", "problem"), MALFORMED)
def test_malformed_policy_names_file_line_and_key(
    source: str, line: int, key: str, problem: str
) -> None:
    error = _invalid(source)
    assert (error.path, error.line, error.key) == (PATH, line, key)
    assert problem in error.problem
    assert error.message == f"{PATH}:{line}: {key}: {error.problem}"
    assert error.exit_code == 3


@pytest.mark.parametrize("rule", ["3", "'no'", "[decision]"])
def test_project_rule_of_the_wrong_type_is_invalid(rule: str) -> None:
    # Where it is reported is checked (and known wrong) in the table above.
    error = _invalid(f"team: acme\nshare:\n  projects:\n    web: {rule}\n")
    assert error.path == PATH
    assert error.key.startswith("share.projects")
    assert error.problem.startswith("Expected `bool | object`, got ")


def test_wrong_type_deep_in_a_long_file_points_at_its_own_line() -> None:
    source = (
        "# memmesh team policy\n"
        "version: 1\n"
        "team: acme\n"
        "\n"
        "share:\n"
        "  kinds: [decision]\n"
        "  min_reinforcements: 1\n"
        "never:\n"
        "  tags: [private]\n"
        "  patterns:\n"
        "    - 'ok'\n"
        "    - 42\n"
    )
    error = _invalid(source)
    assert (error.line, error.key) == (12, "never.patterns[1]")
    assert error.problem == "Expected `str`, got `int`"


# -- explicit values versus absent keys ------------------------------------------------------


def test_absent_keys_take_the_defaults() -> None:
    policy = parse_policy("team: acme\n")
    assert policy.coordinator is None
    assert policy.token_env == DEFAULT_TOKEN_ENV
    assert policy.share.kinds == DEFAULT_SHARE_KINDS == ()
    assert policy.share.min_reinforcements == 0
    assert policy.share.projects == {}
    assert policy.never.tags == DEFAULT_NEVER_TAGS
    assert policy.never.patterns == ()
    # A present section with the key left out still inherits it.
    partial = parse_policy("share:\n  min_reinforcements: 2\nnever:\n  patterns: [x]\n")
    assert partial.share.kinds == DEFAULT_SHARE_KINDS
    assert partial.never.tags == DEFAULT_NEVER_TAGS


def test_a_file_without_embedder_is_a_team_of_the_release_that_brought_the_key() -> None:
    assert EMBEDDER_WHEN_ABSENT == "minilm-static"
    assert parse_policy("team: acme\n").embedder == EMBEDDER_WHEN_ABSENT
    assert parse_policy("team: acme\nembedder: wordllama\n").embedder == "wordllama"


def test_an_empty_or_comment_only_file_is_all_defaults() -> None:
    assert parse_policy("") == parse_policy("# nothing here yet\n") == parse_policy("version: 1\n")


def test_explicit_empty_lists_are_values_not_defaults() -> None:
    policy = parse_policy("share:\n  kinds: []\nnever:\n  tags: []\n")
    assert policy.share.kinds == ()
    assert policy.never.tags == ()


def test_explicit_zero_and_empty_in_a_project_rule_are_values() -> None:
    policy = parse_policy(
        "share:\n"
        "  min_reinforcements: 3\n"
        "  projects:\n"
        "    web: {kinds: [], min_reinforcements: 0}\n"
        "    api: {}\n"
        "    docs: true\n"
        "    billing: false\n"
    )
    assert policy.share.projects == {
        "web": ProjectRule(kinds=(), min_reinforcements=0),
        "api": ProjectRule(kinds=None, min_reinforcements=None),
        "docs": True,
        "billing": False,
    }


def test_absent_share_kinds_make_nothing_eligible_as_empty_ones_do(store: Store) -> None:
    empty = parse_policy(f"coordinator: {COORDINATOR}\nshare:\n  kinds: []\n")
    absent = parse_policy(f"coordinator: {COORDINATOR}\nshare:\n  min_reinforcements: 0\n")
    no_share = parse_policy(f"coordinator: {COORDINATOR}\n")
    listed = parse_policy(f"coordinator: {COORDINATOR}\nshare:\n  kinds: [{', '.join(KINDS)}]\n")
    for kind in KINDS:
        item, _ = store.remember(f"A {kind} about the billing service", kind=kind)
        for policy in (empty, absent, no_share):
            refused = decide(item, policy)
            assert not refused.allowed
            assert refused.rule == f"share.kinds: {kind} is not shared"
        assert decide(item, listed).allowed


def test_empty_never_tags_removes_the_default_never_tags(store: Store) -> None:
    item, _ = store.remember("We pair on Fridays", kind="convention", tags=["private"])
    shared = f"coordinator: {COORDINATOR}\nshare:\n  kinds: [convention]\n"
    default = parse_policy(shared)
    emptied = parse_policy(shared + "never:\n  tags: []\n")
    assert decide(item, default).rule == "never.tags: private"
    assert decide(item, default).allowed is False
    assert decide(item, emptied).allowed is True


def test_yaml_one_point_one_booleans_are_booleans() -> None:
    # Unquoted yes/no are booleans in YAML 1.1, which is what PyYAML reads.
    assert parse_policy("discovery: yes\n").discovery is True
    assert parse_policy("share:\n  projects:\n    billing: no\n").share.projects == {
        "billing": False
    }


# -- the template `mem team init` writes -----------------------------------------------------


def test_template_without_coordinator_parses_and_shares_nothing(store: Store) -> None:
    policy = parse_policy(policy_template(name="ada", team="acme", coordinator=None))
    assert policy.team == "acme"
    assert policy.identity is not None
    assert policy.identity.name == "ada"
    assert policy.coordinator is None
    assert policy.share.kinds == ()
    for kind in KINDS:
        item, _ = store.remember(f"Template check for a {kind}", kind=kind)
        decision = decide(item, policy, force=True)
        assert not decision.allowed
        assert decision.rule == "coordinator: not set (nothing leaves this laptop)"


def test_template_with_coordinator_still_shares_nothing_until_kinds_are_listed(
    store: Store,
) -> None:
    policy = parse_policy(policy_template(name="ada", team="acme", coordinator=COORDINATOR))
    assert policy.coordinator == COORDINATOR
    assert policy.share.kinds == ()
    for kind in KINDS:
        item, _ = store.remember(f"Template check for a {kind}", kind=kind)
        decision = decide(item, policy)
        assert not decision.allowed
        assert decision.rule == f"share.kinds: {kind} is not shared"


def test_template_writes_out_the_default_embedder_of_the_day(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = policy_template(name="ada", team="acme", coordinator=None)
    assert f"\nembedder: {json.dumps(embed.DEFAULT_EMBEDDER)}\n" in text
    assert parse_policy(text).embedder == embed.DEFAULT_EMBEDDER
    # Read when the template is written: a later default is what a new team gets.
    monkeypatch.setattr(embed, "DEFAULT_EMBEDDER", "wordllama")
    assert parse_policy(policy_template(name="ada", team="acme", coordinator=None)).embedder == (
        "wordllama"
    )


def test_template_is_commented_and_quotes_awkward_names() -> None:
    name, team = "yes", 'Zoë "z": #1'
    text = policy_template(name=name, team=team, coordinator=None)
    assert text.startswith("# memmesh team policy.")
    assert "# coordinator: http://team-host:8400" in text
    policy = parse_policy(text)
    assert policy.identity is not None
    assert (policy.identity.name, policy.team) == (name, team)


def test_template_mentions_the_coordinators_pin_key_and_plain_http_commented_out() -> None:
    text = policy_template(name="ada", team="acme", coordinator=COORDINATOR)
    for key in ("coordinator_pin", "coordinator_key", "insecure_http"):
        assert f"\n# {key}: " in text
    policy = parse_policy(text)
    assert (policy.coordinator_pin, policy.coordinator_key, policy.insecure_http) == (
        None,
        None,
        False,
    )


# -- load_policy -----------------------------------------------------------------------------


def test_load_policy_reads_team_yaml_in_the_home(tmp_path: Path) -> None:
    (tmp_path / POLICY_FILENAME).write_text("team: acme\nshare:\n  kinds: [fact]\n")
    policy = load_policy(tmp_path)
    assert (policy.team, policy.share.kinds) == ("acme", ("fact",))


def test_load_policy_on_a_missing_file_is_policy_missing(tmp_path: Path) -> None:
    with pytest.raises(PolicyMissing) as caught:
        load_policy(tmp_path)
    path = str(tmp_path / POLICY_FILENAME)
    assert caught.value.path == path
    assert caught.value.message == (
        f"no team policy at {path}; run `mem team init --name NAME` first"
    )
    assert caught.value.exit_code == 3


def test_load_policy_on_undecodable_bytes_is_policy_invalid(tmp_path: Path) -> None:
    (tmp_path / POLICY_FILENAME).write_bytes(b"team: acme\ncoordinator: \xff\xfe\n")
    with pytest.raises(PolicyInvalid) as caught:
        load_policy(tmp_path)
    path = str(tmp_path / POLICY_FILENAME)
    assert (caught.value.path, caught.value.line, caught.value.key) == (path, None, "(file)")
    assert caught.value.message.startswith(f"{path}: (file): cannot be read: ")
    assert "utf-8" in caught.value.message


def test_load_policy_errors_name_the_real_file(tmp_path: Path) -> None:
    (tmp_path / POLICY_FILENAME).write_text("team: acme\nshare:\n  kinds: [rumour]\n")
    with pytest.raises(PolicyInvalid) as caught:
        load_policy(tmp_path)
    path = str(tmp_path / POLICY_FILENAME)
    assert caught.value.message == f"{path}:3: share.kinds[0]: Invalid enum value 'rumour'"


# -- what init may write is what every later command accepts ---------------------------------


@pytest.mark.parametrize("name", ["Ada Lovelace", "ada\n", "-ada", "a" * 65, "Zoë"])
def test_an_identity_name_the_store_would_refuse_as_author_is_invalid(name: str) -> None:
    error = _invalid(f"identity:\n  name: {json.dumps(name)}\n")
    assert (error.line, error.key) == (2, "identity.name")
    assert "1-64 letters, digits, '.', '-' or '_'" in error.problem
    assert "author" in error.problem


def test_an_identity_name_with_spaces_is_refused_with_one_to_write_instead() -> None:
    error = _invalid('identity:\n  name: "Ada Lovelace"\n')
    assert "Ada-Lovelace" in error.problem


def test_a_teammate_s_name_in_members_breaking_the_rule_is_invalid_where_it_is_written() -> None:
    key = "k" * 43
    error = _invalid(
        f'members:\n  - name: ada\n    key: {key}\n  - name: "eve smith"\n    key: {key}\n'
    )
    assert (error.line, error.key) == (4, "members[1].name")
    assert "1-64 letters, digits, '.', '-' or '_'" in error.problem
    assert "eve-smith" in error.problem


@pytest.mark.parametrize("name", ["ada", "Ada-Lovelace", "ada.l_2", "a" * 64])
def test_an_identity_name_the_store_accepts_is_valid(name: str, home: Path) -> None:
    policy = parse_policy(f"identity:\n  name: {name}\n", PATH)
    assert policy.identity is not None
    with Store(home, author=policy.identity.name) as store:
        assert store.author == name


@pytest.mark.parametrize(
    ("written", "suggested"),
    [
        ("team-host:8400", "https://team-host:8400"),
        ("team-host", "https://team-host"),
        ("10.0.0.5:8400", "https://10.0.0.5:8400"),
    ],
)
def test_a_coordinator_without_a_scheme_is_refused_with_the_url_to_write(
    written: str, suggested: str
) -> None:
    error = _invalid(f"coordinator: {written}\n")
    assert (error.line, error.key) == (1, "coordinator")
    assert error.problem.endswith(f"did you mean {suggested}?")


def test_a_peer_without_a_scheme_is_refused_with_the_url_to_write() -> None:
    error = _invalid("peers: [laptop.lan:8410]\n")
    assert error.key == "peers[0]"
    assert error.problem.endswith("did you mean https://laptop.lan:8410?")


def test_an_unsound_url_that_no_scheme_would_fix_gets_no_suggestion() -> None:
    error = _invalid("coordinator: ftp://team-host\n")
    assert "did you mean" not in error.problem
