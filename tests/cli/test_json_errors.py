"""With ``--json``, a failed command prints one JSON object on stderr, ``{"error", "code",
"exit"}``, and exits with that code: what a script reads, for every kind of failure."""

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from memmesh.cli import local
from memmesh.cli._common import INTERNAL_ERROR, INTERRUPTED
from memmesh.cli.main import main
from memmesh.errors import ExitCode
from tests.cli._output import json_error
from tests.conftest import MemRunner

MISSING_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def test_with_json_every_error_is_one_json_object_on_stderr_with_its_exit_code(
    mem: MemRunner,
) -> None:
    assert json_error(mem("show", MISSING_ID, "--json")) == {
        "error": f"no item with id {MISSING_ID!r}",
        "code": "item_not_found",
        "exit": 1,
    }

    # argparse's own refusals, wherever --json stands.
    kind = json_error(mem("--json", "remember", "x", "--kind", "rumour"))
    assert kind["code"] == "usage_error"
    assert kind["exit"] == ExitCode.USAGE
    assert kind["error"].startswith("mem remember: argument --kind: invalid choice: 'rumour'")
    assert kind["error"].endswith("(see `mem remember --help`)")
    unknown = json_error(mem("remind", "x", "--json"))
    assert unknown["code"] == "usage_error"
    assert unknown["error"].startswith("mem: argument COMMAND: invalid choice: 'remind'")

    # ... and those a command finds itself in options that do not go together.
    tls = mem("--json", "coordinator", "serve", "--data", "d", "--team", "t", "--tls-cert", "c")
    assert json_error(tls) == {
        "error": "mem coordinator serve: --tls-cert and --tls-key go together "
        "(see `mem coordinator serve --help`)",
        "code": "usage_error",
        "exit": 2,
    }

    # No command, or a group without its subcommand: a usage error too, not the help.
    assert json_error(mem("--json")) == {
        "error": "give a command (see `mem --help`)",
        "code": "usage_error",
        "exit": 2,
    }
    assert json_error(mem("team", "--json")) == {
        "error": "give one of its commands (see `mem team --help`)",
        "code": "usage_error",
        "exit": 2,
    }

    # An error raised below the CLI keeps its own class's code and exit code.
    assert json_error(mem("recall", "webhooks", "-k", "0", "--json")) == {
        "error": "k must be between 1 and 100, not 0",
        "code": "invalid_input",
        "exit": 2,
    }
    policy = json_error(mem("team", "status", "--json"))
    assert (policy["code"], policy["exit"]) == ("policy_missing", ExitCode.REFUSED)

    # Without --json the same failure stays one line of text.
    plain = mem("show", MISSING_ID)
    assert (plain.returncode, plain.stderr) == (1, f"mem: error: no item with id {MISSING_ID!r}\n")


def _failing(raised: BaseException) -> Any:
    def handler(args: argparse.Namespace) -> int:
        raise raised

    return handler


def test_with_json_an_internal_error_and_an_interrupt_are_json_objects_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(local, "_stats", _failing(RuntimeError("disk \x1b[2J gone")))
    assert main(["--json", "stats"]) == ExitCode.ERROR
    internal = json.loads(capsys.readouterr().err)
    assert internal == {
        "error": "internal error: RuntimeError: disk \\x1b[2J gone "
        "(set MEM_DEBUG=1 for a traceback, and please report it)",
        "code": INTERNAL_ERROR,
        "exit": 1,
    }

    monkeypatch.setattr(local, "_stats", _failing(KeyboardInterrupt()))
    assert main(["stats", "--json"]) == ExitCode.INTERRUPTED
    out = capsys.readouterr()
    assert out.out == ""
    assert json.loads(out.err) == {"error": "interrupted", "code": INTERRUPTED, "exit": 130}


def test_the_codes_an_error_outside_the_error_tree_gets_are_documented() -> None:
    documented = ARCHITECTURE.read_text(encoding="utf-8")
    for code in (INTERNAL_ERROR, INTERRUPTED, "usage_error"):
        assert f"`{code}`" in documented
