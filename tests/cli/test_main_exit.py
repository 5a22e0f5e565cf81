"""`mem` ends as soon as its command has: its output flushed and every exit handler run, the
process exits with the command's status, without tearing the interpreter down object by
object (some 10 ms of a `mem recall`, docs/benchmarks.md "Start-up")."""

import atexit
import subprocess
import sys
from pathlib import Path

import pytest

from memmesh.cli.main import main
from memmesh.errors import ExitCode

# `mem` on its own command line, as the script runs it, in a process that also hears when the
# interpreter's state is cleared (the teardown, after the exit handlers: an audit event), and
# holds an exit handler registered before `mem` started, which writes (buffered) to stdout.
_ENDING = """
import atexit, os, sys

def witness(event, args, write=os.write):  # os itself may be gone by then
    if event == "cpython.PyInterpreterState_Clear":
        write(2, b"torn down\\n")

sys.addaudithook(witness)
atexit.register(lambda: sys.stdout.write("exit handler ran\\n"))
from memmesh.cli.main import main
raise SystemExit(main())
"""


def _end(*words: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _ENDING, *words],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("words", "status", "said"),
    [
        (("--help",), ExitCode.OK, ""),
        (("recall",), ExitCode.USAGE, "the following arguments are required: query"),
        (("show", "0000nothing"), ExitCode.ERROR, "0000nothing"),
    ],
)
def test_mem_exits_with_the_commands_status_without_tearing_the_interpreter_down(
    tmp_path: Path, words: tuple[str, ...], status: int, said: str
) -> None:
    ended = _end("--home", str(tmp_path / "home"), *words, cwd=tmp_path)

    assert ended.returncode == status, ended.stderr
    assert said in ended.stderr
    assert "torn down" not in ended.stderr
    # The exit handlers ran first, and what they wrote was flushed with the rest.
    assert ended.stdout.endswith("exit handler ran\n")


def test_the_whole_output_reaches_a_pipe_before_the_exit(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    for n in range(60):
        remembered = _end("--home", home, "remember", "--global", f"fact {n} " * 40, cwd=tmp_path)
        assert remembered.returncode == 0, remembered.stderr

    listed = _end("--home", home, "--json", "list", cwd=tmp_path)

    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.count('"id"') >= 60  # some 60 kB, more than one pipe buffer
    assert listed.stdout.endswith("}\nexit handler ran\n")


def test_a_command_run_in_process_leaves_the_exit_alone() -> None:
    handlers = atexit._ncallbacks()

    assert main(["--help"]) == 0
    assert atexit._ncallbacks() == handlers
