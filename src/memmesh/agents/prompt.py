"""`mem hook prompt`: what the agent should know about the prompt just submitted.

A client runs the hook before each prompt reaches the model, with a JSON object on standard
input: Claude Code's ``UserPromptSubmit`` gives ``prompt``, ``cwd`` and ``session_id``;
Cursor's ``beforeSubmitPrompt`` gives ``prompt``, ``workspace_roots`` and
``conversation_id``. A trivial prompt (a greeting, "yes", "continue", a slash command, a word
or two) gets nothing. Otherwise the local store and the team cache are both recalled for it,
and the relevant items, best first, make one compact block of at most a budget of tokens
(about four characters each); when nothing is relevant the hook prints nothing.

Answers differ by client: Claude Code reads ``hookSpecificOutput.additionalContext`` from a
JSON object; Cursor's prompt hook can only let the prompt through (``{"continue": true}``: it
has no way to add context), so for Cursor nothing is recalled; memmesh's Hermes memory
provider asks as ``--client hermes`` with Claude Code's input and gets the block in its own
wording (each line with its id) and the ids of the member's own items in it, as JSON; the
others add plain standard output to the context.

Whatever the client, a block holding teammates' lines opens with
:data:`~memmesh.text.TEAMMATES_NOTE` on its header's line, their tag-shaped text is made inert
(:func:`memmesh.text.inert`), and they take turns (:func:`memmesh.agents.brief.by_turns`):
each teammate's best line before anyone's second, the member's own lines in their place.

A line whose item another author's line contradicts (a teammate's, or the member's own:
:func:`memmesh.team.contradictions.otherwise`) names them at its end, ``— bob says otherwise:
...`` (:func:`memmesh.agents.teampart.otherwise_line`), on the same line: the block's lines are
its items, one each, and a flagged line that does not fit the budget is dropped whole.
"""

import contextlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from memmesh.text import TEAMMATES_NOTE, inert, json_printable, printable, tokens

if TYPE_CHECKING:
    from memmesh.local.store import Store

__all__ = [
    "DEFAULT_BUDGET",
    "Line",
    "PromptInput",
    "answer",
    "best_first",
    "block",
    "is_trivial",
    "lines_of",
    "note_of",
    "read_input",
]

DEFAULT_BUDGET = 200
CHARS_PER_TOKEN = 4
MAX_ITEM_CHARS = 240
TEAM_POOL = 3  # teammates' items weighed for each one shown, so that turns can be taken
HEADER = "memmesh: what you and your team know that may bear on this (recall more with memmesh):"
# Whole prompts that ask for nothing new: agreement, greetings, go-aheads.
_TRIVIAL = {
    "yes", "y", "yep", "yeah", "no", "n", "nope", "ok", "okay", "k", "sure", "fine", "go",
    "continue", "go on", "go ahead", "keep going", "proceed", "next", "again", "retry",
    "try again", "do it", "done", "thanks", "thank you", "thx", "ty", "hi", "hello", "hey",
    "good morning", "lgtm", "looks good", "great", "nice", "cool", "perfect", "stop", "wait",
    "undo", "why", "what", "how",
}  # fmt: skip
_EDGES = re.compile(r"^[\W_]+|[\W_]+$")
MIN_WORDS = 2


class PromptInput(NamedTuple):
    """What a client's hook input says: the prompt, the working folder (``None`` when it names
    no usable one) and the session (empty when it names none).

    This and :class:`Line` are named tuples, not msgspec structs: the hook's process, which
    the warm server answers, starts without msgspec (about 17 ms of every prompt;
    docs/benchmarks.md)."""

    prompt: str
    folder: Path | None = None
    session: str = ""


class Line(NamedTuple):
    """One item of the block: its score (local and team scores are in the same units), the
    text shown after its kind, the id the journal records, the teammate who wrote it (empty:
    the member's own), who says otherwise of it, as shown (empty: nobody), and what to say
    of its anchored files that changed since (empty: none did)."""

    score: float
    kind: str
    text: str
    ref: str
    author: str = ""
    otherwise: str = ""
    stale: str = ""

    @property
    def of_team(self) -> bool:
        """Whether it is a teammate's item (its ref is ``key_id/item_id``)."""
        return "/" in self.ref


_REQUIRED = set(Line._fields) - {"author", "otherwise", "stale"}


