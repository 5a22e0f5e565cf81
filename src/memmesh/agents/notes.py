"""Notes files proposed to the inbox: each bullet, short paragraph and code block of a
``notes.md``, ``CLAUDE.md``, ``AGENTS.md`` or ``.cursorrules`` becomes a candidate memory
(:mod:`memmesh.local.inbox`) that the member accepts, edits or rejects; none becomes an item
on its own, and nothing is published from the inbox.

How a file is cut is :mod:`memmesh.agents._markdown`. Each piece is one candidate, with the
heading path as its context and its line; a piece longer than :data:`MAX_CHARS` characters
(its prose, without its code block) is cut into its sentences, and a sentence still longer is
left out with the reason. Its kind is the first of these that holds (:func:`guess_kind`): a
code block alone → command; the kind the piece files itself under, with a label such as
``Gotcha:`` opening it, or else the innermost heading above it that names exactly one kind
(``Gotchas``, ``Known pitfalls``, ``Decisions``, ``Code style``: see ``_FILED_UNDER``);
otherwise its wording: prose that is mostly a shell command → command; "never", "always",
"don't", "do not", "must", "avoid" → convention; "because", "we chose", "decided", "instead
of", "rather than" → decision; "beware", "careful", "watch out", "gotcha" → gotcha; else fact
(command when a code block is under it). The author filed it under that heading, so it wins
over the wording: "always use X" under ``Gotchas`` is a gotcha. Secrets in the text are
redacted before it is stored (the detectors of ``mem remember``).
"""

import re
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from memmesh._files import reason
from memmesh.agents._markdown import Malformed, Piece, Skipped, pieces
from memmesh.agents.errors import NotesUnreadable
from memmesh.local import inbox
from memmesh.local.errors import InboxFull, InvalidInput
from memmesh.local.items import KINDS, MAX_TEXT_BYTES
from memmesh.local.transfer import MARKDOWN_TITLE as EXPORT_TITLE
from memmesh.policy.redaction import redact_text

if TYPE_CHECKING:
    from memmesh.local.store import Store

__all__ = [
    "MAX_CHARS",
    "MAX_FILE_BYTES",
    "Report",
    "filed_as",
    "guess_kind",
    "propose_notes",
    "read_notes",
]

MAX_CHARS = 400  # the longest piece proposed whole; a longer one is cut into sentences
MAX_FILE_BYTES = 1024 * 1024
_MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdc", ".mdx")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[*_])")
_INLINE_CODE = re.compile(r"`([^`]+)`")
# What `mem export --format markdown` appends to an item's text: its tags, then its short id.
_EXPORT_TAIL = re.compile(r"\s*(?:_\([^)]*\)_\s*)?`[0-9A-Za-z]{4,26}`\s*$")
_COMMANDS = frozenset(
    "bash brew cargo cd curl docker git go helm just kubectl make mem npm npx pip pipx pnpm "
    "poetry pytest python python3 ruff sh sudo terraform uv uvx yarn".split()
)
_CONVENTION = re.compile(r"\b(never|always|don'?t|do not|must|avoid)\b", re.IGNORECASE)
_DECISION = re.compile(
    r"\b(because|we chose|we decided|decided|instead of|rather than)\b", re.IGNORECASE
)
_GOTCHA = re.compile(r"\b(beware|careful|watch out|gotcha)\b", re.IGNORECASE)
# The words of a heading (or of a label opening a piece, ``Gotcha:``) that file what is under
# it as one kind; the singular or the plural, case ignored.
_FILED_UNDER: dict[str, str] = {
    "gotcha": r"gotchas?|pitfalls?|caveats?|known issues?|footguns?",
    "decision": r"decisions?|adrs?",
    "convention": r"conventions?|styles?|rules?|guidelines?",
    "command": r"commands?|scripts?",
    "incident": r"incidents?|post-?mortems?|outages?",
    "preference": r"preferences?",
}
_HEADING_WORDS = {k: re.compile(rf"\b(?:{w})\b", re.IGNORECASE) for k, w in _FILED_UNDER.items()}
_LABEL_WORDS = {
    k: re.compile(rf"[\W_]*(?:{w})[*_]*\s*:", re.IGNORECASE) for k, w in _FILED_UNDER.items()
}


class Report(NamedTuple):
    """What one notes file gave the inbox: the candidates added, how many were pending
    already, what was left out and why (with its line; ``accepted before``, ``rejected
    before`` for what was decided on earlier), the secrets redacted, and ``error``: why the
    file could not be read (then nothing of it was added)."""

    path: str
    proposed: tuple[inbox.Candidate, ...] = ()
    already_pending: int = 0
    skipped: tuple[Skipped, ...] = ()
    redacted: tuple[str, ...] = ()
    error: str | None = None


