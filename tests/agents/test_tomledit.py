"""Setting and removing Codex's `[mcp_servers.memmesh]`: the rest of config.toml stays as it was."""

import tomllib

import pytest

from memmesh.agents._jsonedit import EditError
from memmesh.agents._tomledit import load_table, remove_table, set_table

PATH = ["mcp_servers", "memmesh"]
VALUES = {"command": "/opt/memmesh/bin/mem", "args": ["--home", "/srv/mem", "mcp"]}
RENDERED = (
    "[mcp_servers.memmesh]\n"
    'command = "/opt/memmesh/bin/mem"\n'
    'args = ["--home", "/srv/mem", "mcp"]\n'
)

# Everything in a real config.toml that is not memmesh's.
HEAD = r"""# ~/.codex/config.toml — edited by hand
model = "gpt-5-codex"   # the default model
model_reasoning_effort = "high"
approval_policy = "on-request"
notify = ["notify-send", "Codex"]

[sandbox_workspace_write]
network_access = false
writable_roots = [
  "/tmp",
  '/home/zoë/.cache',
]

[mcp_servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]

[mcp_servers.github.env]
GITHUB_TOKEN = "ghp_example"

"""
TAIL = (
    r'''# Profiles: pick one with `codex --profile fast`
[profiles.fast]
model = "o4-mini"
instructions = """
Answer briefly.
[not a table] just text in a string
"""
paths = { cache = 'C:\Users\zoë\cache', log = "C:\\logs" }

[[skills.extra]]
name = 'lint'
'''
    + "run = '''\nruff check .\n'''\n"
    + """
[[skills.extra]]
name = "test"
"""
)
CONFIG = HEAD + TAIL


def test_table_is_appended_after_the_existing_text() -> None:
    after = set_table(CONFIG, PATH, VALUES)

    assert after == CONFIG + "\n" + RENDERED
    expected = tomllib.loads(CONFIG)
    expected["mcp_servers"]["memmesh"] = VALUES
    assert tomllib.loads(after) == expected


def test_existing_table_gets_our_keys_and_keeps_the_users_keys_and_sub_tables() -> None:
    ours = (
        "[mcp_servers.memmesh]\n"
        'command = "mem"  # an old install\n'
        'args = ["mcp"]\n'
        "startup_timeout_sec = 20\n"
        "\n"
        "[mcp_servers.memmesh.env]\n"
        'MEM_PROJECT = "billing"\n'
    )
    before = HEAD + "# memmesh, added before the installer existed\n" + ours + "\n" + TAIL

    after = set_table(before, PATH, VALUES)

    # Only the lines of the keys we own change; what the user added to the table stays.
    kept = 'startup_timeout_sec = 20\n\n[mcp_servers.memmesh.env]\nMEM_PROJECT = "billing"\n'
    assert after == (
        HEAD + "# memmesh, added before the installer existed\n" + RENDERED + kept + "\n" + TAIL
    )
    assert tomllib.loads(after)["mcp_servers"]["memmesh"] == {
        **VALUES,
        "startup_timeout_sec": 20,
        "env": {"MEM_PROJECT": "billing"},
    }


def test_table_at_the_end_keeps_the_comments_that_follow_it() -> None:
    before = 'model = "o3"\n\n[mcp_servers.memmesh]\ncommand = "mem"\n\n# the end\n'

    after = set_table(before, PATH, VALUES)

    assert after == 'model = "o3"\n\n' + RENDERED + "\n# the end\n"


def test_quoted_and_spaced_header_of_the_table_is_recognised() -> None:
    before = '[ mcp_servers . "memmesh" ]  # ours\ncommand = "mem"\n\n[other]\na = 1\n'

    after = set_table(before, PATH, VALUES)

    assert after == '[ mcp_servers . "memmesh" ]  # ours\n' + RENDERED.split("\n", 1)[1] + (
        "\n[other]\na = 1\n"
    )


def test_setting_the_same_table_again_returns_the_same_text() -> None:
    once = set_table(CONFIG, PATH, VALUES)

    assert set_table(once, PATH, VALUES) == once


def test_changing_and_restoring_the_table_gives_back_the_same_text() -> None:
    once = set_table(CONFIG, PATH, VALUES)
    moved = set_table(once, PATH, {"command": "/usr/local/bin/mem", "args": ["mcp"]})

    assert moved != once
    assert moved.startswith(CONFIG)
    assert set_table(moved, PATH, VALUES) == once


def test_file_without_a_final_newline_gets_one_before_the_table() -> None:
    after = set_table('model = "o3"', PATH, VALUES)

    assert after == 'model = "o3"\n\n' + RENDERED


def test_empty_file_gets_just_the_table() -> None:
    assert set_table("", PATH, VALUES) == RENDERED


