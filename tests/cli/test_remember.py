"""`mem remember` through the real command line: output, the novelty gate, limits, home, project."""

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner

ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")
SHORT = re.compile(r"[0-9A-HJKMNP-TV-Z]{10}")  # the id shown: see tests/cli/test_ids.py
WEBHOOKS = "The billing service retries webhooks 5 times"


def _items(mem: MemRunner, *args: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json_of(mem("list", "--status", "all", "--json", *args))["items"]
    return items


def _project_of(mem: MemRunner, *args: str, env: dict[str, str] | None = None) -> str:
    project: str = json_of(mem("remember", WEBHOOKS, "--json", *args, env=env))["item"]["project"]
    return project


def test_remember_prints_the_id_and_recall_finds_it(mem: MemRunner) -> None:
    created = mem("remember", "The billing service retries webhooks 5 times", "--json")
    assert created.returncode == 0, created.stderr
    answer = json.loads(created.stdout)
    assert answer["status"] == "created"

    found = mem("recall", "how often are webhooks retried", "--json")
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)
    assert result["abstained"] is False
    assert [hit["id"] for hit in result["hits"]] == [answer["id"]]


def test_remember_refuses_empty_text_and_changes_nothing(mem: MemRunner) -> None:
    refused = mem("remember", "   ")
    assert refused.returncode == 2
    assert refused.stderr.strip() == "mem: error: text is empty; give the fact to remember"
    listed = json.loads(mem("list", "--json").stdout)
    assert listed == {"items": []}


# -- output and the novelty gate -------------------------------------------------------------


def test_remember_json_is_one_object_with_id_status_and_item(mem: MemRunner) -> None:
    result = mem(
        "remember", f"  {WEBHOOKS}  ", "--kind", "gotcha", "--project", "shop",
        "--tag", "CI", "--tag", "ci", "--tag", "docker", "--json",
    )  # fmt: skip
    data = json_of(result)
    assert result.stderr == ""
    assert set(data) == {"id", "status", "item"}
    assert ULID.fullmatch(data["id"])
    assert data["status"] == "created"
    item = data["item"]
    assert item["id"] == data["id"]
    assert item["text"] == WEBHOOKS  # surrounding blanks are stripped
    assert (item["kind"], item["project"]) == ("gotcha", "shop")
    assert item["tags"] == ["ci", "docker"]  # lower-cased, de-duplicated, in order
    assert (item["author"], item["status"], item["reinforcements"]) == ("tester", "active", 0)
    assert (item["superseded_by"], item["supersedes"]) == (None, None)


def test_the_same_fact_again_reinforces_the_first_item_instead_of_copying_it(
    mem: MemRunner,
) -> None:
    first = mem("remember", WEBHOOKS)
    assert first.returncode == 0
    assert first.stderr == ""
    assert SHORT.fullmatch(first.stdout.rstrip("\n")), first.stdout

    again = mem("remember", WEBHOOKS)
    assert again.returncode == 0
    assert again.stdout == first.stdout
    assert again.stderr == "reinforced an existing item (1x)\n"

    # Case, spacing and final punctuation do not make a new fact either.
    third = json_of(mem("remember", "the billing  service retries webhooks 5 times.", "--json"))
    assert third["status"] == "reinforced"
    assert third["id"].startswith(first.stdout.strip())
    assert third["item"]["reinforcements"] == 2
    assert third["item"]["text"] == WEBHOOKS
    # Outside a git repository and without MEM_PROJECT, the project is global.
    assert third["item"]["project"] == "global"

    # Nor does a near-duplicate by the same author: same words, numbers and negations.
    near = json_of(mem("remember", "Billing service retries the webhooks 5 times", "--json"))
    assert (near["status"], near["id"]) == ("reinforced", third["id"])
    assert [item["id"] for item in _items(mem)] == [third["id"]]


def test_other_numbers_negations_and_projects_make_new_items(mem: MemRunner) -> None:
    first = json_of(mem("remember", WEBHOOKS, "--json"))
    others = [
        json_of(mem("remember", "The billing service retries webhooks 6 times", "--json")),
        json_of(mem("remember", "The billing service does not retry webhooks 5 times", "--json")),
        json_of(mem("remember", WEBHOOKS, "--project", "billing", "--json")),
    ]
    assert [other["status"] for other in others] == ["created"] * 3
    assert len({first["id"], *(other["id"] for other in others)}) == 4


def test_the_same_text_with_another_kind_reinforces_and_says_how_to_change_the_kind(
    mem: MemRunner,
) -> None:
    first = json_of(mem("remember", WEBHOOKS, "--kind", "gotcha", "--json"))
    shown = first["id"][:10]

    again = mem("remember", WEBHOOKS, "--kind", "decision")

    assert (again.returncode, again.stdout) == (0, f"{shown}\n")
    assert again.stderr == (
        "reinforced an existing item (1x)\n"
        "mem: warning: its kind stays gotcha (not decision); to change it: "
        f"`mem edit {shown} --kind decision`\n"
    )
    assert _items(mem)[0]["kind"] == "gotcha"
    # Without --kind nothing was asked of the kind, so nothing is said about it.
    assert mem("remember", WEBHOOKS).stderr == "reinforced an existing item (2x)\n"
    assert mem("remember", WEBHOOKS, "--kind", "gotcha").stderr == (
        "reinforced an existing item (3x)\n"
    )


