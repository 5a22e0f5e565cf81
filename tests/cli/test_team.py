"""`mem team ...` through the real command line: identity, policy, publish, retract, log."""

import json
import re
import sqlite3
import stat
import subprocess
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import yaml

from memmesh.local.store import Store
from memmesh.policy import parse_policy, policy_template
from memmesh.registry import create_identity
from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner

COORDINATOR = "http://127.0.0.1:8400"
MEMBER_ID = re.compile(r"[a-z2-7]{16}")
GITHUB_TOKEN = "ghp_R8kq2ZvX4mN7pL1sT9wY3bC6dF0gH5jK8aQe"
LOCKS = "We chose Postgres advisory locks for the job queue"
CACHE = "The CI cache must be keyed on the lockfile hash"
TESTS = "Run the tests with make test"
Result = subprocess.CompletedProcess[str]


def _run(mem: MemRunner, *args: str, code: int = 0) -> Result:
    """Run `mem ARGS`, insisting on the exit code and that no traceback reached the user."""
    result = mem(*args)
    assert "Traceback" not in result.stdout + result.stderr
    assert result.returncode == code, (result.stdout, result.stderr)
    return result


def _write_policy(home: Path, **overrides: Any) -> Path:
    """Write team.yaml: a coordinator, decisions and gotchas shared, plus ``overrides``.

    A top-level key given as None is left out of the file.
    """
    data: dict[str, Any] = {
        "version": 1,
        "team": "acme",
        "identity": {"name": "ada"},
        "coordinator": COORDINATOR,
        "share": {"kinds": ["decision", "gotcha"]},
    }
    data.update(overrides)
    path = home / "team.yaml"
    home.mkdir(parents=True, exist_ok=True)
    path.write_text(
        yaml.safe_dump({k: v for k, v in data.items() if v is not None}, sort_keys=False),
        encoding="utf-8",
    )
    return path


def _member(home: Path, **overrides: Any) -> Path:
    """A member with a key and a team.yaml (the init itself is tested on its own)."""
    create_identity(home)
    return _write_policy(home, **overrides)


def _remember(
    home: Path,
    text: str,
    *,
    kind: str = "decision",
    project: str = "shop",
    tags: tuple[str, ...] = (),
) -> str:
    with Store(home, author="tester") as store:
        item, status = store.remember(text, kind=kind, project=project, tags=tags)
    assert status == "created"
    return item.id


def _log(mem: MemRunner) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = json_of(_run(mem, "team", "log", "--json"))["entries"]
    return entries


def _rows(home: Path) -> list[tuple[str, str, int]]:
    """The registry table read directly, where the log command itself is not under test."""
    with closing(sqlite3.connect(home / "memory.db")) as conn:
        rows = conn.execute("SELECT kind, item_id, version FROM registry ORDER BY seq")
        return [(str(kind), str(item_id), int(version)) for kind, item_id, version in rows]


def _summary(entries: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(e["kind"], e["item_id"], e["version"]) for e in entries]


