"""`mem` builds its parser from light modules: the heavy stacks load only in the commands that
use them, so every command (and a hook an agent runs on each prompt) starts fast. The times
are measured by bench/startup.py (docs/benchmarks.md); these tests hold what they rest on,
the modules each command imports, without timing anything."""

import argparse
import subprocess
import sys
from pathlib import Path

from memmesh import __version__
from memmesh.cli.main import _MODULES, build_parser
from tests.conftest import MemRunner

HEAVY = ("numpy", "cryptography", "httpx", "starlette", "uvicorn", "zeroconf", "tomlkit")
# What registering the commands must not load: each is imported by the commands that use it.
PARSER_FREE = (
    *HEAVY,
    "yaml",
    "tokenizers",
    "memmesh.policy",
    "memmesh.agents.install",
    "memmesh.local.store",
    "memmesh.embed",
)
# What `mem recall` needs none of: no policy without a team.yaml, no network, no agents,
# and no other command's part of the parser.
RECALL_FREE = (
    "memmesh.cli.team",
    "memmesh.cli.agents",
    "memmesh.cli.coordinator",
    "yaml",
    "cryptography",
    "httpx",
    "memmesh.policy",
    "memmesh.registry",
    "memmesh.agents.clients",
    "memmesh.agents.install",
)


def _commands(parser: argparse.ArgumentParser) -> list[str]:
    """The commands ``parser`` takes, in the order its help lists them."""
    (group,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(group.choices)


# Runs `mem` in a fresh interpreter, then names every module it holds on stderr's last line:
# sys.modules, which also holds what was imported through importlib (-X importtime does not).
_RUN = (
    "import sys\n"
    "from memmesh.cli.main import main\n"
    "code = main(sys.argv[1:])\n"
    "sys.stderr.write('\\n' + ' '.join(sorted(sys.modules)) + '\\n')\n"
    "raise SystemExit(code)\n"
)


def _run(*words: str, cwd: Path | None = None) -> "tuple[str, set[str]]":
    """What `mem WORDS` printed on stdout, and the modules it imported."""
    result = subprocess.run(
        [sys.executable, "-c", _RUN, *words],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    imported = set(result.stderr.splitlines()[-1].split())
    assert "memmesh.cli.main" in imported
    return result.stdout, imported


def test_help_imports_none_of_the_heavy_stacks() -> None:
    _, imported = _run("--help")
    assert sorted(name for name in HEAVY if name in imported) == []


def test_version_is_answered_before_the_parser_is_built() -> None:
    shown, imported = _run("--version")

    assert shown == f"memmesh {__version__}\n"
    never = ("memmesh.cli._common", "memmesh.cli.local", "msgspec", *PARSER_FREE)
    assert sorted(name for name in never if name in imported) == []


def test_the_parser_registers_every_command_without_policy_agents_or_numpy() -> None:
    shown, imported = _run("--help")

    assert {"recall", "coordinator"} <= set(shown.split())
    assert {"memmesh.cli.agents", "memmesh.cli.coordinator"} <= imported
    assert sorted(name for name in PARSER_FREE if name in imported) == []


def test_recall_on_a_small_store_loads_no_policy_network_or_agents(
    mem: MemRunner, tmp_path: Path
) -> None:
    assert mem("remember", "--global", "the staging deploy needs the VPN").returncode == 0

    shown, imported = _run("--home", str(mem.home), "recall", "staging deploy", cwd=tmp_path)

    assert "the staging deploy needs the VPN" in shown
    assert "memmesh.local.store" in imported
    assert sorted(name for name in RECALL_FREE if name in imported) == []


def test_each_command_is_parsed_by_the_part_of_the_tree_its_module_adds() -> None:
    assert _commands(build_parser()) == list(_MODULES)
    for command, module in _MODULES.items():
        alone = build_parser(command)
        assert command in _commands(alone)
        assert set(_commands(alone)) == {c for c, m in _MODULES.items() if m == module}
