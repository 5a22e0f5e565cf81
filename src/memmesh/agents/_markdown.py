"""A notes file cut into the pieces that could each be one memory: bullets, paragraphs and
code blocks, each with its line and the headings (and parent bullets) it sits under.

It reads the Markdown that notes files are written in (``notes.md``, ``CLAUDE.md``,
``AGENTS.md``) and plain text (``.cursorrules``), deterministically and line by line:

* front matter (``---`` or ``+++`` on the first line, to the same line again), HTML comments,
  headings, rules (``---``) and blank lines are never pieces themselves;
* a heading (``#`` to ``######``, or a line underlined with ``===``/``---``) sets the context
  of what follows it, as ``Deploys > Staging`` (each piece keeps its headings apart too, as
  ``headings``: they may name its kind);
* each bullet (``-``, ``*``, ``+``, ``1.``, ``1)``; a task box ``[ ]`` is dropped) is one
  piece, with the lines indented under it; a nested bullet is a piece of its own, with its
  parent's text in its context; a bullet ending in ``:`` whose nested bullets say the rest is
  their context only;
* a paragraph (lines up to a blank one; in plain text, each line) is one piece;
* a fenced code block directly under a bullet or paragraph (blank lines apart) is part of it;
  one under a heading is a piece of its own; it is never cut into lines;
* a table is left out, as the reason says.

A code block, front matter or comment that never ends makes the file malformed
(:class:`Malformed`): nothing of it is taken.
"""

import re
from typing import NamedTuple