# -- the text from standard input ------------------------------------------------------------


def test_remember_dash_reads_the_text_from_standard_input(mem: MemRunner) -> None:
    made = mem("remember", "-", "--kind", "gotcha", "--json", stdin="  Staging needs the VPN\n")
    item = json_of(made)["item"]
    assert (item["text"], item["kind"]) == ("Staging needs the VPN", "gotcha")
    shown = mem("remember", "-", stdin="Deploys go out on Tuesdays\n\nand never on Fridays\n")
    assert shown.returncode == 0, shown.stderr
    assert json_of(mem("show", shown.stdout.strip(), "--json"))["item"]["text"] == (
        "Deploys go out on Tuesdays\n\nand never on Fridays"
    )


def test_remember_dash_refuses_empty_standard_input(mem: MemRunner) -> None:
    for stdin in ("", "  \n\n"):
        refused = mem("remember", "-", stdin=stdin)
        assert refused.returncode == 2
        assert error_line(refused) == (
            "mem: error: standard input is empty: pipe the text in, or give it as an "
            "argument (see `mem remember --help`)"
        )
    assert _items(mem) == []


def test_remember_dash_holds_standard_input_to_the_text_limit(mem: MemRunner) -> None:
    over = mem("remember", "-", stdin="y" * 9 * 1024 + "\n")
    assert over.returncode == 2
    assert error_line(over) == (
        "mem: error: text is 9216 bytes; the limit is 8192 bytes (8 KiB): "
        "remember one fact at a time"
    )
    # Far more is not read whole to find out.
    flood = mem("remember", "-", stdin="z" * (1 << 20))
    assert flood.returncode == 2
    assert error_line(flood) == (
        "mem: error: standard input holds more than 16384 bytes; the limit is 8192 bytes "
        "(8 KiB): remember one fact at a time (see `mem remember --help`)"
    )
    assert _items(mem) == []


def test_remember_dash_refuses_standard_input_that_is_not_utf8(mem: MemRunner) -> None:
    command = [sys.executable, "-m", "memmesh", "--home", str(mem.home), "remember", "-"]
    refused = subprocess.run(command, input=b"caf\xe9 au lait\n", capture_output=True, check=False)
    assert refused.returncode == 2
    assert refused.stderr.decode() == (
        "mem: error: standard input is not UTF-8 text (see `mem remember --help`)\n"
    )


def test_revise_dash_reads_the_new_text_from_standard_input(mem: MemRunner) -> None:
    old = json_of(mem("remember", WEBHOOKS, "--json"))["id"]
    revised = mem("revise", old, "-", stdin="The billing service retries webhooks 8 times\n")
    assert revised.returncode == 0, revised.stderr
    new = json_of(mem("show", revised.stdout.strip(), "--json"))["item"]
    assert (new["text"], new["supersedes"]) == ("The billing service retries webhooks 8 times", old)
    empty = mem("revise", new["id"], "-", stdin="")
    assert empty.returncode == 2
    assert error_line(empty) == (
        "mem: error: standard input is empty: pipe the text in, or give it as an argument "
        "(see `mem revise --help`)"
    )


# -- bad input -------------------------------------------------------------------------------


def test_remember_refuses_9_kib_of_text_and_stores_nothing(mem: MemRunner) -> None:
    refused = mem("remember", "y" * 9 * 1024)
    assert refused.returncode == 2
    assert error_line(refused) == (
        "mem: error: text is 9216 bytes; the limit is 8192 bytes (8 KiB): "
        "remember one fact at a time"
    )
    assert _items(mem) == []


def test_remember_counts_the_8_kib_limit_in_utf8_bytes(mem: MemRunner) -> None:
    exactly = json_of(mem("remember", "é" * 4096, "--json"))  # 8192 bytes
    assert exactly["status"] == "created"
    over = mem("remember", "é" * 4096 + "!")
    assert over.returncode == 2
    assert error_line(over).startswith("mem: error: text is 8193 bytes; the limit is 8192")


def test_remember_refuses_text_that_is_not_valid_unicode(mem: MemRunner) -> None:
    # Undecodable bytes on the command line reach Python as lone surrogates.
    refused = mem("remember", "cache key \udcff")
    assert refused.returncode == 2
    assert error_line(refused) == (
        "mem: error: text is not valid Unicode (it contains lone surrogates)"
    )


