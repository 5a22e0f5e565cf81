"""`mem` builds its parser from light modules: the heavy stacks load only in the commands that
use them, so every command (and a hook an agent runs on each prompt) starts fast. The times
are measured by bench/startup.py (docs/benchmarks.md); these tests hold what they rest on,
the modules each command imports, without timing anything."""

import argparse
import os
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
    # Nor what a recall does without: a pool of workers with its logging, the readers of
    # zipped packages, and threadpoolctl (OpenBLAS was started on one thread).
    "concurrent.futures",
    "logging",
    "zipfile",
    "threadpoolctl",
    # Nor what only writing or printing help needs: tempfile (and random), shutil (with bz2
    # and lzma: argparse asks it the terminal's width), and dataclasses (the vector index's
    # records are msgspec structs, as the items are).
    "tempfile",
    "shutil",
    "dataclasses",
)


def _commands(parser: argparse.ArgumentParser) -> list[str]:
    """The commands ``parser`` takes, in the order its help lists them."""
    (group,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(group.choices)


def _subtree(parser: argparse.ArgumentParser, command: str) -> str:
    """The help of ``command`` in ``parser``: its options, arguments and subcommands."""
    (group,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    shown: str = group.choices[command].format_help()
    return shown


# Runs `mem` in a fresh interpreter, on its own command line as the `mem` script does, then
# names every module it holds on stderr's last line (sys.modules, which also holds what was
# imported through importlib; -X importtime does not), and on the line before it the BLAS
# threads its environment asked of OpenBLAS and how many objects it left to the exit.
_RUN = (
    "import gc, os, sys\n"
    "from memmesh.cli.main import main\n"
    "code = main()\n"
    "blas = os.environ.get('OPENBLAS_NUM_THREADS', '-')\n"
    "sys.stderr.write(f'\\n{blas} {gc.get_freeze_count()}\\n')\n"
    "sys.stderr.write(' '.join(sorted(sys.modules)) + '\\n')\n"
    "raise SystemExit(code)\n"
)


def _run(*words: str, cwd: Path | None = None) -> "tuple[str, set[str]]":
    """What `mem WORDS` printed on stdout, and the modules it imported."""
    stdout, imported, _ = _run_in_env(*words, cwd=cwd)
    return stdout, imported


def _run_in_env(
    *words: str, cwd: Path | None = None, blas_threads: str | None = None
) -> "tuple[str, set[str], str | None]":
    """:func:`_run`, with ``blas_threads`` the user's ``OPENBLAS_NUM_THREADS`` (``None``: not
    set), and the value `mem` ended with (``None``: unset)."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if blas_threads is not None:
        env["OPENBLAS_NUM_THREADS"] = blas_threads
    result = subprocess.run(
        [sys.executable, "-c", _RUN, *words],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    *_, ending, modules = result.stderr.splitlines()
    imported = set(modules.split())
    assert "memmesh.cli.main" in imported
    threads, frozen = ending.split()
    # Ending with the command, `mem` leaves its objects to the exit: no last collection.
    assert int(frozen) > 0
    return result.stdout, imported, None if threads == "-" else threads


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


def test_each_command_is_parsed_by_its_own_part_of_the_tree_alone() -> None:
    whole = build_parser()
    assert _commands(whole) == list(_MODULES)
    for command in _MODULES:
        alone = build_parser(command)
        assert _commands(alone) == [command]
        assert _subtree(alone, command) == _subtree(whole, command), command


def test_recall_starts_numpy_with_one_blas_thread_unless_the_user_chose(
    mem: MemRunner, tmp_path: Path
) -> None:
    assert mem("remember", "--global", "the staging deploy needs the VPN").returncode == 0
    recall = ("--home", str(mem.home), "recall", "staging deploy")

    shown, imported, threads = _run_in_env(*recall, cwd=tmp_path)
    assert "the staging deploy needs the VPN" in shown
    assert ("numpy" in imported, threads) == (True, "1")

    shown, imported, threads = _run_in_env(*recall, cwd=tmp_path, blas_threads="2")
    assert "the staging deploy needs the VPN" in shown
    # The user's choice stands, and one thread is then set after the import instead.
    assert threads == "2"
    assert "threadpoolctl" in imported


def test_a_command_run_in_process_leaves_the_collector_as_it_was() -> None:
    import gc

    from memmesh.cli.main import main

    frozen = gc.get_freeze_count()
    assert main(["--help"]) == 0
    assert gc.get_freeze_count() == frozen
