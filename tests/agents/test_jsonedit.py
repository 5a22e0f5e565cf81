"""Text-preserving JSON edits: only memmesh's member changes, every other byte stays put."""

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memmesh.agents._jsonedit import EditError, load_object, set_member, upsert_element
from tests.agents._diff import inserted

SERVER = {"command": "/opt/memmesh/bin/mem", "args": ["--home", "/srv/zoë mem", "mcp"]}
MOVED = {"command": "/usr/local/bin/mem", "args": ["mcp"]}
PATH = ["mcpServers", "memmesh"]
HOOKS = ["hooks", "SessionStart"]


def _with(data: dict[str, Any], path: list[str], value: Any) -> dict[str, Any]:
    expected = copy.deepcopy(data)
    current = expected
    for key in path[:-1]:
        current = current.setdefault(key, {})
    current[path[-1]] = value
    return expected


def _is_ours(element: Any) -> bool:
    return isinstance(element, dict) and element.get("owner") == "memmesh"


# -- set_member: layouts -----------------------------------------------------------------------

SETTINGS = {
    "theme": "dark",
    "editor": {"fontSize": 14, "rulers": [80, 100], "wrap": None},
    "telemetry": False,
}


@pytest.mark.parametrize("indent", [2, 4, "\t"], ids=["two-spaces", "four-spaces", "tabs"])
def test_member_is_written_in_the_files_own_indentation(indent: int | str) -> None:
    before = json.dumps(SETTINGS, indent=indent) + "\n"

    after = set_member(before, PATH, SERVER)

    expected = _with(SETTINGS, PATH, SERVER)
    # Exactly what the file's own formatter would have written, and nothing of the old text lost.
    assert after == json.dumps(expected, indent=indent, ensure_ascii=False) + "\n"
    assert json.loads(after) == expected
    assert inserted(before, after).startswith(",")


def test_member_is_added_to_a_one_line_file_on_the_same_line() -> None:
    before = '{"theme":"dark","editor":{"fontSize":14}}'

    after = set_member(before, PATH, SERVER)

    assert after == (
        '{"theme":"dark","editor":{"fontSize":14}, "mcpServers": {"memmesh": '
        '{"command": "/opt/memmesh/bin/mem", "args": ["--home", "/srv/zoë mem", "mcp"]}}}'
    )
    assert json.loads(after) == _with(json.loads(before), PATH, SERVER)


def test_empty_object_without_newline_gets_the_member_on_one_line() -> None:
    assert set_member("{}", ["mcpServers", "memmesh"], {"command": "mem"}) == (
        '{"mcpServers": {"memmesh": {"command": "mem"}}}'
    )


@pytest.mark.parametrize("text", ["{}\n", "", "  \n\n"], ids=["empty-object", "empty", "blank"])
def test_empty_file_gets_a_two_space_document(text: str) -> None:
    after = set_member(text, PATH, SERVER)

    assert after == (
        json.dumps({"mcpServers": {"memmesh": SERVER}}, indent=2, ensure_ascii=False) + "\n"
    )


def test_member_goes_inside_existing_objects_and_leaves_siblings_alone() -> None:
    before = (
        "{\n"
        '  "mcpServers": {\n'
        '    "github": {"command": "npx", "args": ["-y", "@mcp/github"]},\n'
        '    "linear": {\n'
        '      "url": "https://mcp.linear.app/sse"\n'
        "    }\n"
        "  },\n"
        '  "numStartups": 7\n'
        "}\n"
    )

    after = set_member(before, PATH, {"command": "mem"})

    assert inserted(before, after) == ',\n    "memmesh": {\n      "command": "mem"\n    }'
    assert json.loads(after)["mcpServers"]["memmesh"] == {"command": "mem"}


def test_missing_parent_objects_are_created_at_the_end() -> None:
    before = '{\n  "a": {\n    "b": 1\n  }\n}\n'

    after = set_member(before, ["x", "y", "z"], [1, {"k": None}])

    assert json.loads(after) == {"a": {"b": 1}, "x": {"y": {"z": [1, {"k": None}]}}}
    assert inserted(before, after).startswith(',\n  "x": {\n    "y": {')


