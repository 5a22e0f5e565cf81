"""`mem hook capture --client claude|codex`: the session's transcript proposed to the inbox.

Claude Code runs it before it compacts a conversation (``PreCompact``) and as a session ends
(``SessionEnd``), with a JSON object on standard input naming ``transcript_path``,
``session_id`` and ``cwd``. It proposes what that transcript gives
(:mod:`memmesh.agents.transcripts`) as `mem ingest claude` would, and like the prompt hook
it must never slow or break the agent: it prints nothing, exits 0 whatever happens, gives up
past :data:`DEADLINE_S` (under the client's own hook timeout), and keeps each run, with the
error it swallowed, in the hooks' journal (:mod:`memmesh.local.hooklog`, hook ``capture``).

Then, as a session ends (``SessionEnd``; not before a compaction), when no consolidation run
was recorded for :data:`CONSOLIDATE_EVERY_S`, it starts `mem consolidate --record` in a
process of its own (a report only: it changes nothing), which the next session's brief shows.
"""

import argparse
import contextlib
import io
import json
import os
import threading
import time
from pathlib import Path

from memmesh.cli._common import home_of, open_store
from memmesh.cli._hooks import hook_input, journal
from memmesh.errors import ExitCode

__all__ = ["CONSOLIDATE_EVERY_S", "DEADLINE_S", "EXTRACT_S", "run_capture"]

# The hook gives up (exits 0, the error journaled) when it is not done by then; the client
# kills its hooks after 10 s (agents/_entries.py HOOK_TIMEOUT_SECONDS).
DEADLINE_S = 8.0
# What the extract command ($MEM_EXTRACT_COMMAND) may take within the hook.
EXTRACT_S = 5.0
# A session's end starts a consolidation report at most this often.
CONSOLIDATE_EVERY_S = 24 * 3600.0


def run_capture(args: argparse.Namespace) -> int:
    """Propose the transcript the hook's input names; always exit 0, printing nothing."""
    started = time.time()
    home = home_of(args)
    watchdog = threading.Timer(DEADLINE_S, _give_up, (home, started))
    watchdog.daemon = True
    watchdog.start()
    session = project = error = ""
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            session, project, error = _capture(args)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    watchdog.cancel()
    _journal(home, started, session, project, error)
    return ExitCode.OK


def _capture(args: argparse.Namespace) -> tuple[str, str, str]:
    """The session, the project and what went wrong ("" when nothing did)."""
    from memmesh.agents.transcripts import propose_transcript

    try:
        given = json.loads(hook_input() or "null")
    except ValueError:
        return "", "", "the hook's input is not JSON"
    if not isinstance(given, dict):
        return "", "", "the hook's input is not a JSON object"
    session = str(given.get("session_id") or "")
    path = given.get("transcript_path")
    if not isinstance(path, str) or not path:
        return session, "", "the hook's input names no transcript_path"
    with open_store(args) as store:
        report = propose_transcript(
            store, args.client, Path(path).expanduser(), args.project, extract_timeout=EXTRACT_S
        )
    if given.get("hook_event_name") == "SessionEnd":
        _consolidate_when_due(args)
    return session, report.project, report.error or report.extract_error or ""


def _consolidate_when_due(args: argparse.Namespace) -> None:
    """Start a recorded consolidation report when none was recorded for a day."""
    from memmesh._processes import start_detached
    from memmesh.consolidate.runs import due

    if due(home_of(args), time.time(), CONSOLIDATE_EVERY_S):
        start_detached(home_of(args), "consolidate", "--record")


def _journal(home: Path, started: float, session: str, project: str, error: str) -> None:
    from memmesh.local.hooklog import HookRun

    ms = (time.time() - started) * 1000
    journal(home, HookRun(hook="capture", session=session, at=started, project=project, ms=ms,
                          error=error))  # fmt: skip


def _give_up(home: Path, started: float) -> None:
    """Past the deadline: note it and end the process (an open transaction rolls back)."""
    _journal(home, started, "", "", f"gave up after {DEADLINE_S:g} s")
    os._exit(ExitCode.OK)
