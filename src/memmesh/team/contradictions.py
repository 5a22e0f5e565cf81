"""Teammates who say otherwise: items by different authors that contradict each other.

A team's answer may hold ada's "we use Redis locks for the job queue" beside bob's "we use
Postgres advisory locks for the job queue". Both stay where their rank puts them: nothing is
dropped or moved, each is marked with the other (``bob says otherwise: ...``), so that whoever
reads the answer knows the team does not agree on it.

Whether two texts contradict is decided by words alone, by consolidation's rules
(:mod:`memmesh.consolidate.conflicts`: numbers, versions, yes and no, "use X" against "use Y"
on one subject), which are built for precision: two notes left side by side cost less than
an answer shown as contested when it is not.

Only items by different authors are compared: one member's contradictions with themselves are
their own consolidation's business. Items that corroboration merged into one hit state one
fact, and are never compared with each other.
"""

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import msgspec

from memmesh.consolidate.conflicts import Statement, classify_statements
from memmesh.local import GLOBAL
from memmesh.team._overlap import candidate, candidates, reading

if TYPE_CHECKING:
    from memmesh.team.recall import TeamAnswer, TeamHit

__all__ = [
    "Otherwise",
    "Said",
    "contradicting",
    "flag_answer",
    "otherwise",
]


class Otherwise(msgspec.Struct, frozen=True, kw_only=True):
    """An item by another author that contradicts one: its author's name and member id, its
    id and text, and ``reason``, what the two disagree on (``webhook timeout: 30 seconds
    against 60 seconds``, the value of the item it is about first)."""

    author: str
    key_id: str
    item_id: str
    text: str
    reason: str


class Said(msgspec.Struct, frozen=True, kw_only=True):
    """An item as comparing sees it: its author's member id (``key_id``; empty for the
    member's own in a hook's view) and name, its id, text and project."""

    key_id: str
    author: str
    item_id: str
    text: str
    project: str = ""


Together = Callable[[Said, Said], bool]


def _always(a: Said, b: Said) -> bool:
    return True


def otherwise(items: Sequence[Said], *, together: Together = _always) -> list[list[Otherwise]]:
    """For each of ``items``, the items by other authors among them that contradict it, in
    their order, among the pairs ``together`` lets be compared (an answer's few items: every
    pair the words let through is compared, :func:`memmesh.team._overlap.candidate`)."""
    flags: list[list[Otherwise]] = [[] for _ in items]
    read_as = [reading(item.text) for item in items]
    read = _reader(items)
    for i, a in enumerate(items):
        for j in range(i + 1, len(items)):
            b = items[j]
            if a.key_id == b.key_id or not together(a, b):
                continue
            if not candidate(read_as[i], read_as[j]):
                continue
            verdict = classify_statements(read(i), read(j))
            if verdict.relation == "contradicts":
                flags[i].append(_otherwise(b, verdict.subject, verdict.values))
                flags[j].append(_otherwise(a, verdict.subject, verdict.values[::-1]))
    return flags


def contradicting(own: Sequence[Said], theirs: Sequence[Said]) -> list[list[Otherwise]]:
    """For each of ``own``, the items of ``theirs`` by another author that contradict it and
    that one recall could show with it: of one project, or one of them global.

    Only the pairs whose words could make a contradiction are compared
    (:func:`memmesh.team._overlap.candidates`), and each text is read by the rules only once
    it is in such a pair."""
    flags: list[list[Otherwise]] = [[] for _ in own]
    pairs = candidates([reading(s.text) for s in own], [reading(s.text) for s in theirs])
    read_own, read_theirs = _reader(own), _reader(theirs)
    for i, j in pairs:
        a, b = own[i], theirs[j]
        if a.key_id == b.key_id or not (a.project == b.project or GLOBAL in (a.project, b.project)):
            continue
        verdict = classify_statements(read_own(i), read_theirs(j))
        if verdict.relation == "contradicts":
            flags[i].append(_otherwise(b, verdict.subject, verdict.values))
    return flags


def flag_answer(answer: "TeamAnswer") -> "TeamAnswer":
    """``answer`` with each hit's ``contradicted_by``: the other hits by another author that
    contradict it. A hit and the items in its ``also`` state one fact: two hits one author
    stated both of are not compared. The hits keep their order and scores."""
    authors = {(hit.key_id, hit.id): {key for _, key in hit.authors} for hit in answer.hits}

    def apart(a: Said, b: Said) -> bool:
        return not authors[a.key_id, a.item_id] & authors[b.key_id, b.item_id]

    said = [_said(hit) for hit in answer.hits]
    flags = otherwise(said, together=apart)
    hits = [
        msgspec.structs.replace(hit, contradicted_by=tuple(found))
        for hit, found in zip(answer.hits, flags, strict=True)
    ]
    return msgspec.structs.replace(answer, hits=hits)


def _said(hit: "TeamHit") -> Said:
    return Said(
        key_id=hit.key_id, author=hit.author, item_id=hit.id, text=hit.text, project=hit.project
    )


def _otherwise(other: Said, subject: str, values: tuple[str, str]) -> Otherwise:
    """``other`` as the item that says otherwise: ``values`` are the first item's, then
    ``other``'s."""
    reason = f"{values[0]} against {values[1]}"
    return Otherwise(
        author=other.author,
        key_id=other.key_id,
        item_id=other.item_id,
        text=other.text,
        reason=f"{subject}: {reason}" if subject else reason,
    )


def _reader(items: Sequence[Said]) -> Callable[[int], Statement]:
    """Each item read once, when it is first compared."""
    read: dict[int, Statement] = {}

    def statement(n: int) -> Statement:
        if n not in read:
            read[n] = Statement(items[n].text)
        return read[n]

    return statement