def _json_of_failed(result: Result) -> dict[str, Any]:
    """The one JSON object a command that exits 1 on purpose (verify) printed."""
    assert result.stdout.count("\n") == 1, (result.stdout, result.stderr)
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _publish_json(mem: MemRunner, *args: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json_of(_run(mem, "team", "publish", *args, "--json"))["items"]
    return items


# -- init ------------------------------------------------------------------------------------


def test_init_prints_a_member_id_and_writes_a_private_key_and_a_closed_policy(
    mem: MemRunner, home: Path
) -> None:
    init = _run(mem, "team", "init", "--name", "ada", "--team", "acme")
    assert MEMBER_ID.fullmatch(init.stdout.rstrip("\n"))
    assert init.stdout.count("\n") == 1
    policy_path = home / "team.yaml"
    assert init.stderr == f"identity created; edit {policy_path} to choose what may be shared\n"

    key = home / "identity.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600

    text = policy_path.read_text(encoding="utf-8")
    assert sum(line.lstrip().startswith("#") for line in text.splitlines()) >= 10
    policy = parse_policy(text)
    assert policy.identity is not None
    assert (policy.team, policy.identity.name) == ("acme", "ada")
    assert policy.coordinator is None
    assert policy.share.kinds == ()

    status = json_of(_run(mem, "team", "status", "--json"))
    assert status["member_id"] == init.stdout.strip()
    assert status["coordinator"] is None


def test_init_with_share_writes_those_kinds_into_the_policy(mem: MemRunner, home: Path) -> None:
    _run(
        mem, "team", "init", "--name", "ada", "--team", "acme", "--coordinator", COORDINATOR,
        "--share", "decision", "--share", "gotcha",
    )  # fmt: skip
    policy = parse_policy((home / "team.yaml").read_text(encoding="utf-8"))
    assert policy.coordinator == COORDINATOR
    assert policy.share.kinds == ("decision", "gotcha")

    bad = _run(mem, "team", "init", "--name", "bob", "--share", "secrets", code=2)
    assert "argument --share: invalid choice: 'secrets'" in error_line(bad)


def test_init_refuses_to_overwrite_an_existing_key(mem: MemRunner, home: Path) -> None:
    _run(mem, "team", "init", "--name", "ada")
    key = home / "identity.key"
    before = key.read_bytes()
    policy = (home / "team.yaml").read_bytes()

    again = _run(mem, "team", "init", "--name", "bob", "--team", "other", code=1)
    assert error_line(again) == (
        f"mem: error: an identity key already exists at {key}; refusing to overwrite it"
    )
    assert key.read_bytes() == before
    assert (home / "team.yaml").read_bytes() == policy


def test_init_with_a_coordinator_still_publishes_nothing_until_kinds_are_listed(
    mem: MemRunner, home: Path
) -> None:
    data = json_of(
        _run(mem, "team", "init", "--name", "ada", "--coordinator", COORDINATOR, "--json")
    )
    assert MEMBER_ID.fullmatch(data["member_id"])
    assert (data["policy"], data["policy_written"]) == (str(home / "team.yaml"), True)
    policy = parse_policy((home / "team.yaml").read_text(encoding="utf-8"))
    assert (policy.coordinator, policy.share.kinds) == (COORDINATOR, ())

    item = _remember(home, LOCKS)
    refused = _run(mem, "team", "publish", item, code=3)
    assert error_line(refused) == (
        "mem: error: refused by policy, nothing was published "
        f"({item}: share.kinds: decision is not shared)"
    )


# -- policy ----------------------------------------------------------------------------------


def test_policy_path_check_and_show(mem: MemRunner, home: Path) -> None:
    path = _member(home, share={"kinds": ["decision"], "min_reinforcements": 1})

    assert _run(mem, "team", "policy", "path").stdout == f"{path}\n"
    assert _run(mem, "team", "policy", "check").stdout == (
        f"{path}: valid; shares kinds decision reinforced at least 1 time; "
        "never: tags private, secret, personal; auto_sync off\n"
    )

    shown = json_of(_run(mem, "team", "policy", "show", "--json"))["policy"]
    assert shown["team"] == "acme"
    assert shown["coordinator"] == COORDINATOR
    assert shown["share"] == {
        "kinds": ["decision"],
        "min_reinforcements": 1,
        "projects": {},
        "audiences": [],
    }
    # Absent keys show their defaults.
    assert shown["never"] == {"tags": ["private", "secret", "personal"], "patterns": []}
    assert shown["token_env"] == "MEM_TEAM_TOKEN"


def test_policy_check_on_a_broken_file_exits_3_naming_file_line_and_key(
    mem: MemRunner, home: Path
) -> None:
    path = _member(home)
    path.write_text("version: 1\nteam: acme\nshare:\n  kinds: [decision]\n  colour: red\n")

    check = _run(mem, "team", "policy", "check", code=3)
    assert error_line(check) == f"mem: error: {path}:5: share.colour: unknown key"
    show = _run(mem, "team", "policy", "show", code=3)
    assert error_line(show) == error_line(check)
    # Finding the file does not need a valid one.
    assert _run(mem, "team", "policy", "path").stdout == f"{path}\n"

    path.unlink()
    missing = _run(mem, "team", "policy", "check", code=3)
    assert error_line(missing) == (
        f"mem: error: no team policy at {path}; run `mem team init --name NAME` first"
    )


def test_publish_while_the_policy_is_invalid_exits_3_and_appends_nothing(
    mem: MemRunner, home: Path
) -> None:
    path = _member(home)
    first = _remember(home, LOCKS)
    second = _remember(home, CACHE, kind="gotcha")
    _run(mem, "team", "publish", first)
    before = _log(mem)
    assert _summary(before) == [("publication", first, 1)]

    path.write_text("team: acme\ncoordinator: http://127.0.0.1:8400\ndiscovery: 'off'\n")
    refused = _run(mem, "team", "publish", second, "--force", code=3)
    assert error_line(refused) == (f"mem: error: {path}:3: discovery: Expected `bool`, got `str`")
    status = _run(mem, "team", "status", code=3)
    assert error_line(status) == error_line(refused)
    # The log is readable without a valid policy, and nothing was appended.
    assert _log(mem) == before


# -- publish ---------------------------------------------------------------------------------


def test_publish_dry_run_lists_what_would_leave_and_changes_nothing(
    mem: MemRunner, home: Path
) -> None:
    _member(home)
    locks = _remember(home, LOCKS)
    tests = _remember(home, TESTS, kind="command")

    assert json_of(_run(mem, "team", "publish", locks, "--dry-run", "--json")) == {
        "dry_run": True,
        "items": [
            {
                "id": locks,
                "action": "publish",
                "version": 1,
                "rule": "share.kinds: decision",
                "forced": False,
                "text": LOCKS,
                "audience": None,
                "readers": None,
            }
        ],
    }
    mixed = _run(mem, "team", "publish", locks, tests, "--dry-run", code=3)
    assert mixed.stdout.splitlines() == [
        f"publish    v1  {locks[:10]}  [share.kinds: decision]",
        f"           would send: {LOCKS}",
        "           readable by: every member of the team",
        f"refused    v1  {tests[:10]}  [share.kinds: command is not shared]",
    ]
    forced = _run(mem, "team", "publish", tests, "--dry-run", "--force", "--json")
    assert json_of(forced)["items"][0] | {"text": None} == {
        "id": tests,
        "action": "publish",
        "version": 1,
        "rule": "share.kinds: command is not shared",
        "forced": True,
        "text": None,
        "audience": None,
        "readers": None,
    }
    assert _log(mem) == []


def test_publish_is_all_or_nothing_and_force_never_overrides_a_secret(
    mem: MemRunner, home: Path
) -> None:
    _member(home)
    locks = _remember(home, LOCKS)
    secret = _remember(home, f"The release bot tags with {GITHUB_TOKEN}")
    cache = _remember(home, CACHE, kind="gotcha")

    expected = (
        "mem: error: refused by policy, nothing was published "
        f"({secret}: secret detected: github-token)"
    )
    for extra in ((), ("--force",)):
        refused = _run(mem, "team", "publish", locks, secret, cache, *extra, code=3)
        assert error_line(refused) == expected
        assert GITHUB_TOKEN not in refused.stderr
    assert _log(mem) == []

    # Without the secret the same batch goes through.
    published = _publish_json(mem, locks, cache)
    assert [(p["id"], p["action"]) for p in published] == [
        (locks, "published"),
        (cache, "published"),
    ]
    assert _rows(home) == [("publication", locks, 1), ("publication", cache, 1)]


def test_force_overrides_eligibility_and_is_recorded_in_the_log(mem: MemRunner, home: Path) -> None:
    _member(home)
    tests = _remember(home, TESTS, kind="command")
    rota = _remember(home, "The on-call rota lives in the team wiki", tags=("private",))

    refused = _run(mem, "team", "publish", tests, rota, code=3)
    assert error_line(refused) == (
        "mem: error: refused by policy, nothing was published "
        f"({tests}: share.kinds: command is not shared; {rota}: never.tags: private)"
    )

    published = _publish_json(mem, tests, rota, "--force")
    assert [(p["id"], p["action"], p["forced"], p["rule"]) for p in published] == [
        (tests, "published", True, "share.kinds: command is not shared"),
        (rota, "published", True, "never.tags: private"),
    ]
    entries = _log(mem)
    assert [(e["item_id"], e["forced_rule"]) for e in entries] == [
        (tests, "share.kinds: command is not shared"),
        (rota, "never.tags: private"),
    ]
    text = _run(mem, "team", "log").stdout.splitlines()
    assert text[0].endswith(
        f"publication v1  {tests[:10]}  forced over [share.kinds: command is not shared]"
    )
    assert text[1].endswith(f"publication v1  {rota[:10]}  forced over [never.tags: private]")

    # The rule forced at publish is not held against the items afterwards.
    shop = json_of(_run(mem, "team", "status", "--json"))["projects"]["shop"]
    assert (shop["published"], shop["withheld"]) == (2, 0)


def test_publishing_an_unchanged_published_item_is_a_no_op(mem: MemRunner, home: Path) -> None:
    _member(home)
    locks = _remember(home, LOCKS)
    assert [p["action"] for p in _publish_json(mem, locks)] == ["published"]

    again = _run(mem, "team", "publish", locks)
    assert again.stdout == f"unchanged  v1  {locks[:10]}  [share.kinds: decision]\n"
    assert _summary(_log(mem)) == [("publication", locks, 1)]


# -- retract, forget, revise -----------------------------------------------------------------


def test_publishing_a_retracted_item_again_needs_again_and_says_what_teammates_will_see(
    mem: MemRunner, home: Path
) -> None:
    _member(home)
    locks = _remember(home, LOCKS)
    _run(mem, "team", "publish", locks)

    retracted = json_of(_run(mem, "team", "retract", locks, "--json"))
    assert retracted == {"retracted": [{"id": locks, "version": 1, "seq": 2}]}
    again = _run(mem, "team", "retract", locks, code=1)
    assert error_line(again) == f"mem: error: item {locks} is not published"

    refused = _run(mem, "team", "publish", locks, code=2)
    assert error_line(refused) == (
        f"mem: error: {locks} was retracted (v1): publishing it again shares it anew as v2, "
        "which teammates see like any new item; give --again to do so"
    )
    planned = _run(mem, "team", "publish", locks, "--dry-run", code=2)
    assert planned.stdout.splitlines() == [
        f"retracted  v2  {locks[:10]}  [share.kinds: decision]",
        "           retracted before: --again shares it anew as v2, which teammates see like "
        "any new item",
    ]
    assert _summary(_log(mem)) == [("publication", locks, 1), ("retraction", locks, 1)]

    republished = _publish_json(mem, locks, "--again")
    assert [(p["id"], p["action"], p["version"]) for p in republished] == [(locks, "published", 2)]
    assert _summary(_log(mem)) == [
        ("publication", locks, 1),
        ("retraction", locks, 1),
        ("publication", locks, 2),
    ]


def test_publish_eligible_publishes_everything_the_policy_allows_in_one_step(
    mem: MemRunner, home: Path
) -> None:
    _member(home)
    locks = _remember(home, LOCKS)
    _remember(home, TESTS, kind="command")  # commands are not shared
    _remember(home, f"The release bot tags with {GITHUB_TOKEN}")  # a secret
    taken_back = _remember(home, "We chose Celery for the mail queue")
    cache = _remember(home, CACHE, kind="gotcha")
    _run(mem, "team", "publish", taken_back)
    _run(mem, "team", "retract", taken_back)
    left_out = (
        f"left out, retracted before: {taken_back[:10]} "
        "(publish each again with `mem team publish ID --again`)"
    )

    planned = _run(mem, "team", "publish", "--eligible", "--dry-run")
    published = json_of(_run(mem, "team", "publish", "--eligible", "--json"))
    nothing_left = _run(mem, "team", "publish", "--eligible")

    assert planned.stdout.splitlines() == [
        f"publish    v1  {locks[:10]}  [share.kinds: decision]",
        f"           would send: {LOCKS}",
        "           readable by: every member of the team",
        f"publish    v1  {cache[:10]}  [share.kinds: gotcha]",
        f"           would send: {CACHE}",
        "           readable by: every member of the team",
        left_out,
    ]
    assert [(p["id"], p["action"]) for p in published["items"]] == [
        (locks, "published"),
        (cache, "published"),
    ]
    assert published["left_out"] == [taken_back]
    assert nothing_left.stdout.splitlines() == [
        "nothing to publish: every item the policy allows is published or was retracted",
        left_out,
    ]
    assert _summary(_log(mem))[2:] == [("publication", locks, 1), ("publication", cache, 1)]


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ((), "give the ids of the items to publish, or --eligible"),
        (("01J9ZC4", "--eligible"), "give the ids of the items to publish, or --eligible"),
        (
            ("--eligible", "--force"),
            "--eligible publishes what the policy allows: it does not go with --force or --again",
        ),
    ],
)
def test_publish_needs_ids_or_eligible_alone(
    mem: MemRunner, home: Path, args: tuple[str, ...], problem: str
) -> None:
    _member(home)

    result = _run(mem, "team", "publish", *args, code=2)

    assert error_line(result) == f"mem: error: {problem} (see `mem team publish --help`)"