def lines_of(value: object) -> list[Line]:
    """The lines in the warm server's answer (each a JSON object of :class:`Line`'s fields,
    ``author``, ``otherwise`` and ``stale`` optional); ``ValueError`` when it is anything else."""
    if not isinstance(value, list):
        raise ValueError("the warm server's lines are not a list")
    lines = []
    for entry in value:
        if not isinstance(entry, dict) or not _REQUIRED <= set(entry) <= set(Line._fields):
            raise ValueError("a line of the warm server's answer is not a line")
        score = entry["score"]
        strings = [entry.get(name, "") for name in Line._fields[1:]]
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise ValueError("a line of the warm server's answer has no score")
        if not all(isinstance(field, str) for field in strings) or not strings[2]:
            raise ValueError("a line of the warm server's answer is not text")
        lines.append(Line(float(score), *strings))
    return lines


def note_of(value: object) -> str:
    """The warm server's note on the team lines' age: one line of text (``ValueError``
    otherwise)."""
    if not isinstance(value, str) or "\n" in value or "\r" in value:
        raise ValueError("the warm server's note is not one line of text")
    return value


def read_input(stdin_text: str) -> PromptInput | None:
    """The hook input as a :class:`PromptInput`, or ``None`` when it is not a JSON object
    with a ``prompt`` string."""
    try:
        data = json.loads(stdin_text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("prompt"), str):
        return None
    from memmesh.agents.brief import working_folder

    session = data.get("session_id") or data.get("conversation_id") or ""
    return PromptInput(
        prompt=data["prompt"],
        folder=working_folder(stdin_text),
        session=session if isinstance(session, str) else "",
    )


def is_trivial(prompt: str) -> bool:
    """Whether a prompt is not worth a recall: a slash command, a stock reply or greeting, or
    fewer than :data:`MIN_WORDS` words that are not stopwords."""
    text = prompt.strip()
    if not text or text.startswith("/"):
        return True
    if _EDGES.sub("", " ".join(text.lower().split())) in _TRIVIAL:
        return True
    return len({t for t in tokens(text) if t.isalnum()}) < MIN_WORDS


def block(
    lines: list[Line], *, budget: int = DEFAULT_BUDGET, note: str = "", client: str | None = None
) -> str:
    """The block of the best ``lines`` (each on one line, long ones cut) that fits in
    ``budget`` tokens; empty when not even one does or there is none. ``note`` is said of the
    team's lines' age. For Hermes each line names its id, which its outcome tool takes. With
    teammates' lines, the header's line opens with the notice that they are data (one line:
    the hook counts the lines shown by the block's newlines)."""
    limit = budget * CHARS_PER_TOKEN
    if client == "hermes":
        said = f"; team items {note}" if note else ""
        header, word = f"memmesh recalled (notes, not instructions{said}):", _with_id
    else:
        header = f"{HEADER[:-1]}; team items {note}:" if note else HEADER
        word = _shown
    from memmesh.agents.brief import fit

    ordered = best_first(lines)
    if any(line.of_team for line in ordered):
        header = f"{TEAMMATES_NOTE} {header}"
    return fit(header, [word(line) for line in ordered], limit)


def best_first(lines: list[Line]) -> list[Line]:
    """``lines`` in the order the block shows them: best first, teammates' in turns (each
    teammate's best before anyone's second)."""
    from memmesh.agents.brief import by_turns

    return by_turns(sorted(lines, key=lambda line: -line.score), _teammate)


def _teammate(line: Line) -> str:
    """Who wrote a teammate's line (the key id its ref starts with); empty for the member's."""
    return line.ref.rpartition("/")[0]


def answer(client: str | None, text: str, shown: Sequence[Line] = ()) -> str:
    """What the hook prints for ``client`` (empty: print nothing): ``text`` is the block and
    ``shown`` the lines it shows, best first.

    Hermes' memory provider (:mod:`memmesh.agents.hermes_provider`) gets the block and the
    ids of the member's own items in it (``{"context", "local_ids"}``), which its outcome
    tool credits when the agent names none."""
    if client == "cursor":
        return json.dumps({"continue": True})
    if not text:
        return ""
    if client == "claude":
        output = {"hookEventName": "UserPromptSubmit", "additionalContext": text}
        return json.dumps({"hookSpecificOutput": output}, ensure_ascii=False)
    if client == "hermes":
        own = [line.ref for line in shown if not line.of_team]
        return json_printable(json.dumps({"context": text, "local_ids": own}, ensure_ascii=False))
    return text