def test_existing_empty_object_in_a_multiline_file_is_filled_in_its_indentation() -> None:
    before = '{\n    "other": true,\n    "mcpServers": {}\n}\n'

    after = set_member(before, PATH, {"command": "mem"})

    assert after == (
        '{\n    "other": true,\n    "mcpServers": {\n        "memmesh": {\n'
        '            "command": "mem"\n        }\n    }\n}\n'
    )


# -- set_member: replacing ---------------------------------------------------------------------


def test_existing_memmesh_entry_is_replaced_in_place() -> None:
    old_value = '{\n      "command": "/old/venv/bin/mem",\n      "args": ["mcp"]\n    }'
    before = (
        "{\n"
        '  "mcpServers": {\n'
        '    "github": {"command": "npx"},\n'
        f'    "memmesh": {old_value},\n'
        '    "zeta": {"command": "zeta-mcp"}\n'
        "  },\n"
        '  "projects": {"/src/app": {"mcpServers": {"memmesh": {"command": "kept"}}}}\n'
        "}\n"
    )

    after = set_member(before, PATH, MOVED)

    assert after == before.replace(
        old_value,
        '{\n      "command": "/usr/local/bin/mem",\n      "args": [\n        "mcp"\n      ]\n    }',
    )
    data = json.loads(after)
    assert data["mcpServers"]["memmesh"] == MOVED
    # A project's own entry of the same name is not memmesh's top-level server.
    assert data["projects"]["/src/app"]["mcpServers"]["memmesh"] == {"command": "kept"}


def test_setting_the_same_value_again_returns_the_same_text() -> None:
    once = set_member(json.dumps(SETTINGS, indent=4), PATH, SERVER)

    assert set_member(once, PATH, SERVER) == once


def test_replacing_and_restoring_a_value_gives_back_the_same_text() -> None:
    once = set_member('{\n  "a": [1, 2],\n  "b": "x"\n}', PATH, SERVER)

    moved = set_member(once, PATH, MOVED)

    assert moved != once
    assert set_member(moved, PATH, SERVER) == once


# -- set_member: unrelated content keeps its bytes ---------------------------------------------

STRANGE = (
    "{\n"
    '  "escaped": "caf\\u00e9 \\"quoted\\" tab\\there \\\\ \\/ \\ud83d\\ude00",\n'
    '  "raw": "café ☃ 日本語 😀",\n'
    '  "k:\\"{": "a key with a colon, a quote and a brace",\n'
    '  "{\\"mcpServers\\": {}}": {"looks": "like json"},\n'
    '  "mixed": [1, -0.0, 3.50, 1E+10, 2e-3, "two", null, true, false, {"x": []}, [[], {}]],\n'
    '  "deep": {"a": {"b": {"c": [{"d": "e"}]}}}\n'
    "}\n"
)


def test_escapes_unicode_and_odd_keys_in_other_members_keep_their_exact_source() -> None:
    after = set_member(STRANGE, PATH, SERVER)

    inserted(STRANGE, after)
    # The numbers and escapes are not re-serialised: 3.50 stays 3.50, \u00e9 stays escaped.
    for source in [
        '"caf\\u00e9 \\"quoted\\" tab\\there \\\\ \\/ \\ud83d\\ude00"',
        '"raw": "café ☃ 日本語 😀"',
        '"k:\\"{": "a key with a colon, a quote and a brace"',
        '[1, -0.0, 3.50, 1E+10, 2e-3, "two", null, true, false, {"x": []}, [[], {}]]',
    ]:
        assert source in after
    assert json.loads(after) == _with(json.loads(STRANGE), PATH, SERVER)


def test_key_that_only_looks_like_the_path_is_not_mistaken_for_it() -> None:
    after = set_member(STRANGE, PATH, SERVER)

    data = json.loads(after)
    assert data['{"mcpServers": {}}'] == {"looks": "like json"}
    assert data["mcpServers"] == {"memmesh": SERVER}


def test_crlf_lines_of_other_members_are_kept() -> None:
    before = '{\r\n  "a": 1,\r\n  "b": [true]\r\n}\r\n'

    after = set_member(before, PATH, {"command": "mem"})

    inserted(before, after)
    assert json.loads(after) == {"a": 1, "b": [True], "mcpServers": {"memmesh": {"command": "mem"}}}