def test_forgetting_a_published_item_appends_its_retraction(mem: MemRunner, home: Path) -> None:
    _member(home)
    locks = _remember(home, LOCKS)
    private = _remember(home, CACHE, kind="gotcha")
    _run(mem, "team", "publish", locks)

    _run(mem, "forget", locks)
    _run(mem, "forget", private)  # never published: nothing to retract
    entries = _log(mem)
    assert _summary(entries) == [("publication", locks, 1), ("retraction", locks, 1)]
    assert entries[1]["forced_rule"] is None


def test_revising_a_published_item_appends_its_retraction(mem: MemRunner, home: Path) -> None:
    _member(home)
    locks = _remember(home, LOCKS)
    _run(mem, "team", "publish", locks)

    revised = json_of(_run(mem, "revise", locks, LOCKS + " and Redis for sessions", "--json"))
    assert revised["superseded"] == locks
    assert _summary(_log(mem)) == [("publication", locks, 1), ("retraction", locks, 1)]
    # The new text is private until it is published itself.
    shop = json_of(_run(mem, "team", "status", "--json"))["projects"]["shop"]
    assert (shop["published"], shop["private"], shop["eligible"]) == (0, 1, 1)


# -- status ----------------------------------------------------------------------------------


def test_status_counts_items_per_project(mem: MemRunner, home: Path) -> None:
    _member(home, share={"kinds": ["decision", "gotcha"], "projects": {"web": False}})
    locks = _remember(home, LOCKS)
    _remember(home, CACHE, kind="gotcha")
    _remember(home, TESTS, kind="command")
    _remember(home, f"The release bot tags with {GITHUB_TOKEN}")
    _remember(home, "We chose React for the storefront", project="web")
    _remember(home, "Laptops run macOS 14", kind="fact", project="global")
    _run(mem, "team", "publish", locks)

    status = json_of(_run(mem, "team", "status", "--json"))
    assert (status["team"], status["coordinator"], status["awaiting_sync"]) == (
        "acme",
        COORDINATOR,
        1,
    )
    assert MEMBER_ID.fullmatch(status["member_id"])
    assert status["projects"] == {
        "global": {
            "private": 1,
            "eligible": 0,
            "published": 0,
            "withheld": 0,
            "blocked": {"share.kinds: fact is not shared": 1},
        },
        "shop": {
            "private": 3,
            "eligible": 1,
            "published": 1,
            "withheld": 0,
            "blocked": {
                "share.kinds: command is not shared": 1,
                "secret detected: github-token": 1,
            },
        },
        "web": {
            "private": 1,
            "eligible": 0,
            "published": 0,
            "withheld": 0,
            "blocked": {"share.projects.web: false": 1},
        },
    }


