"""`mem hook prompt`, and what the session hooks share: reading the client's input.

The prompt hook runs before every prompt, so it must never break one or hold it up: whatever
goes wrong, it prints nothing (Cursor: its "continue" answer) and exits 0, and the error goes
to the hooks' journal (:mod:`memmesh.local.hooklog`); past :data:`DEADLINE_S` it gives up the
same way. It starts lean: :func:`fast_prompt` parses its own few options before the `mem`
parser (and every command module it imports) is built, and the store, numpy and the embedder
are imported only once the prompt is known to be worth a recall.
"""

import argparse
import contextlib
import json
import os
import select
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from memmesh.cli import _stdout
from memmesh.cli._common import home_of
from memmesh.errors import ExitCode

if TYPE_CHECKING:
    from memmesh.agents.prompt import Line
    from memmesh.local.hooklog import HookRun

__all__ = ["DEADLINE_S", "fast_prompt", "hook_input", "journal", "prompt_arguments", "run_prompt"]

# The prompt hook gives up (prints nothing, exits 0) when it has not answered by then.
DEADLINE_S = 2.0
# How long a hook waits for the warm server before it answers by itself.
WARM_TIMEOUT_S = 0.75
CLIENTS = ("claude", "codex", "cursor", "hermes")
_STDIN_LIMIT = 1 << 20
_STDIN_SECONDS = 1.5


