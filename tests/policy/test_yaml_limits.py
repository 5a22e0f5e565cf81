"""Hostile ``team.yaml`` files cost little: aliases, nesting, size and node counts are bounded,
and every refusal is a :class:`PolicyInvalid` naming the file, the line and the limit.

The corpus is generated here, never committed as files. Each test has a hard timeout: before
the limits, the alias bomb hung and deep nesting raised ``RecursionError``.
"""

from pathlib import Path

import pytest

from memmesh.policy import POLICY_FILENAME, PolicyInvalid, load_policy, parse_policy
from memmesh.policy.errors import PolicyFileError
from memmesh.policy.yaml_limits import MAX_BYTES, MAX_DEPTH, MAX_VALUES

PATH = "/team/home/team.yaml"

pytestmark = pytest.mark.timeout(20)


def _invalid(source: str) -> PolicyInvalid:
    with pytest.raises(PolicyInvalid) as caught:
        parse_policy(source, PATH)
    assert caught.value.path == PATH
    return caught.value


def _laughs(levels: int = 9, fan: int = 9) -> str:
    """The billion-laughs file: each anchor repeats the one before ``fan`` times (~1 KB)."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * fan) + "]")
    return "\n".join(lines) + f"\npeers: *a{levels - 1}\n"


def test_the_limits_are_the_documented_ones() -> None:
    assert (MAX_BYTES, MAX_DEPTH, MAX_VALUES) == (64 * 1024, 32, 10_000)
    text = Path(__file__).resolve().parents[2].joinpath("docs", "policy.md").read_text()
    for phrase in ("64 KiB", "32 levels", "10,000 values"):
        assert phrase in text


def test_a_billion_laughs_file_is_refused_by_its_expanded_size() -> None:
    source = _laughs()
    assert len(source) < 1100
    error = _invalid(source)
    assert error.key == "(yaml)"
    assert error.line is not None
    assert f"more than {MAX_VALUES:,} values" in error.problem
    assert "alias" in error.problem


def test_an_alias_that_contains_itself_is_refused_not_a_recursion_error() -> None:
    error = _invalid("peers: &loop [*loop]\n")
    assert (error.line, error.key) == (1, "(yaml)")
    assert f"deeper than {MAX_DEPTH} levels" in error.problem


def test_a_few_aliases_that_expand_to_little_still_work() -> None:
    policy = parse_policy(
        "team: &name acme\nidentity:\n  name: ada\nnever:\n  tags: &tags [private]\n", PATH
    )
    assert (policy.team, policy.never.tags) == ("acme", ("private",))


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("peers: " + "[" * 5000 + "]" * 5000 + "\n", id="flow-sequences-5000"),
        pytest.param("share: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n", id="flow-mappings-5000"),
        # Block nesting costs its indentation: 200 levels is as deep as fits in the size limit.
        pytest.param(
            "share:\n" + "".join(f"{'  ' * (i + 1)}k{i}:\n" for i in range(200)), id="block-200"
        ),
        pytest.param(
            "peers:\n" + "".join(f"{'  ' * i}-\n" for i in range(1, 200)), id="dashes-200"
        ),
    ],
)
def test_deep_nesting_is_refused_at_the_depth_limit(source: str) -> None:
    error = _invalid(source)
    assert error.key == "(yaml)"
    assert error.line is not None
    assert error.problem.startswith(f"nested deeper than {MAX_DEPTH} levels")


def test_nesting_down_to_the_limit_is_read_and_one_more_is_refused() -> None:
    def nested(levels: int) -> str:  # the top-level mapping is the first level
        return "peers: " + "[" * (levels - 1) + "]" * (levels - 1) + "\n"

    assert "deeper" not in _invalid(nested(MAX_DEPTH)).problem  # the types refuse it
    assert "deeper" in _invalid(nested(MAX_DEPTH + 1)).problem


def test_a_file_larger_than_the_limit_is_refused_before_it_is_parsed() -> None:
    error = _invalid("peers: [" + "0, " * (MAX_BYTES // 3 + 1) + "]\n")
    assert (error.line, error.key) == (None, "(file)")
    assert "64 KiB" in error.problem


def test_ten_million_nodes_on_disk_are_refused_by_size(tmp_path: Path) -> None:
    path = tmp_path / POLICY_FILENAME
    with path.open("w", encoding="utf-8") as out:
        out.write("peers:\n")
        row = "- 0\n" * 1000
        for _ in range(10_000):
            out.write(row)
    with pytest.raises(PolicyInvalid) as caught:
        load_policy(tmp_path)
    assert (caught.value.path, caught.value.key) == (str(path), "(file)")
    assert "64 KiB" in caught.value.problem


def test_many_small_values_within_the_size_are_refused_by_count() -> None:
    error = _invalid("peers: [" + ",".join(["0"] * (MAX_VALUES + 1)) + "]\n")
    assert error.key == "(yaml)"
    assert f"more than {MAX_VALUES:,} values" in error.problem


def test_a_team_of_hundreds_of_members_is_within_the_limits() -> None:
    key = "A" * 43
    members = "".join(f"  - name: member{i}\n    key: {key}\n" for i in range(500))
    assert len(parse_policy("members:\n" + members, PATH).members) == 500


def test_a_team_yaml_that_is_no_regular_file_is_refused_without_blocking(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / POLICY_FILENAME)  # opening a FIFO for reading waits for a writer
    with pytest.raises(PolicyFileError) as caught:
        load_policy(tmp_path)
    assert caught.value.reason == "it is not a regular file"


# -- everything else a hostile file may hold -------------------------------------------------

HOSTILE = [
    pytest.param("team: !!python/object/apply:os.system ['true']\n", 1, "tag", id="python-apply"),
    pytest.param("identity: !!python/object:os.system {name: a}\n", 1, "tag", id="python-object"),
    pytest.param("team: !!python/name:os.system\n", 1, "tag", id="python-name"),
    pytest.param("team: !!binary aGVsbG8=\n", 1, "tag", id="binary"),
    pytest.param("peers: !!set {a, b}\n", 1, "tag", id="set"),
    pytest.param("team: !custom x\n", 1, "tag", id="local-tag"),
    pytest.param("identity: !!str {name: a}\n", 1, "tag", id="str-tag-on-a-mapping"),
    pytest.param("version: !!int twelve\n", 1, "!!int", id="int-tag-on-text"),
    pytest.param("discovery: !!bool maybe\n", 1, "!!bool", id="bool-tag-on-text"),
    pytest.param("base: &b {name: a}\nidentity:\n  <<: *b\n", 3, "merge keys", id="merge-alias"),
    pytest.param("identity:\n  <<: {name: a}\n", 2, "merge keys", id="merge-inline"),
    pytest.param("1: a\n", 1, "keys must be text", id="int-key"),
    pytest.param("? [a, b]\n: x\n", 1, "keys must be text", id="sequence-key"),
    pytest.param("? {a: b}\n: x\n", 1, "keys must be text", id="mapping-key"),
    pytest.param("null: x\n", 1, "keys must be text", id="null-key"),
    pytest.param("team: a\nteam: b\n", 2, "duplicate key", id="duplicate-key"),
    pytest.param("version: " + "9" * 5000 + "\n", 1, "too long", id="huge-integer"),
    pytest.param("team: x\npeers: *nowhere\n", 2, "undefined alias", id="undefined-alias"),
    pytest.param("team: &a x\ndiscovery: &a true\n", 2, "anchor", id="duplicate-anchor"),
    pytest.param("team: 'a\x07b'\n", 1, "broken YAML", id="control-character"),
    pytest.param("team: a\n---\nteam: b\n", 2, "broken YAML", id="two-documents"),
]


@pytest.mark.parametrize(("source", "line", "says"), HOSTILE)
def test_a_hostile_construct_is_policy_invalid_naming_its_line(
    source: str, line: int, says: str
) -> None:
    error = _invalid(source)
    assert error.line == line
    assert says in error.problem


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param("team: 2001-13-45\n", "2001-13-45", id="impossible-date"),
        pytest.param("team: 2001-12-14\n", "2001-12-14", id="date"),
        pytest.param("team: =\n", "=", id="value-key"),
        pytest.param("team: !!str 2001\n", "2001", id="str-tag"),
    ],
)
def test_text_that_looks_like_a_date_is_read_as_text(source: str, expected: str) -> None:
    assert parse_policy(source, PATH).team == expected


def test_a_huge_scalar_is_refused_by_size() -> None:
    error = _invalid("team: " + "x" * (MAX_BYTES + 1) + "\n")
    assert error.key == "(file)"


def test_every_file_of_the_corpus_is_policy_invalid_and_nothing_else() -> None:
    corpus = [str(p.values[0]) for p in HOSTILE] + [
        _laughs(),
        _laughs(levels=30, fan=2),
        "peers: &loop [*loop]\n",
        "a: &a {b: *a}\n",
        "peers: " + "[" * 100_000,
        "{" * 20_000,
        "- " * 20_000,
        "team: '" + "x" * 30_000,
        "&a " * 5000 + "x",
        "!!map " * 5000,
        "version: 0x" + "f" * 30_000 + "\n",
        "version: 1e99999\n",
        "version: 1:2:3:4:5:6:7:8:9\n",
        "\ufeffteam: acme\n\ufeff",
        "team: \ud800\n",
    ]
    for source in corpus:
        with pytest.raises(PolicyInvalid) as caught:
            parse_policy(source, PATH)
        assert caught.value.path == PATH