def read_notes(path: Path) -> tuple[list[Piece], list[Skipped]]:
    """The pieces of the notes file at ``path``, and what was left out of it.

    Raises :class:`NotesUnreadable` for a file that is missing, unreadable, larger than
    :data:`MAX_FILE_BYTES`, binary, not UTF-8 or malformed.
    """
    try:
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except IsADirectoryError:
        raise NotesUnreadable(str(path), "a folder, not a notes file") from None
    except OSError as exc:
        raise NotesUnreadable(str(path), reason(exc)) from None
    if len(data) > MAX_FILE_BYTES:
        raise NotesUnreadable(str(path), f"larger than {MAX_FILE_BYTES // 1024} KiB")
    if b"\x00" in data:
        raise NotesUnreadable(str(path), "a binary file, not notes")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotesUnreadable(str(path), f"not UTF-8 text (byte {exc.start + 1})") from None
    markdown = path.suffix.lower() in _MARKDOWN_SUFFIXES
    try:
        return pieces(text.replace("\r\n", "\n").replace("\r", "\n"), markdown=markdown)
    except Malformed as exc:
        raise NotesUnreadable(str(path), f"malformed: {exc}") from None


def filed_as(text: str, headings: tuple[str, ...] = ()) -> str | None:
    """The kind a piece files itself under: the one its opening label names (``Gotcha: ...``),
    else the one the innermost of its ``headings`` naming exactly one kind names; a heading
    naming two kinds (``Commands and conventions``) names none."""
    for kind, label in _LABEL_WORDS.items():
        if label.match(text):
            return kind
    for heading in reversed(headings):
        named = [kind for kind, words in _HEADING_WORDS.items() if words.search(heading)]
        if len(named) == 1:
            return named[0]
    return None


def guess_kind(text: str, code: str | None = None, filed: str | None = None) -> str:
    """The kind a piece's prose (and the code block under it) proposes, ``filed`` being the
    kind it is filed under (:func:`filed_as`), if any; see the module."""
    if not text:
        return "command"
    if filed is not None:
        return filed
    if _mostly_command(text):
        return "command"
    for kind, words in (("convention", _CONVENTION), ("decision", _DECISION), ("gotcha", _GOTCHA)):
        if words.search(text):
            return kind
    return "command" if code is not None else "fact"


def _mostly_command(text: str) -> bool:
    """Whether ``text`` is mostly a shell command: ``$ cmd``, a first word that is a known
    command, or inline code making up most of it."""
    plain = text.removeprefix("$ ").strip("`").strip()
    first = plain.split(" ", 1)[0]
    if (first in _COMMANDS or first.startswith("./")) and not text.rstrip().endswith("."):
        return True
    code = sum(len(m.group(1)) for m in _INLINE_CODE.finditer(text))
    return code >= 0.6 * len(text.replace("`", ""))


def _candidate_texts(piece: Piece) -> list[tuple[str, str] | Skipped]:
    """Each (text, kind) ``piece`` proposes, or why a part of it is left out."""
    parts = [piece.text]
    filed = filed_as(piece.text, piece.headings)
    if len(piece.text) > MAX_CHARS:
        parts = _SENTENCE_END.split(piece.text)
    out: list[tuple[str, str] | Skipped] = []
    for index, part in enumerate(parts):
        if len(part) > MAX_CHARS:
            out.append(Skipped(piece.line, f"a sentence longer than {MAX_CHARS} characters"))
            continue
        code = piece.code if index == len(parts) - 1 else None
        text = part if code is None else f"{part}\n```{piece.info}\n{code}\n```".lstrip("\n")
        if len(text.encode("utf-8")) > MAX_TEXT_BYTES:
            out.append(Skipped(piece.line, f"longer than {MAX_TEXT_BYTES // 1024} KiB"))
            continue
        out.append((text, guess_kind(part, code, filed)))
    return out


def _exported(text: str, kind: str, context: str) -> tuple[str, str, str]:
    """A bullet of memmesh's own Markdown export (`mem export --format markdown`) as the item
    it was: under ``memmesh notes > PROJECT > KIND``, its text without the tags and short id
    the export appends, its kind and its project; any other piece as it is (no project)."""
    heading = context.split(" > ")
    if len(heading) != 3 or heading[0] != EXPORT_TITLE or heading[2] not in KINDS:
        return text, kind, ""
    return _EXPORT_TAIL.sub("", text), heading[2], heading[1]


def propose_notes(store: "Store", path: Path, project: str = "") -> Report:
    """Propose every candidate of the notes file at ``path`` to the inbox, for ``project``
    (``""``: the default project when accepted). A file that cannot be read, or that would
    overfill the inbox, is a report with its ``error``, and adds nothing."""
    shown = str(path)
    try:
        found, skipped = read_notes(path)
    except NotesUnreadable as exc:
        return Report(shown, error=str(exc))
    source = str(path.resolve())
    proposals: list[inbox.Proposal] = []
    for piece in found:
        for made in _candidate_texts(piece):
            if isinstance(made, Skipped):
                skipped.append(made)
                continue
            text, kind, exported_to = _exported(*made, piece.context)
            where = project or exported_to
            proposals.append(
                inbox.Proposal(text, kind, where, source, piece.line, context=piece.context)
            )
    try:
        results = inbox.propose(store, proposals, redact=redact_text)
    except (InboxFull, InvalidInput) as exc:
        return Report(shown, error=str(exc))
    skipped += [
        Skipped(p.source_line or 0, r.added)
        for p, r in zip(proposals, results, strict=True)
        if r.added in ("accepted before", "rejected before")
    ]
    return Report(
        shown,
        proposed=tuple(r.candidate for r in results if r.added == "proposed"),
        already_pending=sum(1 for r in results if r.added == "already pending"),
        skipped=tuple(sorted(skipped)),
        redacted=tuple(d for r in results for d in r.redacted),
    )