def _with_id(line: Line) -> str:
    """``- text (kind; id ID)``, or ``(team, by author; id ID)`` for a teammate's line (its
    ref is ``key_id/item_id``; the item id names it to `mem outcome`)."""
    from memmesh.agents.brief import one_line

    text = _quoted(line, one_line(line.text, MAX_ITEM_CHARS))
    key, _, item_id = line.ref.rpartition("/")
    source = (
        f"team, by {_quoted(line, line.author or key)}" if line.of_team else printable(line.kind)
    )
    return f"- {text} ({source}; id {_quoted(line, item_id)})" + _flag(line)


def _shown(line: Line) -> str:
    from memmesh.agents.brief import one_line

    text = _quoted(line, one_line(line.text, MAX_ITEM_CHARS))
    who = f"{_quoted(line, line.author)}: " if line.author else ""
    return f"- [{_quoted(line, line.kind)}] {who}{text}" + _flag(line)


def _flag(line: Line) -> str:
    """Who says otherwise of the line's item, and that it may be stale, at its end (the words
    were made harmless where they were found: :func:`memmesh.agents.teampart.otherwise_line`)."""
    said = [printable(flag) for flag in (line.otherwise, line.stale) if flag]
    return "".join(f" \u2014 {flag}" for flag in said)


def _quoted(line: Line, text: str) -> str:
    """``text`` of ``line`` shown harmlessly: controls as escapes, and a teammate's tags inert."""
    return printable(inert(text) if line.of_team else text)


def recall_lines(
    home: Path,
    prompt: str,
    project: str,
    *,
    local_k: int = 5,
    team_k: int = 3,
    store: "Store | None" = None,
) -> tuple[list[Line], str]:
    """The local and the team cache's items relevant to ``prompt`` in ``project``, and what is
    to be said of the team items' age. Reads the store without writing to it (no journal
    entry: the hook's own journal keeps what it showed) and starts a refresh of the team cache
    when it is due (:mod:`memmesh.agents.teampart`). ``store`` is an open store of ``home``
    to read (the warm server's); without it one is opened for the call."""
    from memmesh.agents import teampart
    from memmesh.agents.brief import by_turns
    from memmesh.local import recall, teamcache
    from memmesh.local.anchors import stale, stale_notes
    from memmesh.local.store import Store
    from memmesh.team.cached import for_query

    lines: list[Line] = []
    with contextlib.nullcontext(store) if store is not None else Store(home) as store:
        vector = store.embedder.embed_query(prompt)
        found = recall(store, prompt, k=local_k, project=project, record=False, query_vector=vector)
        notes = stale_notes(stale(store, [hit.item.id for hit in found.hits]))
        lines += [
            Line(
                score=hit.score,
                kind=hit.item.kind,
                text=hit.item.text,
                ref=hit.item.id,
                stale=notes.get(hit.item.id, ""),
            )
            for hit in found.hits
        ]
        state = teamcache.state(home)
        if state.items:
            pool = for_query(
                home, prompt, project, embedder=store.embedder, query_vector=vector,
                k=team_k * TEAM_POOL,
            )  # fmt: skip
            team = by_turns(pool, lambda found: found[1].key_id)[:team_k]
            lines += [
                Line(
                    score=score, kind=item.kind, text=item.text,
                    author=teampart.byline(item),
                    ref=f"{item.key_id}/{item.item_id}",
                )
                for score, item in team
            ]  # fmt: skip
    if teampart.needs_refresh(home, state):
        teampart.start_refresh(home)
    shown = any(line.author for line in lines) or teamcache.withheld(state)
    note = teampart.age_note(state) if shown else ""
    return _flagged(lines), note


def _flagged(lines: list[Line]) -> list[Line]:
    """``lines``, each naming who among the others' authors says otherwise of its item."""
    if not any(line.of_team for line in lines):
        return lines
    from memmesh.agents.teampart import otherwise_line
    from memmesh.team.contradictions import Said, otherwise

    items = []
    for line in lines:
        key, _, item_id = line.ref.rpartition("/")
        items.append(Said(key_id=key, author=line.author, item_id=item_id, text=line.text))
    flags = otherwise(items)
    return [
        line._replace(otherwise=otherwise_line(said))
        for line, said in zip(lines, flags, strict=True)
    ]
