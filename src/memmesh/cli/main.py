"""The `mem` entry point: parse, dispatch, and turn errors into one line and an exit code."""

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn, cast

from memmesh import __version__
from memmesh.cli import agents, completion, coordinator, demo, local, team
from memmesh.cli._common import error_line, nonempty
from memmesh.errors import ExitCode, MemmeshError
from memmesh.text import printable

__all__ = ["build_parser", "main"]


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit 2), like every other error."""

    def error(self, message: str) -> NoReturn:
        self.exit(ExitCode.USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    """The whole `mem` command line."""
    parser = _Parser(
        prog="mem",
        description="memmesh: a private memory for you and your coding agents, shared with "
        "your team only when you say so.",
        epilog="exit codes: 0 ok, 1 error, 2 usage, 3 refused by policy, 4 no source reachable",
    )
    parser.add_argument("--version", action="version", version=f"memmesh {__version__}")
    parser.add_argument(
        "--home",
        metavar="DIR",
        type=nonempty,
        help="memmesh home folder (default: $MEM_HOME or ~/.memmesh)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    commands = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(title="commands", metavar="COMMAND"),
    )
    local.register(commands)
    team.register(commands)
    agents.register(commands)
    coordinator.register(commands)
    demo.register(commands)
    completion.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `mem` with ``argv`` and return the exit code; nothing raises out of here."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse has printed usage or help already
        return int(exc.code or ExitCode.OK)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return ExitCode.USAGE
    try:
        return int(handler(args))
    except MemmeshError as exc:
        print(error_line(exc.message), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("mem: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`mem list | head`); say nothing more.
        sys.stderr.close()
        return ExitCode.ERROR
    except Exception as exc:
        if os.environ.get("MEM_DEBUG"):
            raise
        print(
            f"mem: internal error: {type(exc).__name__}: {printable(str(exc))} "
            "(set MEM_DEBUG=1 for a traceback, and please report it)",
            file=sys.stderr,
        )
        return ExitCode.ERROR


if __name__ == "__main__":
    raise SystemExit(main())