def test_status_text_shows_the_public_key_of_a_member_of_a_team(mem: MemRunner, home: Path) -> None:
    identity = create_identity(home)
    _write_policy(home)

    lines = _run(mem, "team", "status").stdout.splitlines()

    assert lines[:2] == [
        f"member {identity.key_id} in team acme; coordinator {COORDINATOR}; "
        "0 registry entries awaiting sync",
        f"public key {identity.public_key_text}",  # a member of a team: on its roster already
    ]
    assert "public key from `mem team status`" in policy_template(
        name="bob", team="acme", coordinator=None
    )


def test_tightened_policy_shows_published_items_as_withheld(mem: MemRunner, home: Path) -> None:
    _member(home)
    locks = _remember(home, LOCKS)
    cache = _remember(home, CACHE, kind="gotcha")
    storefront = _remember(home, "We chose React for the storefront", project="web")
    _run(mem, "team", "publish", locks, cache, storefront)
    before = _rows(home)
    assert len(before) == 3

    # Gotchas no longer shared, and the web project closed: no retraction typed.
    _write_policy(home, share={"kinds": ["decision"], "projects": {"web": False}})
    projects = json_of(_run(mem, "team", "status", "--json"))["projects"]
    assert {name: (p["published"], p["withheld"]) for name, p in projects.items()} == {
        "shop": (1, 1),
        "web": (0, 1),
    }
    assert _rows(home) == before


