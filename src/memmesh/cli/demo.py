"""`mem demo`: a whole team on loopback, end to end, then every process and file cleaned up."""

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from memmesh.cli._common import command_adder
from memmesh.errors import ExitCode

__all__ = ["register"]


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add `mem demo` to the parser."""
    parser = command_adder(commands)(
        "demo",
        _demo_main,
        "Run a whole team on loopback end to end, then clean up.",
        "mem demo",
        description="Run a whole team on loopback, end to end: a coordinator and three members "
        "with their peer daemons as real servers in temporary homes. Shows published and "
        "private facts, answers from the team with their authors, a secret refused by the "
        "policy, a retraction vanishing from every answer, and a member going offline while "
        "the coordinator's cache still answers. Every process and file is removed afterwards.",
        json_output=False,
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary homes afterwards")


def _demo_main(args: argparse.Namespace) -> int:
    # Imported here: the walk-through needs the whole network stack, other commands do not.
    from memmesh.cli._demo_team import run_demo

    root = Path(tempfile.mkdtemp(prefix="memmesh-demo-"))
    try:
        run_demo(root)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    kept = f"the demo's homes are kept in {root}"
    homes = kept if args.keep else "the temporary homes are removed"
    sys.stdout.write(f"\ndone: every process stopped; {homes}.\n")
    return ExitCode.OK
