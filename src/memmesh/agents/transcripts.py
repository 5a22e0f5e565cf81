"""Coding agents' transcripts proposed to the inbox: what a session taught, as candidates.

A Claude Code or Codex transcript (read by :mod:`memmesh.agents._claude_log` and
:mod:`memmesh.agents._codex_log`) gives candidate memories (:mod:`memmesh.local.inbox`) the
member accepts, edits or rejects; none becomes an item on its own. The rules are few,
deterministic and read only the user's own text and the shell commands run with their
results, never the assistant's prose:

* a sentence of the user stating a rule or preference: it starts with "always", "never",
  "don't", "do not", "prefer", "use X not/instead of/rather than Y", or says "we always",
  "we never", "from now on" → convention;
* a sentence of the user stating a decision with its reason ("we decided/chose/picked/went
  with … because …") → decision;
* a command that failed, then succeeded when run again after other commands or edits (at most
  :data:`MAX_FIXES` of them: more and what fixed it is unclear) → gotcha "`cmd` fails with
  <error>; fixed by running `…` / editing …";
* a command that failed, then a changed one of the same program and subcommand that
  succeeded → command "`new` works; `old` failed with: <error>".

Each candidate has the transcript, its line and the session id as its source, the session's
first prompt (shortened) or else its project as context, and the folder name of the
session's working folder as its project (when that is a valid name). Secrets are redacted
before it is stored. With ``$MEM_EXTRACT_COMMAND`` set, that program is also given the
transcript as JSON on standard input and its candidates (``[{"text", "kind"?, "line"?}]``
on standard output) are added; past :data:`EXTRACT_TIMEOUT_S`, or on bad output, the file
reports the error and the rule-based candidates still go in.

A gotcha fixed by editing files is anchored to them (:mod:`memmesh.local.anchors`: whole
files, as they are when the transcript is read; the first :data:`MAX_ANCHORED`), so that the
item it becomes may be said stale once they change: each file as the transcript names it,
absolute or relative to the session's working folder. A file that is gone, outside any git
repository or not text is left out, never an error.
"""

import os
import re
from collections.abc import Iterable
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, NamedTuple

from memmesh._json_command import run_json
from memmesh.agents import _claude_log, _codex_log
from memmesh.agents._jsonl import Record, Session, Skipped, Step, read_records
from memmesh.agents.errors import TranscriptUnreadable
from memmesh.local import inbox
from memmesh.local.anchors import Anchor, anchor_file, parse_about
from memmesh.local.errors import InboxFull, InvalidInput
from memmesh.local.items import KINDS, check_name
from memmesh.policy.redaction import redact_text

if TYPE_CHECKING:
    from memmesh.local.store import Store

__all__ = [
    "CLIENTS",
    "EXTRACT_TIMEOUT_S",
    "MAX_ANCHORED",
    "MAX_FIXES",
    "Found",
    "Report",
    "found_in",
    "propose_transcript",
    "transcript_files",
]

CLIENTS = {"claude": "Claude Code", "codex": "Codex"}
EXTRACT_TIMEOUT_S = 10.0
MAX_FIXES = 3
MAX_ANCHORED = 4  # files a candidate is anchored to: a fix spread wider says little of each
_MAX_SENTENCE = 300
_MAX_COMMAND = 200
_MAX_ERROR = 120
_CONTEXT_CHARS = 80
_LEAD = r"^(?:(?:please|and|also|note|remember|ok|okay|so)[,:]?\s+)*"
_RULE = re.compile(
    _LEAD + r"(?:always|never|don'?t|do not|prefer|use\s+\S.{0,60}?\s+(?:not|instead of|rather "
    r"than)\s+\S)|\bwe\s+(?:always|never)\b|\bfrom now on\b",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\bwe(?:'ve| have)?\s+(?:decided|chose|picked|went with|settled on)\b.+\bbecause\b\s*\S",
    re.IGNORECASE,
)
_SENTENCES = re.compile(r"(?<=[.!])\s+|\n+")
_EXIT_LINE = re.compile(r"^(?:Exit code|Process exited with code) -?\d+$")
_ERRORISH = re.compile(
    r"\b(error|exception|fatal|not found|no such|denied|failed|cannot|can't|unable)\b",
    re.IGNORECASE,
)
_EXCEPTION = re.compile(r"^[\w.]*(?:Error|Exception)\b:")
_ERROR_START = re.compile(r"^(?:error|fatal|npm ERR!)\b", re.IGNORECASE)
_MARKER = re.compile(r"^E\s+(?=\S)")  # pytest's mark of an error line
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9_-]*")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


class Found(NamedTuple):
    """A candidate a rule (or the extract command) found: its line, kind and text, and the
    files the steps it was built from edited, as the transcript names them."""

    line: int | None
    kind: str
    text: str
    files: tuple[str, ...] = ()


