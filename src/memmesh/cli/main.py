"""The `mem` entry point: parse, dispatch, and turn errors into one line and an exit code.

A command pays only for what it needs (docs/benchmarks.md, "Start-up"): `mem --version` is
answered before anything else is imported; a command named on the line builds only its own
part of the parser (its module's, :data:`_MODULES`, with the module's other commands dropped:
:class:`_Commands`), the whole tree being built for everything else
(`mem --help`, a mistyped command); and registering a command imports nothing heavy: each
command imports what it needs when it runs (``cli/_common.lazy``, imports inside handlers).
"""

import argparse
import atexit
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn, cast

from memmesh import __version__, _blas
from memmesh.cli import _stdout
from memmesh.errors import ExitCode

__all__ = ["build_parser", "main"]

# The module (``memmesh.cli.<name>``, its ``register``) that adds each command, in the order
# `mem --help` lists them; tests/cli/test_startup.py holds it to the tree.
_LOCAL = (
    "remember", "recall", "why", "show", "list", "forget", "unforget", "revise", "edit",
    "ingest", "inbox", "outcome", "stats", "doctor", "reindex", "export", "import", "backup",
    "restore",
)  # fmt: skip
_MODULES = {
    **dict.fromkeys(_LOCAL, "local"),
    "consolidate": "consolidate",
    "resolve": "consolidate",
    "team": "team",
    "mcp": "agents",
    "hook": "agents",
    "coordinator": "coordinator",
    "ui": "ui",
    "service": "service",
    "demo": "demo",
    "completion": "completion",
}


class _BadArguments(Exception):
    """What argparse refused (``message``), in the command ``prog`` (``mem remember``)."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog
        self.message = message

    def report(self, as_json: bool) -> int:
        """Say so as :func:`main` reports every failure (``usage_error``, exit 2)."""
        from memmesh.cli._common import failure
        from memmesh.cli.errors import UsageError

        problem = f"{self.message} (see `{self.prog} --help`)"
        line = f"{self.prog}: error: {problem}"
        return failure(f"{self.prog}: {problem}", UsageError.code, ExitCode.USAGE, as_json, line)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is reported by :func:`main` like every other error (one
    line on stderr, or a JSON object with --json; exit 2)."""

    def error(self, message: str) -> NoReturn:
        raise _BadArguments(self.prog, message)

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse makes a formatter for every option added (to check its metavar), and a
        # formatter given no width asks shutil, whose import (bz2, lzma) is 1 ms of every
        # command. The width is found as shutil finds it.
        formatter = cast("type[argparse.HelpFormatter]", self.formatter_class)
        return formatter(prog=self.prog, width=_terminal_columns() - 2)


def _terminal_columns() -> int:
    """``$COLUMNS`` when set, else the width of the terminal standard output is, else 80:
    what ``shutil.get_terminal_size`` says."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or _FALLBACK_COLUMNS


_FALLBACK_COLUMNS = 80


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole `mem` command line; with ``command`` (one of its commands), only that
    command's part, which parses it as the whole tree does."""
    from memmesh.cli._common import nonempty

    parser = _Parser(
        prog="mem",
        description="memmesh: a private memory for you and your coding agents, shared with "
        "your team only when you say so.",
        epilog="with --json, stdout holds one JSON object and each line on stderr is one: a "
        'warning {"warning", "code"}, an error {"error", "code", "exit"}; nothing is asked '
        "(give --yes). exit codes: 0 ok, 1 error, 2 usage, 3 refused by policy, 4 no source "
        "reachable",
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
        "_Commands", parser.add_subparsers(title="commands", metavar="COMMAND", action=_Commands)
    )
    commands.only = command
    wanted = [_MODULES[command]] if command else dict.fromkeys(_MODULES.values())
    for module in wanted:
        importlib.import_module(f"memmesh.cli.{module}").register(commands)
    return parser


if TYPE_CHECKING:
    _SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    _SubParsers = argparse._SubParsersAction


class _Commands(_SubParsers):
    """`mem`'s commands; with ``only`` set, every other command a module adds goes to a parser
    that keeps nothing (:class:`_Dropped`): a module such as `local` adds 19 commands, and
    parsing one needs none of the others' options (4 ms of a `mem recall`)."""

    only: str | None = None

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        if self.only is not None and name != self.only:
            return cast("argparse.ArgumentParser", _Dropped())
        parser: argparse.ArgumentParser = super().add_parser(name, **kwargs)
        return parser


class _Dropped:
    """A parser of a command this run does not parse: what is added to it, or to the groups
    and subcommands it gives, is dropped."""

    def __getattr__(self, name: str) -> "_Dropped":
        return self

    def __call__(self, *args: object, **kwargs: object) -> "_Dropped":
        return self


def main(argv: Sequence[str] | None = None) -> int:
    """Run `mem` with ``argv`` and return the exit code; nothing raises out of here.

    A failure is one line on stderr, or with ``--json`` one JSON object ``{"error", "code",
    "exit"}`` (see :func:`memmesh.cli._common.failure`): ``code`` is the error class's (for a
    refusal a daemon sent, the daemon's own code, such as ``last_admin``), or ``usage_error``
    for arguments argparse refused, ``interrupted`` or ``internal_error``.

    Without ``argv`` it runs the process's own command line (the `mem` script), and the
    process ends with it, with the code returned here; three things then spare the command
    work that only a process living on would need (docs/benchmarks.md, "Start-up"). The
    collector waits for its first run until the command has made many objects
    (:func:`_defer_collection`). What the command built is left to the exit
    (``gc.freeze``), not collected once more on the way out (some 20 ms of a `mem recall`).
    And at the exit, once every exit handler has run and stdout and stderr are flushed,
    the process ends at once (:func:`_end_now`) rather than have the interpreter free,
    module by module, everything the command built (some 10 ms).
    """
    if argv is None:
        _defer_collection()
    code = _run(argv)
    if argv is None:
        gc.freeze()
        _Ending.code = code
        # Registered last, it is the first exit handler called, and calls the others itself.
        atexit.register(_end_now)
    return code


