"""What every `mem` command shares: the home folder, the store, and printing results.

Everything a command prints goes through :func:`emit`, :func:`warn` or :func:`note` (and an
error through :func:`error_line`), which show every terminal control character as its escape
(:func:`memmesh.text.printable`): what a teammate, a roster or a server wrote can be read, never
act on the terminal. A command that puts a field from the network on a line of its own shows
it with ``printable`` too, so that a newline inside it cannot forge another line.

With ``--json`` (:func:`json_output`, set once by `mem`'s entry point), what a program reads is
JSON on both streams: stdout holds the command's one object, and every line on stderr is one
JSON object of its own: ``{"warning": ..., "code": ...}`` for each warning, ``{"note": ...}``
for each note, ``{"error": ..., "code": ..., "exit": ...}`` for a failure (its last line). No
progress is shown and nothing is asked (:mod:`memmesh.cli._terminal`).
"""

import argparse
import importlib
import json
import math
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memmesh.cli.errors import UsageError
from memmesh.errors import ExitCode
from memmesh.home import DEFAULT_HOME, home_folder
from memmesh.local.items import MAX_K
from memmesh.text import counted, json_printable, printable

if TYPE_CHECKING:
    from memmesh.local.store import Store

__all__ = [
    "DEFAULT_HOME",
    "INTERNAL_ERROR",
    "INTERRUPTED",
    "Command",
    "Handler",
    "add_common",
    "command_adder",
    "command_group",
    "emit",
    "error_line",
    "failure",
    "hits",
    "home_of",
    "json_output",
    "lazy",
    "listed_text",
    "nonempty",
    "note",
    "open_store",
    "port",
    "positive_float",
    "positive_int",
    "shown_id",
    "shown_ids",
    "url",
    "warn",
]

# The ``code`` of the two failures that are no error class, as :func:`failure` gives it: a
# bug (exit 1) and Ctrl-C (exit 130). Every other error's is its class's (``MemmeshError.code``).
INTERNAL_ERROR = "internal_error"
INTERRUPTED = "interrupted"
# How much of an item's text a listing shows (`mem list`); `mem show` and --json give it whole.
LISTED_CHARACTERS = 300
LISTED_LINES = 3


def add_common(parser: argparse.ArgumentParser, *, json_output: bool = True) -> None:
    """Give a command the options every command takes: ``--home`` and, if it prints, ``--json``.

    Defaults are suppressed so that the same option given before the command name still counts.
    """
    parser.add_argument(
        "--home",
        metavar="DIR",
        type=nonempty,
        default=argparse.SUPPRESS,
        help="memmesh home folder (default: $MEM_HOME or ~/.memmesh)",
    )
    if json_output:
        parser.add_argument(
            "--json",
            action="store_true",
            default=argparse.SUPPRESS,
            help="print one JSON object instead of text",
        )


Handler = Callable[[argparse.Namespace], int]


class Command(Protocol):
    """Adds one command; see :func:`command_adder`."""

    def __call__(
        self,
        name: str,
        handler: Handler,
        summary: str,
        example: str,
        *,
        description: str | None = None,
        json_output: bool = True,
        json_shape: str | None = None,
    ) -> argparse.ArgumentParser: ...