# -- verify ----------------------------------------------------------------------------------


def _db(home: Path) -> closing[sqlite3.Connection]:
    return closing(sqlite3.connect(home / "memory.db"))


def _change_one_payload_byte(home: Path) -> None:
    with _db(home) as conn, conn:
        payload = bytes(conn.execute("SELECT payload FROM registry WHERE seq = 1").fetchone()[0])
        at = payload.index(b"Postgres")
        changed = payload[:at] + b"p" + payload[at + 1 :]
        conn.execute("UPDATE registry SET payload = ? WHERE seq = 1", (changed,))


def _delete_the_last_row(home: Path) -> None:
    with _db(home) as conn, conn:
        conn.execute("DELETE FROM registry WHERE seq = (SELECT max(seq) FROM registry)")


def _swap_two_rows(home: Path) -> None:
    columns = (
        "kind, item_id, version, payload, signature, forced_rule, recorded_at, prev_hash, "
        "entry_hash, acked"
    )
    assign = ", ".join(f"{name.strip()} = ?" for name in columns.split(","))
    with _db(home) as conn, conn:
        first = conn.execute(f"SELECT {columns} FROM registry WHERE seq = 1").fetchone()
        second = conn.execute(f"SELECT {columns} FROM registry WHERE seq = 2").fetchone()
        # entry_hash is unique: park the first row's hash before moving the second one in.
        conn.execute("UPDATE registry SET entry_hash = 'parked' WHERE seq = 1")
        conn.execute(f"UPDATE registry SET {assign} WHERE seq = 2", first)
        conn.execute(f"UPDATE registry SET {assign} WHERE seq = 1", second)