# -- set_member: refusals ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{\n  // my servers\n  "a": 1\n}', "not plain JSON"),
        ('{\n  "a": 1 /* why */\n}', "not plain JSON"),
        ('{\n  "a": 1,\n}', "not plain JSON"),
        ('{"a": [1, 2,]}', "not plain JSON"),
        ('{"a": 1, "a": 2}', "the key 'a' appears twice"),
        ('{"x": {"mcpServers": 1, "mcpServers": 2}}', "the key 'mcpServers' appears twice"),
        ("[1, 2]", "not a JSON object"),
        ('"just a string"', "not a JSON object"),
        ("null", "not a JSON object"),
        ('{"a": 1} {"b": 2}', "not plain JSON"),
        ('{"a": 1', "not plain JSON"),
        ('\ufeff{"a": 1}', "not plain JSON"),
        ('{"mcpServers": []}', "'mcpServers' is not an object"),
        ('{"mcpServers": "none"}', "'mcpServers' is not an object"),
    ],
    ids=[
        "line-comment",
        "block-comment",
        "trailing-comma",
        "trailing-comma-in-array",
        "duplicate-key",
        "nested-duplicate-key",
        "array-top-level",
        "string-top-level",
        "null-top-level",
        "two-documents",
        "truncated",
        "byte-order-mark",
        "servers-is-a-list",
        "servers-is-a-string",
    ],
)
def test_documents_that_cannot_be_edited_safely_are_refused(text: str, problem: str) -> None:
    with pytest.raises(EditError, match=problem.replace("(", r"\(")):
        set_member(text, PATH, SERVER)


def test_load_object_reads_an_empty_text_as_an_empty_object() -> None:
    assert load_object(" \n") == {}
    assert load_object('{"a": [1]}') == {"a": [1]}


# -- upsert_element ----------------------------------------------------------------------------

HOOKS_FILE = (
    "{\n"
    '  "hooks": {\n'
    '    "PreToolUse": [{"matcher": "Bash", "hooks": []}],\n'
    '    "SessionStart": [\n'
    '      {"owner": "someone", "run": "echo hi"},\n'
    '      {"owner": "memmesh", "run": "/old/mem hook brief"},\n'
    '      {"owner": "else", "run": "date"}\n'
    "    ]\n"
    "  }\n"
    "}\n"
)
NEW = {"owner": "memmesh", "run": "/new/mem hook brief"}


def test_upsert_replaces_our_element_in_place() -> None:
    after = upsert_element(HOOKS_FILE, HOOKS, _is_ours, NEW)

    assert after == HOOKS_FILE.replace(
        '{"owner": "memmesh", "run": "/old/mem hook brief"}',
        '{\n        "owner": "memmesh",\n        "run": "/new/mem hook brief"\n      }',
    )
    assert [e["owner"] for e in json.loads(after)["hooks"]["SessionStart"]] == [
        "someone",
        "memmesh",
        "else",
    ]


def test_upsert_appends_when_no_element_is_ours() -> None:
    before = HOOKS_FILE.replace('"memmesh"', '"another"')

    after = upsert_element(before, HOOKS, _is_ours, NEW)

    assert inserted(before, after) == (
        ',\n      {\n        "owner": "memmesh",\n        "run": "/new/mem hook brief"\n      }'
    )


def test_upsert_creates_the_array_in_an_existing_object() -> None:
    before = '{\n  "hooks": {\n    "PreToolUse": []\n  },\n  "model": "opus"\n}\n'

    after = upsert_element(before, HOOKS, _is_ours, NEW)

    inserted(before, after)
    assert json.loads(after) == {
        "hooks": {"PreToolUse": [], "SessionStart": [NEW]},
        "model": "opus",
    }


def test_upsert_creates_objects_and_array_in_an_empty_file() -> None:
    after = upsert_element("", HOOKS, _is_ours, NEW)

    assert json.loads(after) == {"hooks": {"SessionStart": [NEW]}}


