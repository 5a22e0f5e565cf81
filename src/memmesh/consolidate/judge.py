"""A model the member chooses, asked about the pairs the word rules let pass.

The rules (:mod:`memmesh.consolidate.conflicts`) decide from words and are built for precision:
"kept for 30 days" and "deleted after 30 days" read as saying one thing, "Vault" and "AWS
Secrets Manager" as one place. With ``MEM_JUDGE_COMMAND`` set (a program and its arguments,
as ``MEM_EXTRACT_COMMAND`` is), `mem consolidate` gives it the near pairs the rules called
duplicates or compatible, nearest first, at most :data:`MAX_JUDGED` of them, as one JSON
object on its standard input::

    {"pairs": [{"id": "p1", "cosine": 0.83,
                "a": {"id", "text", "kind", "project", "author"}, "b": {...}}]}

and reads its verdicts, a JSON list, on its standard output::

    [{"id": "p1", "relation": "contradicts" | "duplicate" | "compatible", "reason": "..."}]

Its verdict on a pair replaces the rules' (a merge it calls compatible is not proposed); a
pair it says nothing of stays as the rules left it. The rules' contradictions are not asked.
Past :data:`JUDGE_TIMEOUT_S`, or on an answer of another shape, the report says what went
wrong and keeps the rules' verdicts alone.
Nothing leaves the laptop unless the member's command sends it somewhere: memmesh runs it,
and that is all.
"""

import os
from collections.abc import Sequence
from typing import Any

from memmesh._json_command import run_json
from memmesh.consolidate.conflicts import Relation, Verdict
from memmesh.local import Item
from memmesh.local.neighbors import NearPair

__all__ = ["JUDGE_TIMEOUT_S", "MAX_JUDGED", "VARIABLE", "judged"]

VARIABLE = "MEM_JUDGE_COMMAND"
JUDGE_TIMEOUT_S = 120.0
MAX_JUDGED = 200
_RELATIONS: tuple[Relation, ...] = ("contradicts", "duplicate", "compatible")
_REASON_CHARS = 300


def judged(pairs: Sequence[NearPair]) -> tuple[dict[int, Verdict], str | None]:
    """The verdicts of ``MEM_JUDGE_COMMAND`` on ``pairs`` (by their place in it; at most
    :data:`MAX_JUDGED`, the first), and what went wrong, if anything; nothing when the
    variable is not set."""
    command = os.environ.get(VARIABLE, "").strip()
    if not command or not pairs:
        return {}, None
    asked = list(pairs[:MAX_JUDGED])
    data = {
        "pairs": [
            {"id": f"p{n}", "cosine": round(p.cosine, 4), "a": _item(p.a), "b": _item(p.b)}
            for n, p in enumerate(asked)
        ]
    }
    try:
        return _verdicts(run_json(command, data, JUDGE_TIMEOUT_S), len(asked)), None
    except ValueError as exc:
        return {}, f"the judge command ({VARIABLE}) {exc}; the word rules' verdicts stand"


def _item(item: Item) -> dict[str, str]:
    return {
        "id": item.id,
        "text": item.text,
        "kind": item.kind,
        "project": item.project,
        "author": item.author,
    }


def _verdicts(answer: Any, count: int) -> dict[int, Verdict]:
    """The judge's answer read strictly; :class:`ValueError` says what is wrong with it."""
    if not isinstance(answer, list):
        raise ValueError("did not print a JSON list")
    out: dict[int, Verdict] = {}
    for entry in answer:
        place = _place(entry.get("id") if isinstance(entry, dict) else None, count)
        relation = entry.get("relation") if isinstance(entry, dict) else None
        reason = entry.get("reason", "") if isinstance(entry, dict) else None
        if place is None or relation not in _RELATIONS or not isinstance(reason, str):
            raise ValueError('printed an entry without a known "id" and "relation"')
        shown = " ".join(reason.split())[:_REASON_CHARS] or f"the judge says: {relation}"
        out[place] = Verdict(relation, "", ("", ""), shown)
    return out


def _place(given: object, count: int) -> int | None:
    if not isinstance(given, str) or not given.startswith("p") or not given[1:].isdigit():
        return None
    place = int(given[1:])
    return place if place < count else None