def prompt_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `mem hook prompt` (in the `mem` parser, and in :func:`fast_prompt`'s)."""
    parser.add_argument(
        "--client",
        choices=CLIENTS,
        help="the client whose prompt hook this is: read its JSON input on standard input "
        "and answer in its format (hermes: the block with each item's id, and the ids of "
        "the member's own items in it, as JSON, for memmesh's Hermes memory provider; "
        "without: the prompt is all of standard input, the block is printed as text)",
    )
    parser.add_argument(
        "--project",
        metavar="P",
        help="the project (default: $MEM_PROJECT, else the git repository of the client's "
        "working folder or of the current folder, else global)",
    )
    parser.add_argument(
        "--budget",
        metavar="TOKENS",
        type=int,
        default=None,
        help="the most the block may take, in tokens of about four characters (default: "
        "$MEM_PROMPT_BUDGET, else 200)",
    )


def fast_prompt(words: Sequence[str]) -> int | None:
    """Run `mem [--home DIR] hook prompt ...` without building the `mem` parser; ``None``
    when ``words`` are not that command with options its own parser takes (the `mem` parser
    then reports them as for any command)."""
    home: str | None = None
    rest = list(words)
    while rest and rest[0].startswith("--home"):
        if rest[0] == "--home" and len(rest) > 1:
            home, rest = rest[1], rest[2:]
        elif rest[0].startswith("--home="):
            home, rest = rest[0].removeprefix("--home="), rest[1:]
        else:
            return None
    if rest[:2] != ["hook", "prompt"] or any(w in ("-h", "--help") for w in rest):
        return None
    parser = _Quiet(prog="mem hook prompt", add_help=False)
    prompt_arguments(parser)
    try:
        args = parser.parse_args(rest[2:])
    except ValueError:
        return None
    args.home = home
    return run_prompt(args)


def run_prompt(args: argparse.Namespace) -> int:
    """`mem hook prompt`: print the block for the prompt on standard input, or nothing."""
    from memmesh.agents.prompt import Line, answer

    started = time.time()
    home = home_of(args)
    watchdog = threading.Timer(DEADLINE_S, _give_up, (home, args.client, started))
    watchdog.daemon = True
    watchdog.start()
    session, project, error = "", "", ""
    shown: list[Line] = []
    try:
        session, project, text, shown = _prompt_block(args, home)
    except Exception as exc:
        text, error = "", f"{type(exc).__name__}: {exc}"
    watchdog.cancel()
    output = answer(args.client, text, shown)
    if output:
        try:
            sys.stdout.write(output + "\n")
            sys.stdout.flush()
        except (OSError, ValueError):  # the client went away: nothing of it was shown
            _stdout.discard()
            shown = []
    if text or error:
        _journal(home, started, session, project, shown, error)
    return ExitCode.OK


def hook_input() -> str:
    """What the client wrote on standard input, read for at most a second or two.

    Clients write their JSON and close at once; a terminal or a pipe nobody writes to must not
    hold the session up, so whatever has arrived by the deadline is all there is.
    """
    if sys.stdin is None or sys.stdin.isatty():
        return ""
    chunks: list[bytes] = []
    size = 0
    deadline = time.monotonic() + _STDIN_SECONDS
    fd = sys.stdin.fileno()
    while size < _STDIN_LIMIT:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if _whole_json(b"".join(chunks)):
            break  # some clients keep the pipe open after writing: do not wait for its end
    return b"".join(chunks).decode("utf-8", errors="replace")


def _prompt_block(args: argparse.Namespace, home: Path) -> "tuple[str, str, str, list[Line]]":
    """The session, the project, the block and the lines it shows."""
    from memmesh.agents.prompt import PromptInput, best_first, block, is_trivial, read_input

    if args.client == "cursor":  # its prompt hook cannot add context: nothing to recall
        return "", "", "", []
    raw = hook_input()
    given = read_input(raw) if args.client else PromptInput(prompt=raw)
    if given is None or is_trivial(given.prompt) or not (home / "memory.db").is_file():
        return (given.session if given else ""), "", "", []
    from memmesh.agents.prompt import recall_lines
    from memmesh.local.project import resolve_project

    project = resolve_project(args.project, cwd=given.folder)
    lines, note = _warm(home, given.prompt, project) or recall_lines(home, given.prompt, project)
    text = block(lines, budget=_budget(args), note=note, client=args.client)
    # The block shows the best lines that fit, one on each line below its header.
    return given.session, project, text, best_first(lines)[: text.count("\n")]


def _warm(home: Path, prompt: str, project: str) -> "tuple[list[Line], str] | None":
    """The warm server's lines and note for ``prompt``; ``None`` when none answered (one is
    then started for the next prompt) or it is turned off."""
    from memmesh.agents import warm

    if not warm.enabled():
        return None
    answer = warm.ask(home, {"prompt": prompt, "project": project}, timeout=WARM_TIMEOUT_S)
    if answer is None:
        with contextlib.suppress(OSError):
            warm.start(home)
        return None
    from memmesh.agents.prompt import lines_of, note_of

    return lines_of(answer.get("lines")), note_of(answer.get("note", ""))


def _budget(args: argparse.Namespace) -> int:
    from memmesh.agents.prompt import DEFAULT_BUDGET

    value = args.budget if args.budget is not None else os.environ.get("MEM_PROMPT_BUDGET")
    try:
        budget = int(value) if value is not None else DEFAULT_BUDGET
    except ValueError:
        return DEFAULT_BUDGET
    return budget if budget > 0 else DEFAULT_BUDGET


def _journal(
    home: Path, started: float, session: str, project: str, shown: "list[Line]", error: str
) -> None:
    """Keep what the hook showed (or the error it swallowed) in the hooks' journal; a journal
    that cannot be written is left be."""
    from memmesh.local.hooklog import HookRun

    run = HookRun(
        hook="prompt", session=session, at=started, project=project,
        local_ids=tuple(line.ref for line in shown if not line.of_team),
        team_ids=tuple(line.ref for line in shown if line.of_team),
        ms=(time.time() - started) * 1000, error=error,
    )  # fmt: skip
    journal(home, run)


def journal(home: Path, run: "HookRun") -> None:
    """Append ``run`` to the hooks' journal; a journal that cannot be written is left be (it
    is where a hook's errors go: there is no further place)."""
    from memmesh.local.hooklog import record_run

    with contextlib.suppress(Exception):
        record_run(home, run)


def _give_up(home: Path, client: str | None, started: float) -> None:
    """Past the deadline: answer as if nothing were relevant, note it, and end the process."""
    if client == "cursor":
        sys.stdout.write(json.dumps({"continue": True}) + "\n")
        sys.stdout.flush()
    _journal(home, started, "", "", [], f"gave up after {DEADLINE_S:g} s")
    os._exit(ExitCode.OK)


def _whole_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


class _Quiet(argparse.ArgumentParser):
    """A parser that raises instead of printing and exiting."""

    def error(self, message: str) -> NoReturn:
        raise ValueError(message)