class Report(NamedTuple):
    """What one transcript gave the inbox, as :class:`memmesh.agents.notes.Report` says for a
    notes file: ``error`` says why the file could not be read (nothing of it was added),
    ``extract_error`` why the extract command gave nothing (the rules' candidates were)."""

    path: str
    proposed: tuple[inbox.Candidate, ...] = ()
    already_pending: int = 0
    decided_before: int = 0
    redacted: tuple[str, ...] = ()
    error: str | None = None
    extract_error: str | None = None
    project: str = ""  # the project proposed
    skipped: tuple[Skipped, ...] = ()  # lines passed over (too long or nested too deeply)


def transcript_files(path: Path) -> list[Path]:
    """``path`` itself, or every ``*.jsonl`` under it when it is a folder (sorted)."""
    return sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]


def found_in(session: Session) -> list[Found]:
    """What the rules find in a session's steps, in order, each text once; see the module."""
    found = [f for step in session.steps if step.what == "user" for f in _sentences(step)]
    found += _commands(session.steps, session.cwd)
    found.sort(key=lambda f: f.line or 0)
    return _once(found)


def _once(found: list[Found]) -> list[Found]:
    """``found`` with each text (case aside) only its first time."""
    seen: dict[str, Found] = {}
    for f in found:
        seen.setdefault(f.text.lower(), f)
    return list(seen.values())


def _sentences(step: Step) -> list[Found]:
    out: list[Found] = []
    for raw in _SENTENCES.split(step.text):
        sentence = raw.strip().lstrip("-*> ").strip()
        if not sentence or sentence.endswith("?") or len(sentence) > _MAX_SENTENCE:
            continue
        if len(sentence.split()) < 3:
            continue
        if _DECISION.search(sentence):
            out.append(Found(step.line, "decision", sentence))
        elif _RULE.search(sentence):
            out.append(Found(step.line, "convention", sentence))
    return out


def _key(command: str) -> tuple[str, ...]:
    """A command's program and first subcommand: commands of the same key are "similar"."""
    words = command.split("&&")[-1].split()
    while words and (_ENV.match(words[0]) or words[0] in ("sudo", "env", "time")):
        words = words[1:]
    if not words:
        return ()
    sub = next((w for w in words[1:] if not w.startswith("-") and _SUBCOMMAND.fullmatch(w)), "")
    return (words[0].rsplit("/", 1)[-1], sub)


def _short_error(output: str) -> str:
    """The line of a failed command's output that says what failed: a Python exception's
    (the last), else a line starting "error"/"fatal" (the first), else the last naming an
    error, else the last line."""
    lines = [_MARKER.sub("", ln).strip() for ln in output.splitlines()]
    lines = [ln for ln in lines if ln and not _EXIT_LINE.match(ln)]
    line = (
        next((ln for ln in reversed(lines) if _EXCEPTION.match(ln)), None)
        or next((ln for ln in lines if _ERROR_START.match(ln)), None)
        or next((ln for ln in reversed(lines) if _ERRORISH.search(ln)), None)
        or (lines[-1] if lines else "a non-zero exit")
    )
    line = line.rstrip(".")
    return line if len(line) <= _MAX_ERROR else line[: _MAX_ERROR - 1] + "…"


def _relative(path: str, cwd: str) -> str:
    """``path`` under the session's working folder ``cwd`` as relative to it."""
    base = cwd.rstrip("/") + "/"
    return path.removeprefix(base) if cwd and path.startswith(base) else path


class _Failure(NamedTuple):
    command: str
    error: str
    fixes: list[str]
    edited: list[str]  # the edit steps' texts


def _commands(steps: list[Step], cwd: str) -> list[Found]:
    calls: dict[str, str] = {}
    failing: dict[tuple[str, ...], _Failure] = {}
    out: list[Found] = []
    for step in steps:
        if step.what == "call":
            calls[step.call_id] = step.text.strip()
            continue
        if step.what == "edit":
            for pending in failing.values():
                pending.fixes.append(f"editing {_relative(step.text, cwd)}")
                pending.edited.append(step.text)
            continue
        command = calls.pop(step.call_id, "") if step.what == "result" else ""
        if not command or "\n" in command or len(command) > _MAX_COMMAND:
            continue
        key = _key(command)
        if step.failed:
            if key:
                failing[key] = _Failure(command, _short_error(step.text), [], [])
            continue
        failure = failing.pop(key) if key in failing else None
        for other in failing.values():
            other.fixes.append(f"running `{command}`")
        if failure is None:
            continue
        if command != failure.command:
            text = f"`{command}` works; `{failure.command}` failed with: {failure.error}"
            out.append(Found(step.line, "command", text))
        elif 0 < len(fixes := list(dict.fromkeys(failure.fixes))) <= MAX_FIXES:
            text = f"`{command}` fails with {failure.error}; fixed by {', then '.join(fixes)}"
            out.append(Found(step.line, "gotcha", text, tuple(failure.edited)))
    return out


def _files_named(edited: Iterable[str]) -> list[str]:
    """The files edit steps name, each once: a step's whole text, then (a Codex patch joins
    the files it changed with ", ") each part of it; a name that is no file is left out later."""
    names: list[str] = []
    for text in edited:
        names += [text, *text.split(", ")] if ", " in text else [text]
    return list(dict.fromkeys(names))