__all__ = ["Malformed", "Piece", "Skipped", "pieces"]

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`\s]*)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(\s+#+)?\s*$")
_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?(.*)$")
_RULE = re.compile(r"^\s{0,3}(?:(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_QUOTE = re.compile(r"^\s*>\s?")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_CONTEXT_WORDS = 60  # characters of a parent bullet shown in a nested one's context


class Malformed(ValueError):
    """The file cannot be read as notes: the message says where and why."""


class Piece(NamedTuple):
    """One piece of a notes file: its prose (whitespace joined), the code block under it
    (``info``: its language), its first line (1-based), its context, and the titles of the
    headings it sits under (its context without parent bullets), outermost first."""

    text: str
    line: int
    context: str
    code: str | None = None
    info: str = ""
    headings: tuple[str, ...] = ()


class Skipped(NamedTuple):
    """Something of the file that is no piece, with its line and why."""

    line: int
    reason: str


class _Block:
    def __init__(
        self,
        line: int,
        text: str,
        headings: tuple[str, ...],
        parents: tuple[str, ...] = (),
        indent: int = -1,
    ):
        self.line, self.lines, self.indent = line, [text], indent
        self.headings, self.context = headings, headings + parents
        self.children = 0
        self.code: str | None = None
        self.info = ""

    @property
    def text(self) -> str:
        return " ".join(" ".join(self.lines).split())


def _without_front_matter(lines: list[str]) -> int:
    """Where the text starts: after the front matter, if the file opens with some."""
    if not lines or lines[0].strip() not in ("---", "+++"):
        return 0
    mark = lines[0].strip()
    for number, line in enumerate(lines[1:], start=1):
        if line.strip() == mark:
            return number + 1
    raise Malformed("line 1 opens front matter that never ends")


def _uncommented(text: str) -> str:
    """``text`` with its HTML comments blanked out, their line breaks kept."""
    start = text.find("<!--")
    if start >= 0 and text.find("-->", start + 4) < 0:
        line = text.count("\n", 0, start) + 1
        raise Malformed(f"line {line} opens an HTML comment that never ends")
    return _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def pieces(text: str, *, markdown: bool = True) -> tuple[list[Piece], list[Skipped]]:
    """The pieces of a notes file's ``text`` in order, and what was left out; ``markdown``
    false for plain text, where each line is a paragraph of its own."""
    lines = _uncommented(text).split("\n")
    number = _without_front_matter(lines)
    headings: list[tuple[int, str]] = []
    blocks: list[_Block] = []
    skipped: list[Skipped] = []
    bullets: list[_Block] = []  # the open list, outermost first
    current: _Block | None = None  # the block a next line may continue
    attach: _Block | None = None  # the block a code block next would belong to
    in_table = False

    def context() -> tuple[str, ...]:
        return tuple(title for _, title in headings)

    while number < len(lines):
        line = lines[number]
        number += 1
        if not line.strip():
            current, in_table = None, False
            continue
        if fence := _FENCE.match(line):
            indent, mark, info = fence.groups()
            body: list[str] = []
            while number < len(lines) and not lines[number].strip().startswith(mark):
                body.append(lines[number].removeprefix(indent))
                number += 1
            if number == len(lines):
                raise Malformed(f"line {number - len(body)} opens a code block that never ends")
            number += 1
            code = "\n".join(body).strip("\n")
            if not code.strip():
                skipped.append(Skipped(number - len(body) - 1, "an empty code block"))
            elif attach is not None and attach.code is None:
                attach.code, attach.info = code, info
            else:
                block = _Block(number - len(body) - 1, "", context())
                block.code, block.info = code, info
                blocks.append(block)
            current = None
            continue
        if heading := _HEADING.match(line):
            _set_heading(headings, len(heading.group(1)), heading.group(2))
            current = attach = None
            bullets.clear()
            continue
        underline = _SETEXT.match(line)
        if underline and current is not None and current.indent < 0 and len(current.lines) == 1:
            blocks.remove(current)
            _set_heading(headings, 1 if underline.group(1)[0] == "=" else 2, current.text)
            current = attach = None
            continue
        if _RULE.match(line):
            current = attach = None
            bullets.clear()
            continue
        if line.lstrip().startswith("|"):
            if not in_table:
                skipped.append(Skipped(number, "a table"))
            in_table, current, attach = True, None, None
            continue
        if bullet := _BULLET.match(line):
            indent = len(bullet.group(1).expandtabs(4))
            while bullets and bullets[-1].indent >= indent:
                bullets.pop()
            parents = tuple(_shortened(b.text.rstrip(":")) for b in bullets)
            if bullets:
                bullets[-1].children += 1
            current = attach = _Block(number, bullet.group(2), context(), parents, indent)
            blocks.append(current)
            bullets.append(current)
            continue
        indent = len(line) - len(line.lstrip())
        words = _QUOTE.sub("", line)
        if current is not None and (markdown or current.indent >= 0):
            current.lines.append(words)
            continue
        under = [b for b in bullets if b.indent < indent]
        if under and markdown:  # a loose list item's next paragraph
            current = attach = under[-1]
            current.lines.append(words)
            continue
        bullets.clear()
        current = attach = _Block(number, words, context())
        blocks.append(current)
    return _pieces(blocks, skipped)


def _set_heading(headings: list[tuple[int, str]], level: int, title: str) -> None:
    while headings and headings[-1][0] >= level:
        headings.pop()
    headings.append((level, " ".join(title.split())))


def _shortened(text: str) -> str:
    if len(text) <= _CONTEXT_WORDS:
        return text
    head = text[: _CONTEXT_WORDS + 1]
    return (head.rsplit(" ", 1)[0] if " " in head else text[:_CONTEXT_WORDS]) + "…"


def _pieces(blocks: list[_Block], skipped: list[Skipped]) -> tuple[list[Piece], list[Skipped]]:
    out: list[Piece] = []
    for block in blocks:
        text = block.text
        if block.children and text.endswith(":") and block.code is None:
            skipped.append(Skipped(block.line, "introduces the bullets under it"))
            continue
        if not text and block.code is None:
            continue
        context = " > ".join(block.context)
        out.append(Piece(text, block.line, context, block.code, block.info, block.headings))
    return out, sorted(skipped)