def command_adder(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> Command:
    """A helper adding one command: its summary is its help (and, unless a longer
    ``description`` is given, its description), with an example in its epilog, after what
    ``--json`` prints when ``json_shape`` says."""

    def command(
        name: str,
        handler: Handler,
        summary: str,
        example: str,
        *,
        description: str | None = None,
        json_output: bool = True,
        json_shape: str | None = None,
    ) -> argparse.ArgumentParser:
        parser = _parser(commands, name, summary, example, description, json_output, json_shape)
        parser.set_defaults(handler=handler)
        return parser

    return command


def command_group(
    commands: "argparse._SubParsersAction[argparse.ArgumentParser]",
    name: str,
    summary: str,
    example: str,
    *,
    description: str | None = None,
    json_output: bool = True,
) -> "argparse._SubParsersAction[argparse.ArgumentParser]":
    """A command holding subcommands (`mem team ...`); alone, it prints its help (exit 2), or
    with ``--json`` is a usage error.

    Returns the group's subcommands, for :func:`command_adder`.
    """
    group = _parser(commands, name, summary, example, description, json_output)
    group.set_defaults(handler=lambda args: _usage(group, args))
    return group.add_subparsers(title=f"{name} commands", metavar="COMMAND")


def _parser(
    commands: "argparse._SubParsersAction[argparse.ArgumentParser]",
    name: str,
    summary: str,
    example: str,
    description: str | None,
    json_output: bool,
    json_shape: str | None = None,
) -> argparse.ArgumentParser:
    shape = f"with --json, prints:\n  {json_shape}\n\n" if json_shape else ""
    parser = commands.add_parser(
        name,
        help=summary,
        description=description or summary,
        epilog=f"{shape}example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common(parser, json_output=json_output)
    return parser


def _usage(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if getattr(args, "json", False):
        raise UsageError(parser.prog.removeprefix("mem "), "give one of its commands")
    parser.print_help(sys.stderr)
    return ExitCode.USAGE


def lazy(module: str, name: str) -> Handler:
    """A handler that imports ``module`` only when its command runs, so that `mem` starts
    without loading what other commands need."""

    def run(args: argparse.Namespace) -> int:
        handler: Handler = getattr(importlib.import_module(module), name)
        return handler(args)

    return run


def home_of(args: argparse.Namespace) -> Path:
    """The memmesh home: ``--home``, else ``MEM_HOME``, else ``~/.memmesh``."""
    return home_folder(getattr(args, "home", None))


def open_store(args: argparse.Namespace, *, repair: bool = False, serving: bool = False) -> "Store":
    """The member's store in the chosen home (:func:`memmesh.home.open_store`)."""
    from memmesh.home import open_store as open_home_store

    return open_home_store(home_of(args), repair=repair, serving=serving)


def shown_ids(store: "Store", item_ids: Iterable[str], *, pad: bool = True) -> dict[str, str]:
    """How each of ``item_ids`` is shown in a command's text: the shortest prefix of at least
    10 characters that no other item in the store shares (``memmesh.local.ids``), all of them
    padded to the longest (unless not ``pad``) so that a listing's columns line up; an id the
    store does not hold (purged since) is shown whole. Every command shows the member's own
    items' ids through it or :func:`shown_id`; ``mem show`` and ``--json`` give them whole."""
    wanted = list(item_ids)
    short = store.short_ids(wanted)
    shown = {item_id: short.get(item_id, item_id) for item_id in wanted}
    width = max(map(len, shown.values()), default=0) if pad else 0
    return {item_id: text.ljust(width) for item_id, text in shown.items()}


def listed_text(text: str, shown: str) -> str:
    """``text`` as a listing shows the item ``shown`` (its id as shown): whole when it is at
    most :data:`LISTED_CHARACTERS` long in :data:`LISTED_LINES` lines, else cut there and
    followed by its size and the command that shows it whole."""
    lines = text.split("\n")
    if len(text) <= LISTED_CHARACTERS and len(lines) <= LISTED_LINES:
        return text
    cut = "\n".join(lines[:LISTED_LINES])[:LISTED_CHARACTERS].rstrip()
    size = counted(len(text.encode("utf-8")), "byte")
    return f"{cut}\u2026 ({size}; `mem show {shown.strip()}` for all)"


def shown_id(store: "Store", item_id: str) -> str:
    """:func:`shown_ids` for one id."""
    return shown_ids(store, [item_id]).get(item_id, item_id)


def nonempty(value: str) -> str:
    """An argparse type: any text but the empty string."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return value


def member_name(value: str) -> str:
    """An argparse type: a member's name as the team knows it, refused at once with the rule
    (a name is a label in commands such as `mem team revoke NAME`, so it holds no spaces)."""
    from memmesh.local.errors import InvalidInput
    from memmesh.local.items import check_name, suggested_name

    try:
        return check_name(value, "member name")
    except InvalidInput:
        pass
    rule = "1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, no spaces"
    suggested = suggested_name(value)
    hint = f" (say {suggested})" if suggested else ""
    raise argparse.ArgumentTypeError(f"{value!r} is not a member name: {rule}{hint}")


def positive_int(value: str) -> int:
    """An argparse type: an integer of 1 or more."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {number}")
    return number


class _Output:
    """How this run of `mem` prints on stderr: JSON lines with ``--json``."""

    json = False


def json_output(on: bool) -> None:
    """Make :func:`warn` and :func:`note` print JSON lines (``on``: ``--json`` was given)."""
    _Output.json = on


def warn(warning: str | None, code: str = "warning") -> None:
    """Print a warning (if there is one) on stderr; the command still succeeds. With
    ``--json`` it is the line ``{"warning": warning, "code": code}``, ``code`` a stable
    snake_case name of what it warns of."""
    if not warning:
        return
    if _Output.json:
        sys.stderr.write(_json_line({"warning": warning, "code": code}))
        sys.stderr.flush()
    else:
        note(f"mem: warning: {warning}")


def note(text: str, *, end: str = "\n") -> None:
    """Print ``text`` (one line) on stderr, for the person at the terminal; with ``--json``,
    the line ``{"note": text}``."""
    if _Output.json:
        sys.stderr.write(_json_line({"note": text}))
        sys.stderr.flush()
    else:
        print(printable(text), end=end, file=sys.stderr, flush=True)


def error_line(message: str) -> str:
    """The one line a failed command prints on stderr for ``message``."""
    return f"mem: error: {printable(message)}"


def failure(message: str, code: str, exit_code: int, as_json: bool, line: str | None = None) -> int:
    """Report a failed command on stderr and return its ``exit_code``: one line (``line``, else
    :func:`error_line`), or with ``as_json`` one JSON object ``{"error": message, "code": code,
    "exit": exit_code}``, ``code`` a stable snake_case name (``MemmeshError.code``)."""
    if as_json:
        error = {"error": message, "code": code, "exit": int(exit_code)}
        sys.stderr.write(_json_line(error))
    else:
        sys.stderr.write((printable(line) if line else error_line(message)) + "\n")
    sys.stderr.flush()
    return exit_code


def _json_line(data: dict[str, Any]) -> str:
    """``data`` as one line of JSON, with nothing in it a terminal acts on."""
    return json_printable(json.dumps(data, ensure_ascii=False, sort_keys=False)) + "\n"


def positive_float(value: str) -> float:
    """An argparse type: a finite number greater than 0 (seconds, say)."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not math.isfinite(number) or number <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, not {value}")
    return number


def port(value: str) -> int:
    """An argparse type: a TCP port, 1-65535."""
    number = positive_int(value)
    if number > 65535:
        raise argparse.ArgumentTypeError(f"a port is 1-65535, not {number}")
    return number


def url(value: str) -> str:
    """An argparse type: a sound coordinator or peer URL (see ``memmesh.net.urls``),
    normalised."""
    from memmesh.net.errors import BadUrl
    from memmesh.net.urls import peer_url

    try:
        return peer_url(value)
    except BadUrl as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def hits(value: str) -> int:
    """An argparse type: how many hits a recall may return, 1 to MAX_K."""
    number = positive_int(value)
    if number > MAX_K:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_K}, not {number}")
    return number


def emit(args: argparse.Namespace, data: dict[str, Any], text: str) -> None:
    """Print ``data`` as one JSON object with ``--json``, else ``text`` (if not empty), its
    lines kept and every other control character shown as its escape."""
    if getattr(args, "json", False):
        sys.stdout.write(_json_line(data))
    elif text:
        sys.stdout.write(printable(text.rstrip("\n"), layout=True) + "\n")