def test_verify_passes_on_a_fresh_log_and_after_publishing(mem: MemRunner, home: Path) -> None:
    _member(home)
    assert json_of(_run(mem, "team", "verify", "--json")) == {
        "ok": True,
        "entries": 0,
        "problems": [],
    }
    locks = _remember(home, LOCKS)
    _run(mem, "team", "publish", locks)
    _run(mem, "team", "retract", locks)
    assert _run(mem, "team", "verify").stdout == "ok: 2 entries, chain and signatures intact\n"


@pytest.mark.parametrize(
    ("tamper", "reported"),
    [
        pytest.param(_change_one_payload_byte, "signature does not verify", id="payload-byte"),
        pytest.param(
            _delete_the_last_row,
            "the log's head does not match its last entry (entries were removed or added)",
            id="delete-last-row",
        ),
        pytest.param(
            _swap_two_rows, "entry 1: does not follow the entry before it", id="swap-rows"
        ),
    ],
)
def test_verify_fails_after_the_registry_table_is_edited(
    mem: MemRunner, home: Path, tamper: Callable[[Path], None], reported: str
) -> None:
    _member(home)
    locks = _remember(home, LOCKS)
    cache = _remember(home, CACHE, kind="gotcha")
    _run(mem, "team", "publish", locks, cache)

    tamper(home)
    verify = _run(mem, "team", "verify", code=1)
    assert "ok:" not in verify.stdout
    assert reported in verify.stdout + verify.stderr