def test_crlf_lines_of_the_rest_of_the_file_are_kept() -> None:
    before = (
        'model = "o3"\r\n\r\n[mcp_servers.memmesh]\r\ncommand = "mem"\r\n\r\n[after]\r\nb = 2\r\n'
    )

    after = set_table(before, PATH, VALUES)

    assert after == 'model = "o3"\r\n\r\n' + RENDERED.replace("\n", "\r\n") + (
        "\r\n[after]\r\nb = 2\r\n"
    )


def test_values_that_need_escaping_are_written_as_valid_toml() -> None:
    values = {
        "command": 'C:\\Program Files\\mem "beta"\\mem.exe',
        "args": ["--home", "/srv/zoë\tmem", "mcp"],
        "env": {"MEM_AUTHOR": "zoë", "weird key": "x"},
        "enabled": True,
        "startup_timeout_sec": 2.5,
    }

    after = set_table('model = "o3"\n', PATH, values)

    assert tomllib.loads(after) == {"model": "o3", "mcp_servers": {"memmesh": values}}


@pytest.mark.parametrize(
    "text",
    [
        'mcp_servers = { memmesh = { command = "mem" } }\n',
        '[mcp_servers]\nmemmesh = { command = "mem", args = ["mcp"] }\n',
        '[mcp_servers]\nmemmesh.command = "mem"\n',
        'mcp_servers.memmesh.command = "mem"\n',
    ],
    ids=["inline-at-top", "inline-in-table", "dotted-in-table", "dotted-at-top"],
)
def test_table_written_in_another_form_is_refused(text: str) -> None:
    with pytest.raises(EditError, match="inline or dotted keys"):
        set_table(text, PATH, VALUES)


def test_mcp_servers_that_is_not_a_table_is_refused() -> None:
    with pytest.raises(EditError, match="'mcp_servers' is not a table"):
        set_table('mcp_servers = "none"\n', PATH, VALUES)


@pytest.mark.parametrize(
    "text",
    [
        "model = \n",
        '[mcp_servers.memmesh]\ncommand = "a"\ncommand = "b"\n',
        '[profiles.fast\nmodel = "o3"\n',
        'instructions = """never closed\n',
    ],
    ids=["missing-value", "duplicate-key", "broken-header", "open-string"],
)
def test_invalid_toml_is_refused(text: str) -> None:
    with pytest.raises(EditError, match="not valid TOML"):
        set_table(text, PATH, VALUES)
    with pytest.raises(EditError, match="not valid TOML"):
        load_table(text)


def test_a_sub_table_written_further_down_stays_where_it_is() -> None:
    tail = '\n[other]\na = 1\n\n[mcp_servers.memmesh.env]\nMEM_PROJECT = "x"\n'
    before = '[mcp_servers.memmesh]\ncommand = "mem"\n' + tail

    assert set_table(before, PATH, VALUES) == RENDERED + tail


def test_table_with_a_bracketed_line_in_a_multiline_string_is_replaced() -> None:
    before = (
        '[mcp_servers.memmesh]\ncommand = "mem"\nnote = """\n[written by hand]\n"""\n\n'
        "[other]\na = 1\n"
    )

    assert set_table(before, PATH, VALUES) == RENDERED + (
        'note = """\n[written by hand]\n"""\n\n[other]\na = 1\n'
    )


def test_a_table_known_only_through_its_sub_table_gets_its_own_header() -> None:
    before = 'model = "o3"\n\n[mcp_servers.memmesh.env]\nMEM_PROJECT = "x"\n'

    after = set_table(before, PATH, VALUES)

    assert after == before + "\n" + RENDERED
    assert tomllib.loads(after)["mcp_servers"]["memmesh"] == {**VALUES, "env": {"MEM_PROJECT": "x"}}


def test_a_table_followed_at_once_by_the_next_gets_no_blank_line_between() -> None:
    before = '[mcp_servers.memmesh]\ncommand = "mem"\n[mcp_servers.github]\ncommand = "gh"\n'

    assert set_table(before, PATH, VALUES) == RENDERED + '[mcp_servers.github]\ncommand = "gh"\n'


def test_removing_a_table_written_in_parts_takes_every_part_and_keeps_the_rest() -> None:
    before = (
        'model = "o3"\n\n[mcp_servers.memmesh]\ncommand = "mem"\n\n[other]\na = 1\n\n'
        '[mcp_servers.memmesh.env]\nMEM_PROJECT = "x"\n\n[last]\nb = 2\n'
    )

    assert remove_table(before, PATH) == 'model = "o3"\n\n[other]\na = 1\n\n[last]\nb = 2\n'


def test_removing_a_table_that_is_not_there_returns_the_same_text() -> None:
    assert remove_table(CONFIG, PATH) == CONFIG


@pytest.mark.parametrize(
    "text",
    [
        '[mcp_servers]\nmemmesh = { command = "mem", args = ["mcp"] }\n',
        '[mcp_servers]\nmemmesh.command = "mem"\n',
    ],
    ids=["inline-in-table", "dotted-in-table"],
)
def test_removing_a_table_written_in_another_form_is_refused(text: str) -> None:
    with pytest.raises(EditError, match="inline or dotted keys"):
        remove_table(text, PATH)