# Young objects the collector waits for before its first run in a `mem` process: a command
# on a small store makes some 40,000 (doctor 58,000), nearly all modules, functions and
# classes that live to the end; a recall collected them some 60 times as they loaded, 7 ms.
_FIRST_COLLECTION_AT = 100_000


def _defer_collection() -> None:
    """Have the collector's first run wait for :data:`_FIRST_COLLECTION_AT` young objects,
    and from that run on, keep to its usual threshold: a short command is never collected,
    and a long one (a server, an import) at most once late, with what garbage it made by
    then (objects count only while they live: freed ones leave the count)."""
    usual = gc.get_threshold()

    def back_to_usual(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and gc.get_threshold()[0] == _FIRST_COLLECTION_AT:
            gc.set_threshold(*usual)

    gc.set_threshold(_FIRST_COLLECTION_AT, *usual[1:])
    gc.callbacks.append(back_to_usual)


class _Ending:
    """The code the process's own command ended with, for :func:`_end_now`."""

    code: int | None = None


def _end_now() -> None:
    """End the process with its command's code, as the interpreter would after the exit
    handlers and a flush of stdout and stderr, without its teardown.

    The command closed its store and flushed stdout itself, and the interpreter has joined
    every thread but the daemons (which end with the process either way). Should a flush
    fail, the interpreter ends the process as it always does, and says so.
    """
    code = _Ending.code
    atexit.unregister(_end_now)
    atexit._run_exitfuncs()  # the others, in the order the interpreter would call them
    if code is None:
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


def _run(argv: Sequence[str] | None) -> int:
    """:func:`main`, the command itself."""
    words = list(sys.argv[1:] if argv is None else argv)
    _stdout.ensure()
    if words == ["--version"]:  # as argparse says it, without building the parser
        sys.stdout.write(f"memmesh {__version__}\n")
        sys.stdout.flush()
        return ExitCode.OK
    _blas.before_numpy()  # before any command imports numpy (docs/architecture.md)
    if "prompt" in words[:4]:  # the prompt hook starts without the parser's imports
        from memmesh.cli._hooks import fast_prompt

        done = fast_prompt(words)
        if done is not None:
            return done
    from memmesh.cli._common import INTERNAL_ERROR, INTERRUPTED, failure, json_output
    from memmesh.cli.errors import UsageError
    from memmesh.errors import MemmeshError
    from memmesh.text import printable

    as_json = _wants_json(words)
    parser = build_parser(_command_of(words))
    try:
        args = parser.parse_args(words)
    except _BadArguments as exc:
        return exc.report(as_json)
    except SystemExit as exc:  # argparse has printed the help or the version
        return int(exc.code or ExitCode.OK)
    as_json = bool(getattr(args, "json", False))
    json_output(as_json)
    handler = getattr(args, "handler", None)
    if handler is None:
        if as_json:
            message = "give a command (see `mem --help`)"
            return failure(message, UsageError.code, ExitCode.USAGE, as_json)
        parser.print_help(sys.stderr)
        return ExitCode.USAGE
    try:
        code = int(handler(args))
        # Flush here, not at exit: a reader gone by then would make Python print "Exception
        # ignored" and exit 120, since stdout is block-buffered on a pipe.
        sys.stdout.flush()
        return code
    except _BadArguments as exc:  # a handler checking options that go together
        return exc.report(as_json)
    except MemmeshError as exc:
        # A refusal carries the code the coordinator or peer sent (``last_admin``), when any.
        sent: str = getattr(exc, "error_code", "")
        return failure(exc.message, sent or exc.code, exc.exit_code, as_json)
    except KeyboardInterrupt:
        line = "mem: interrupted"
        return failure("interrupted", INTERRUPTED, ExitCode.INTERRUPTED, as_json, line)
    except BrokenPipeError:
        return _reader_gone()
    except Exception as exc:
        if os.environ.get("MEM_DEBUG"):
            raise
        message = (
            f"internal error: {type(exc).__name__}: {printable(str(exc))} "
            "(set MEM_DEBUG=1 for a traceback, and please report it)"
        )
        return failure(message, INTERNAL_ERROR, ExitCode.ERROR, as_json, f"mem: {message}")


def _reader_gone() -> int:
    """End quietly when the reader of stdout went away (`mem list | head -0`): what is still
    buffered goes nowhere, and the status is the one shells give a command SIGPIPE ended."""
    _stdout.discard()
    return ExitCode.CLOSED_PIPE


def _command_of(words: list[str]) -> str | None:
    """The command ``words`` run, when only options the parser surely takes the same way come
    before it (``--home DIR``, ``--home=DIR``, ``--json``); else ``None`` (the whole tree)."""
    rest = iter(words)
    for word in rest:
        if word == "--home":
            next(rest, None)
        elif word != "--json" and not word.startswith("--home="):
            return word if word in _MODULES else None
    return None


def _wants_json(words: list[str]) -> bool:
    """Whether ``--json`` (or a prefix argparse would take for it) is among the options, for a
    failure met before the arguments are parsed."""
    options = words[: words.index("--")] if "--" in words else words
    return any(len(word) > 2 and "--json".startswith(word) for word in options)


if __name__ == "__main__":
    raise SystemExit(main())