def test_verify_names_the_entry_whose_payload_was_changed(mem: MemRunner, home: Path) -> None:
    _member(home)
    locks = _remember(home, LOCKS)
    _run(mem, "team", "publish", locks)
    _change_one_payload_byte(home)

    verify = mem("team", "verify", "--json")
    assert "Traceback" not in verify.stdout + verify.stderr
    assert verify.returncode == 1
    report = _json_of_failed(verify)
    assert report["ok"] is False
    assert any(problem.startswith("entry 1: ") for problem in report["problems"])


def test_verify_detects_a_deleted_automatic_retraction(mem: MemRunner, home: Path) -> None:
    _member(home)
    locks = _remember(home, LOCKS)
    _run(mem, "team", "publish", locks)
    _run(mem, "forget", locks)
    assert _rows(home)[-1] == ("retraction", locks, 1)

    # The item is archived, so a fresh retraction must not quietly replace the deleted one.
    _delete_the_last_row(home)
    verify = _run(mem, "team", "verify", code=1)
    assert "ok:" not in verify.stdout


def test_verify_and_log_still_report_on_a_log_missing_its_last_entry(
    mem: MemRunner, home: Path
) -> None:
    _member(home)
    locks = _remember(home, LOCKS)
    _run(mem, "team", "publish", locks)
    _run(mem, "forget", locks)
    _delete_the_last_row(home)

    verify = mem("team", "verify", "--json")
    assert "Traceback" not in verify.stdout + verify.stderr
    assert verify.returncode == 1
    report = _json_of_failed(verify)
    assert report["ok"] is False
    assert report["problems"] == [
        "the log's head does not match its last entry (entries were removed or added)"
    ]
    assert _summary(_log(mem)) == [("publication", locks, 1)]


def test_a_deleted_last_entry_is_not_papered_over_by_the_next_publish(
    mem: MemRunner, home: Path
) -> None:
    _member(home)
    locks = _remember(home, LOCKS)
    cache = _remember(home, CACHE, kind="gotcha")
    _run(mem, "team", "publish", locks, cache)
    _delete_the_last_row(home)
    _run(mem, "team", "verify", code=1)

    later = _run(mem, "team", "publish", cache, code=1)
    assert "an entry was removed or added" in error_line(later)
    _run(mem, "team", "verify", code=1)