def test_upsert_fills_an_empty_array() -> None:
    before = '{\n  "hooks": {\n    "SessionStart": []\n  }\n}\n'

    after = upsert_element(before, HOOKS, _is_ours, NEW)

    assert after == (
        '{\n  "hooks": {\n    "SessionStart": [\n      {\n        "owner": "memmesh",\n'
        '        "run": "/new/mem hook brief"\n      }\n    ]\n  }\n}\n'
    )


def test_upsert_keeps_one_of_several_elements_that_are_ours() -> None:
    before = (
        '{"hooks": {"SessionStart": [{"owner": "memmesh", "n": 1}, "x", '
        '{"owner": "memmesh", "n": 2}, 3.50, {"owner": "memmesh", "n": 3}]}}'
    )

    after = upsert_element(before, HOOKS, _is_ours, NEW)

    assert json.loads(after)["hooks"]["SessionStart"] == [NEW, "x", 3.50]
    assert after == '{"hooks": {"SessionStart": [' + json.dumps(NEW) + ', "x", 3.50]}}'


def test_upsert_of_the_same_element_again_returns_the_same_text() -> None:
    once = upsert_element(HOOKS_FILE, HOOKS, _is_ours, NEW)

    assert upsert_element(once, HOOKS, _is_ours, NEW) == once


@pytest.mark.parametrize(
    "text",
    [
        '{"hooks": {"SessionStart": {"owner": "memmesh"}}}',
        '{"hooks": {"SessionStart": "mem hook brief"}}',
        '{"hooks": ["SessionStart"]}',
        '{"hooks": {"SessionStart": [],}}',
    ],
    ids=["object-not-list", "string-not-list", "hooks-is-a-list", "trailing-comma"],
)
def test_upsert_refuses_a_path_that_is_not_a_list(text: str) -> None:
    with pytest.raises(EditError):
        upsert_element(text, HOOKS, _is_ours, NEW)


# -- properties --------------------------------------------------------------------------------

_KEYS = st.text(max_size=6).filter(lambda key: key != "mcpServers")
_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)
_INDENTS = st.sampled_from([None, 0, 2, 4, "\t"])
_SLOW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def _documents(draw: st.DrawFn) -> dict[str, Any]:
    """Objects of any shape, sometimes with servers of their own or an old memmesh entry."""
    data: dict[str, Any] = draw(st.dictionaries(_KEYS, _VALUES, max_size=5))
    servers = draw(st.none() | st.dictionaries(st.text(max_size=5), _VALUES, max_size=3))
    if servers is not None:
        data["mcpServers"] = servers
    return data


@_SLOW
@given(data=_documents(), indent=_INDENTS, value=_VALUES)
def test_set_member_changes_only_the_member(
    data: dict[str, Any], indent: int | str | None, value: Any
) -> None:
    before = json.dumps(data, indent=indent)

    after = set_member(before, PATH, value)

    assert json.loads(after) == _with(data, PATH, value)
    assert set_member(after, PATH, value) == after
    if "memmesh" not in data.get("mcpServers", {}):
        inserted(before, after)
    # Changing the value and changing it back restores the text: no other byte moved.
    assert set_member(set_member(after, PATH, {"other": [value]}), PATH, value) == after


@_SLOW
@given(
    elements=st.lists(
        st.sampled_from([{"owner": "memmesh"}, {"owner": "other"}]) | _VALUES, max_size=5
    ),
    others=st.dictionaries(_KEYS, _VALUES, max_size=3),
    indent=_INDENTS,
)
def test_upsert_element_leaves_one_of_ours_among_the_others(
    elements: list[Any], others: dict[str, Any], indent: int | str | None
) -> None:
    before = json.dumps({**others, "hooks": {"SessionStart": elements}}, indent=indent)

    after = upsert_element(before, HOOKS, _is_ours, NEW)

    result = json.loads(after)["hooks"]["SessionStart"]
    assert [e for e in result if not _is_ours(e)] == [e for e in elements if not _is_ours(e)]
    assert result.count(NEW) == 1
    assert sum(_is_ours(e) for e in result) == 1
    if not any(_is_ours(e) for e in elements):
        inserted(before, after)
        assert result[-1] == NEW
    assert upsert_element(after, HOOKS, _is_ours, NEW) == after