def test_remember_refuses_a_bad_project_name(mem: MemRunner) -> None:
    refused = mem("remember", WEBHOOKS, "--project", "my project")
    assert refused.returncode == 2
    assert error_line(refused) == (
        "mem: error: project 'my project' is not a valid name "
        "(1-64 letters, digits, '.', '-' or '_', starting with a letter or digit)"
    )


def test_remember_refuses_a_bad_tag_and_too_many_tags(mem: MemRunner) -> None:
    bad = mem("remember", WEBHOOKS, "--tag", "no tag")
    assert bad.returncode == 2
    assert error_line(bad).startswith("mem: error: tag 'no tag' is not a valid name")

    tags = [arg for n in range(17) for arg in ("--tag", f"t{n}")]
    many = mem("remember", WEBHOOKS, *tags)
    assert many.returncode == 2
    assert error_line(many) == "mem: error: 17 tags given; at most 16 are allowed"


def test_remember_refuses_project_and_global_together(mem: MemRunner) -> None:
    refused = mem("remember", WEBHOOKS, "--project", "shop", "--global")
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert refused.stderr.splitlines()[-1] == (
        "mem remember: error: argument --global: not allowed with argument --project "
        "(see `mem remember --help`)"
    )


def test_remember_refuses_an_empty_project(mem: MemRunner) -> None:
    refused = mem("remember", WEBHOOKS, "--project", "", env={"MEM_PROJECT": "shop"})
    assert refused.returncode == 2
    assert error_line(refused) == (
        "mem remember: error: argument --project: must not be empty (see `mem remember --help`)"
    )


# -- which home ------------------------------------------------------------------------------


def test_home_before_and_after_the_command_name_is_the_same_store(
    mem: MemRunner, home: Path
) -> None:
    before = json_of(mem("remember", WEBHOOKS, "--json"))  # the runner puts --home first
    after = mem("list", "--json", "--home", str(home), home=False)
    assert [item["id"] for item in json_of(after)["items"]] == [before["id"]]
    assert (home / "memory.db").is_file()


def test_mem_home_is_used_when_no_home_flag_is_given(mem: MemRunner, tmp_path: Path) -> None:
    user_home = tmp_path / "user"
    user_home.mkdir()
    env = {"MEM_HOME": "~/memories", "HOME": str(user_home)}
    json_of(mem("remember", WEBHOOKS, "--json", env=env, home=False))
    # A leading tilde is the user's home folder.
    assert (user_home / "memories" / "memory.db").is_file()
    assert not mem.home.exists()


def test_home_flag_wins_over_mem_home(mem: MemRunner, home: Path, tmp_path: Path) -> None:
    other = tmp_path / "other-home"
    json_of(mem("remember", WEBHOOKS, "--json", env={"MEM_HOME": str(other)}))
    assert (home / "memory.db").is_file()
    assert not other.exists()


def test_an_empty_home_flag_is_refused(mem: MemRunner, tmp_path: Path) -> None:
    user_home = tmp_path / "user"
    user_home.mkdir()
    refused = mem("--home", "", "remember", WEBHOOKS, env={"HOME": str(user_home)}, home=False)
    assert not (user_home / ".memmesh").exists()
    assert refused.returncode == 2
    assert " error: argument " in error_line(refused)


# -- which project ---------------------------------------------------------------------------


def test_mem_project_sets_the_project(mem: MemRunner) -> None:
    assert _project_of(mem, env={"MEM_PROJECT": "shop"}) == "shop"


def test_project_flag_wins_over_mem_project(mem: MemRunner) -> None:
    assert _project_of(mem, "--project", "billing", env={"MEM_PROJECT": "shop"}) == "billing"


def test_global_flag_wins_over_mem_project(mem: MemRunner) -> None:
    assert _project_of(mem, "--global", env={"MEM_PROJECT": "shop"}) == "global"


def test_project_defaults_to_the_enclosing_git_repository(mem: MemRunner, tmp_path: Path) -> None:
    repo = tmp_path / "shop-api"
    (repo / ".git").mkdir(parents=True)
    mem.cwd = repo / "src" / "handlers"
    mem.cwd.mkdir(parents=True)
    assert _project_of(mem) == "shop-api"


def test_mem_project_wins_over_the_git_repository(mem: MemRunner, tmp_path: Path) -> None:
    repo = tmp_path / "shop-api"
    (repo / ".git").mkdir(parents=True)
    mem.cwd = repo
    assert _project_of(mem, env={"MEM_PROJECT": "billing"}) == "billing"


def test_git_repository_name_is_made_a_valid_project_name(mem: MemRunner, tmp_path: Path) -> None:
    repo = tmp_path / "My Shop (old)"
    (repo / ".git").mkdir(parents=True)
    mem.cwd = repo
    assert _project_of(mem) == "My-Shop--old-"


def test_invalid_mem_project_is_refused(mem: MemRunner) -> None:
    refused = mem("remember", WEBHOOKS, env={"MEM_PROJECT": "no/slashes"})
    assert refused.returncode == 2
    assert error_line(refused).startswith("mem: error: project 'no/slashes' is not a valid name")