def _anchored(edited: Iterable[str], cwd: str, now: float) -> tuple[Anchor, ...]:
    """Whole-file anchors of the first :data:`MAX_ANCHORED` files of git repositories that
    the edit steps ``edited`` name (absolute, or relative to the session's folder ``cwd``)."""
    out: dict[tuple[str, str], Anchor] = {}
    for name in _files_named(edited):
        if len(out) == MAX_ANCHORED:
            break
        if not (cwd or PurePath(name).is_absolute()):
            continue  # relative to no folder known: never to the one `mem` runs in
        # The transcript names what it likes (a file unreadable, a loop of links, a NUL): any
        # of them is no anchor. A name ending ":N" is read as lines; it is left out too.
        try:
            repo, path, first, _ = parse_about(name, Path(cwd))
            if not first:
                out.setdefault((str(repo), path), anchor_file(repo, path, 0, 0, now))
        except (InvalidInput, OSError, RuntimeError, ValueError):
            continue
    return tuple(out.values())


def _parse(client: str, path: Path) -> tuple[list[Record], Session, list[Skipped]]:
    records, skipped = read_records(path)
    reader = _claude_log if client == "claude" else _codex_log
    looks = _claude_log.is_claude if client == "claude" else _codex_log.is_codex
    if not looks(records):
        raise TranscriptUnreadable(str(path), f"not a {CLIENTS[client]} transcript")
    return records, reader.session(records), skipped


def _extract(
    command: str, client: str, path: Path, records: list[Record], session: Session, limit: float
) -> list[Found]:
    """The candidates ``command`` finds; raises :class:`ValueError` with what went wrong."""
    data = {
        "client": client, "path": str(path), "session_id": session.session_id,
        "cwd": session.cwd, "records": [{"line": r.line, "data": r.data} for r in records],
    }  # fmt: skip
    answer = run_json(command, data, limit)
    if not isinstance(answer, list):
        raise ValueError("did not print a JSON list")
    out: list[Found] = []
    for entry in answer:
        text = entry.get("text") if isinstance(entry, dict) else None
        kind = entry.get("kind", "fact") if isinstance(entry, dict) else None
        line = entry.get("line") if isinstance(entry, dict) else None
        if not isinstance(text, str) or not text.strip() or kind not in KINDS:
            raise ValueError('printed an entry without a "text" or with an unknown "kind"')
        out.append(Found(line if isinstance(line, int) else None, str(kind), text.strip()))
    return out


def _project_of(cwd: str) -> str:
    name = re.split(r"[/\\]", cwd.rstrip("/\\"))[-1]
    try:
        return check_name(name, "project") if name else ""
    except InvalidInput:
        return ""


def _context(session: Session, project: str) -> str:
    first = next((s.text for s in session.steps if s.what == "user"), "")
    first = " ".join(redact_text(first)[0].split())  # redacted before it is cut
    if len(first) > _CONTEXT_CHARS:
        first = first[: _CONTEXT_CHARS - 1].rstrip() + "…"
    return first or project


def propose_transcript(
    store: "Store",
    client: str,
    path: Path,
    project: str | None = None,
    *,
    extract_timeout: float | None = None,
) -> Report:
    """Propose what the ``client`` ("claude" or "codex") transcript at ``path`` gives to the
    inbox, for ``project`` (default: the session's working folder's name); the extract
    command has ``extract_timeout`` seconds (default :data:`EXTRACT_TIMEOUT_S`). A file that
    cannot be read, or that would overfill the inbox, is a report with its ``error``, and
    adds nothing; a line passed over (see :mod:`memmesh.agents._jsonl`) is named in its
    ``skipped``, and the rest of the file goes in."""
    shown = str(path)
    try:
        records, session, skipped = _parse(client, path)
    except TranscriptUnreadable as exc:
        return Report(shown, error=str(exc))
    found = found_in(session)
    extract_error: str | None = None
    command = os.environ.get("MEM_EXTRACT_COMMAND", "").strip()
    if command:
        try:
            limit = EXTRACT_TIMEOUT_S if extract_timeout is None else extract_timeout
            found += _extract(command, client, path, records, session, limit)
        except ValueError as exc:
            extract_error = (
                f"{shown}: the extract command {exc}; the rule-based candidates were added"
            )
    project = _project_of(session.cwd) if project is None else project
    context = _context(session, project)
    source = str(path.resolve())
    now = store.clock()
    proposals = [
        inbox.Proposal(
            f.text,
            f.kind,
            project,
            source,
            f.line,
            session.session_id,
            context,
            _anchored(f.files, session.cwd, now),
        )
        for f in _once(found)
    ]
    try:
        results = inbox.propose(store, proposals, redact=redact_text)
    except (InboxFull, InvalidInput) as exc:
        return Report(shown, error=str(exc))
    return Report(
        shown,
        proposed=tuple(r.candidate for r in results if r.added == "proposed"),
        already_pending=sum(1 for r in results if r.added == "already pending"),
        decided_before=sum(1 for r in results if r.added.endswith("before")),
        redacted=tuple(d for r in results for d in r.redacted),
        extract_error=extract_error,
        project=project,
        skipped=tuple(skipped),
    )
