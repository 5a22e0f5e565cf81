"""The command reference cannot drift: docs/cli.md is generated, and every command has help."""

import argparse
import importlib.util
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from memmesh.cli.main import build_parser

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = ROOT / "scripts" / "gen_cli_docs.py"
CLI_DOCS = ROOT / "docs" / "cli.md"


def _load_generator() -> ModuleType:
    """scripts/gen_cli_docs.py as a module (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location("gen_cli_docs", GENERATOR)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _subcommands(
    parser: argparse.ArgumentParser, prefix: str = ""
) -> list[tuple[str, argparse.ArgumentParser, str | None]]:
    """Each (nested) subcommand: its name, its parser, and its one-line help in its parent."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            summaries = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                found.append((prefix + name, sub, summaries.get(name)))
                found += _subcommands(sub, prefix + name + " ")
    return found


SUBCOMMANDS = _subcommands(build_parser())


def test_cli_reference_is_what_the_generator_writes_now() -> None:
    render: Callable[[], str] = _load_generator().render
    assert CLI_DOCS.read_text(encoding="utf-8") == render(), (
        "docs/cli.md is out of date: run `python scripts/gen_cli_docs.py`"
    )


def test_generator_output_does_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    render: Callable[[], str] = _load_generator().render
    monkeypatch.setenv("COLUMNS", "40")
    narrow = render()
    monkeypatch.setenv("COLUMNS", "200")
    assert render() == narrow
    assert narrow == CLI_DOCS.read_text(encoding="utf-8")


def test_there_are_subcommands_to_check() -> None:
    names = [name for name, _, _ in SUBCOMMANDS]
    assert {"remember", "recall", "show", "list", "demo"} <= set(names)


@pytest.mark.parametrize(
    ("name", "parser", "summary"), SUBCOMMANDS, ids=[s[0] for s in SUBCOMMANDS]
)
def test_every_subcommand_has_help_and_a_working_example(
    name: str, parser: argparse.ArgumentParser, summary: str | None
) -> None:
    assert summary, f"`mem {name}` has no help line in `mem --help`"
    assert parser.description, f"`mem {name}` has no description"
    epilog = parser.epilog or ""
    assert "example:" in epilog, f"`mem {name}` has no example: in its epilog"
    examples = [
        line.strip() for line in epilog.split("example:", 1)[1].splitlines() if line.strip()
    ]
    assert examples, f"`mem {name}` has an empty example"
    for example in examples:
        words = shlex.split(example)
        # An example may set environment variables first: `VAR=value mem ...`.
        while words and "=" in words[0] and words[0].split("=")[0].isupper():
            words = words[1:]
        assert words[: 1 + len(name.split())] == ["mem", *name.split()], example
        # The example must be a command line that `mem` accepts.
        build_parser().parse_args(words[1:])


@pytest.mark.parametrize("name", [s[0] for s in SUBCOMMANDS])
def test_every_subcommand_is_in_the_cli_reference(name: str) -> None:
    assert f"\n## mem {name}\n" in CLI_DOCS.read_text(encoding="utf-8")


def test_protocol_reference_is_what_the_structs_generate() -> None:
    spec = importlib.util.spec_from_file_location(
        "gen_protocol_docs", ROOT / "scripts" / "gen_protocol_docs.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8") == module.render(), (
        "docs/protocol.md is out of date: run `python scripts/gen_protocol_docs.py`"
    )


# A test named in docs/security.md: `tests/x.py::test_y`, or `::test_y` in the file last named.
_CITED = re.compile(r"`(tests/[\w/]+\.py)?::(test_\w+)`|`(tests/[\w/]+\.py)`")


def _cited_tests(text: str) -> list[tuple[str, str | None]]:
    cited: list[tuple[str, str | None]] = []
    current = ""
    for path, name, bare in _CITED.findall(text):
        if bare:
            current = bare
            cited.append((bare, None))
            continue
        current = path or current
        cited.append((current, name))
    return cited


def test_every_test_the_security_model_cites_exists() -> None:
    cited = _cited_tests((ROOT / "docs" / "security.md").read_text(encoding="utf-8"))
    assert len(cited) > 50
    missing = []
    for path, name in cited:
        source = ROOT / path
        if not source.exists():
            missing.append(path)
        elif name is not None and not re.search(rf"^def {name}\(", source.read_text(), re.M):
            missing.append(f"{path}::{name}")
    assert missing == []
