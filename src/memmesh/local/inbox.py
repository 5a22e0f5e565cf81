"""The inbox: candidate memories waiting for the member's review, never items on their own.

A candidate (proposed from a notes file, :mod:`memmesh.agents.notes`) has an id like an
item's (a ULID, shown and found by prefix as items are: :mod:`memmesh.local.ids`), its text,
a proposed kind and project (``""``: the default project when it is accepted), where it came
from (file, line, session, and the heading it sat under), the files it speaks of (``about``:
anchors taken when it was proposed, :mod:`memmesh.local.anchors`) and a status: pending until
the member accepts it (it becomes an ordinary private item through the store's novelty gate,
with those anchors, and the candidate keeps that item's id) or rejects it.

Its text is redacted before it is stored: every function here that stores text takes the
redactor (:func:`memmesh.policy.redact_text`, which this layer cannot import) as a required
argument. The same text for the same project is proposed once: a second time finds the
pending one, or the decision taken on it. At most :data:`MAX_PENDING` candidates wait
(:class:`InboxFull` beyond), and the newest :data:`MAX_DECIDED` decided ones are kept.
"""

import contextlib
import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import msgspec

from memmesh.local import _lookup, anchors
from memmesh.local._db import Transaction, connection_of
from memmesh.local._lookup import duplicate_of, first_words, id_range
from memmesh.local._rows import content_hash
from memmesh.local.anchors import Anchor
from memmesh.local.errors import (
    AmbiguousId,
    CandidateNotFound,
    InboxFull,
    NotPending,
)
from memmesh.local.ids import new_id
from memmesh.local.items import Item, check_kind, check_name, check_text, iso

if TYPE_CHECKING:
    from memmesh.local.store import Remembered, Store

__all__ = [
    "MAX_DECIDED",
    "MAX_PENDING",
    "Added",
    "Candidate",
    "Planned",
    "Proposal",
    "Proposed",
    "Redactor",
    "accept",
    "edit",
    "find",
    "pending",
    "plan",
    "propose",
    "reject",
    "short_ids",
]

MAX_PENDING = 10_000
MAX_DECIDED = 10_000
_CANDIDATES = 10  # the most an ambiguous prefix lists
_COLUMNS = (
    "id, text, kind, project, source_path, source_line, session_id, context, created_at, "
    "status, item_id, decided_at, about"
)

Redactor = Callable[[str], tuple[str, tuple[str, ...]]]
"""Text with its secrets replaced, and the detectors that fired (``policy.redact_text``)."""
Added = Literal["proposed", "already pending", "accepted before", "rejected before"]


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """One candidate memory in the inbox."""

    id: str
    text: str
    kind: str
    project: str  # "" until accepted: the default project then
    source_path: str
    source_line: int | None
    session_id: str
    context: str  # the heading path it sat under: "Deploys > Staging"
    created_at: float
    status: str  # pending, accepted or rejected
    item_id: str | None  # the item it became, once accepted
    decided_at: float | None
    about: tuple[Anchor, ...] = ()  # the anchors its item gets, taken when it was proposed

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` shape: ISO 8601 times, and the files it is about as paths alone
        (``PATH`` or ``PATH:N-M``: the repository's folder never leaves the store)."""
        data = msgspec.structs.asdict(self)
        data["created_at"] = iso(self.created_at)
        data["decided_at"] = None if self.decided_at is None else iso(self.decided_at)
        data["about"] = [anchor.shown for anchor in self.about]
        return data


class Proposal(NamedTuple):
    """What a reader of notes proposes: text (not yet redacted), kind, project, source, and
    the anchors its item will get (``about``)."""

    text: str
    kind: str
    project: str = ""
    source_path: str = ""
    source_line: int | None = None
    session_id: str = ""
    context: str = ""
    about: tuple[Anchor, ...] = ()


class Proposed(NamedTuple):
    """What became of one proposal: the new candidate or the one it repeats, and the
    detectors whose secrets were redacted from its text."""

    added: Added
    candidate: Candidate
    redacted: tuple[str, ...]


class Planned(NamedTuple):
    """What accepting a pending candidate would do: create an item of ``project``, or
    reinforce ``item``, or the one an earlier candidate of the same plan (``repeats``) makes."""

    candidate: Candidate
    project: str
    item: Item | None
    repeats: Candidate | None = None


def _candidate(row: Sequence[Any]) -> Candidate:
    return Candidate(
        id=row[0], text=row[1], kind=row[2], project=row[3], source_path=row[4],
        source_line=row[5], session_id=row[6], context=row[7], created_at=row[8],
        status=row[9], item_id=row[10], decided_at=row[11], about=_about_of(row[12]),
    )  # fmt: skip


def _about_json(about: Iterable[Anchor]) -> str:
    """``about`` as the inbox keeps it: a JSON list of each anchor's fields, hashes in hex."""
    return json.dumps(
        [{**msgspec.structs.asdict(a), "line_hashes": a.line_hashes.hex()} for a in about]
    )


def _about_of(stored: str) -> tuple[Anchor, ...]:
    """The anchors :func:`_about_json` kept."""
    return tuple(
        Anchor(**{**fields, "line_hashes": bytes.fromhex(fields["line_hashes"])})
        for fields in json.loads(stored)
    )


def _project(project: str) -> str:
    return project if project == "" else check_name(project, "project")


def propose(store: "Store", proposals: Iterable[Proposal], *, redact: Redactor) -> list[Proposed]:
    """Put each proposal in the inbox, its text redacted by ``redact``, unless the same text
    for the same project is pending (``already pending``) or was decided on (``accepted
    before``, ``rejected before``): all of them or, with :class:`InboxFull` or
    :class:`InvalidInput` (an empty text, a bad kind or project), none."""
    checked: list[tuple[Proposal, str, tuple[str, ...]]] = []
    for proposal in proposals:
        clean, detectors = redact(proposal.text)
        checked.append((proposal, check_text(clean), detectors))
        check_kind(proposal.kind)
        _project(proposal.project)
    now = store.clock()
    out: list[Proposed] = []
    with store.transaction() as tx:
        conn = connection_of(tx, write=True)
        for proposal, clean, detectors in checked:
            digest = content_hash(clean)
            known = _known(conn, digest, proposal.project)
            if known is not None:
                added: Added = "already pending" if known.status == "pending" else (
                    "accepted before" if known.status == "accepted" else "rejected before"
                )  # fmt: skip
                out.append(Proposed(added, known, detectors))
                continue
            row = conn.execute(
                f"INSERT INTO inbox (id, text, kind, project, source_path, source_line, "
                f"session_id, context, created_at, content_hash, about) "
                f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING {_COLUMNS}",
                (
                    new_id(now), clean, proposal.kind, proposal.project, proposal.source_path,
                    proposal.source_line, proposal.session_id, proposal.context, now, digest,
                    _about_json(proposal.about),
                ),
            ).fetchone()  # fmt: skip
            out.append(Proposed("proposed", _candidate(row), detectors))
        new = sum(1 for p in out if p.added == "proposed")
        (count,) = conn.execute("SELECT count(*) FROM inbox WHERE status = 'pending'").fetchone()
        if new and count > MAX_PENDING:
            raise InboxFull(MAX_PENDING, new)  # rolls the whole batch back
    return out


def _known(conn: sqlite3.Connection, digest: str, project: str) -> Candidate | None:
    """The candidate saying this for this project: the pending one, else the newest decided."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM inbox WHERE content_hash = ? AND project = ? "
        "ORDER BY status = 'pending' DESC, seq DESC LIMIT 1",
        (digest, project),
    ).fetchone()
    return None if row is None else _candidate(row)


def pending(store: "Store", limit: int | None = None) -> list[Candidate]:
    """The pending candidates, newest first (at most ``limit``)."""
    with store.read() as tx:
        rows = (
            connection_of(tx)
            .execute(
                f"SELECT {_COLUMNS} FROM inbox WHERE status = 'pending' ORDER BY seq DESC LIMIT ?",
                (-1 if limit is None else limit,),
            )
            .fetchall()
        )
    return [_candidate(row) for row in rows]


def find(store: "Store", candidate_id: str) -> Candidate:
    """The candidate with this id or unique prefix (case ignored, at least 4 characters).

    Raises :class:`InvalidInput` for a shorter prefix, :class:`CandidateNotFound` for none,
    and :class:`AmbiguousId`, naming the first ten, for several.
    """
    bounds = id_range(candidate_id)
    if bounds is None:
        raise CandidateNotFound(candidate_id)
    with store.read() as tx:
        conn = connection_of(tx)
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM inbox WHERE id >= ? AND id <= ? ORDER BY id LIMIT ?",
            (*bounds, _CANDIDATES),
        ).fetchall()
        if len(rows) > 1:
            (count,) = conn.execute(
                "SELECT count(*) FROM inbox WHERE id >= ? AND id <= ?", bounds
            ).fetchone()
    if not rows:
        raise CandidateNotFound(candidate_id)
    found = [_candidate(row) for row in rows]
    if len(found) == 1:
        return found[0]
    shown = short_ids(store, [c.id for c in found])
    named = tuple(_named(c, shown[c.id]) for c in found)
    raise AmbiguousId(candidate_id, count, named, what="inbox candidates")


def _named(candidate: Candidate, shown: str) -> str:
    """One candidate an ambiguous prefix names: ``01J9ZC4XQM fact "its first words…"``."""
    status = "" if candidate.status == "pending" else f" ({candidate.status})"
    return f'{shown} {candidate.kind} "{first_words(candidate.text)}"{status}'


def short_ids(store: "Store", candidate_ids: list[str]) -> dict[str, str]:
    """The id shown for each of ``candidate_ids`` the inbox holds: its first 10 characters,
    or more when another candidate shares them."""
    with store.read() as tx:
        return _lookup.short_ids(connection_of(tx), candidate_ids, "inbox")


def _pending_one(store: "Store", candidate_id: str) -> Candidate:
    candidate = find(store, candidate_id)
    if candidate.status != "pending":
        raise NotPending(candidate.id, candidate.status, candidate.item_id)
    return candidate


def edit(
    store: "Store", candidate_id: str, text: str, *, redact: Redactor
) -> tuple[Candidate, tuple[str, ...]]:
    """Replace a pending candidate's text with ``text``, redacted by ``redact``; returns the
    candidate and the detectors that fired."""
    candidate = _pending_one(store, candidate_id)
    clean, detectors = redact(text)
    clean = check_text(clean)
    with store.transaction() as tx:
        row = (
            connection_of(tx, write=True)
            .execute(
                f"UPDATE inbox SET text = ?, content_hash = ? WHERE id = ? AND status = 'pending' "
                f"RETURNING {_COLUMNS}",
                (clean, content_hash(clean), candidate.id),
            )
            .fetchone()
        )
    if row is None:  # decided by another process in between
        return edit(store, candidate_id, text, redact=redact)
    return _candidate(row), detectors


def reject(store: "Store", candidate_id: str) -> Candidate:
    """Mark a pending candidate rejected: it is never proposed again."""
    return _decide(store, _pending_one(store, candidate_id), "rejected", None)


def accept(
    store: "Store", candidate_id: str, *, kind: str | None = None, project: str
) -> tuple[Candidate, Item, "Remembered"]:
    """Remember a pending candidate's text as an ordinary private item of ``project`` (its
    ``kind``, else the proposed one), through the novelty gate: a fact the store knows is
    reinforced. The item gets the candidate's anchors, as they were taken when it was
    proposed. The candidate is marked accepted with the item's id."""
    candidate = _pending_one(store, candidate_id)
    # One transaction: a kill, or another process deciding first, leaves no item (nor its
    # anchors) behind for a candidate still pending, so a retry remembers it once.
    with store.transaction() as tx:
        item, remembered = store.remember(
            candidate.text, kind=kind or candidate.kind, project=check_name(project, "project"),
            tx=tx,
        )  # fmt: skip
        anchors.save(tx, item.id, candidate.about)
        return _decide(store, candidate, "accepted", item.id, tx), item, remembered


def _decide(
    store: "Store",
    candidate: Candidate,
    status: str,
    item_id: str | None,
    within: Transaction | None = None,
) -> Candidate:
    now = store.clock()
    with contextlib.nullcontext(within) if within is not None else store.transaction() as tx:
        conn = connection_of(tx, write=True)
        row = conn.execute(
            f"UPDATE inbox SET status = ?, item_id = ?, decided_at = ? "
            f"WHERE id = ? AND status = 'pending' RETURNING {_COLUMNS}",
            (status, item_id, now, candidate.id),
        ).fetchone()
        conn.execute(
            "DELETE FROM inbox WHERE seq IN (SELECT seq FROM inbox WHERE status != 'pending' "
            "ORDER BY decided_at DESC, seq DESC LIMIT -1 OFFSET ?)",
            (MAX_DECIDED,),
        )
    if row is None:
        current = find(store, candidate.id)
        raise NotPending(current.id, current.status, current.item_id)
    return _candidate(row)


def plan(
    store: "Store", candidates: Sequence[Candidate], project_of: Callable[[Candidate], str]
) -> list[Planned]:
    """What accepting each of ``candidates`` in order, each in ``project_of(candidate)``,
    would do; nothing is changed."""
    out: list[Planned] = []
    creating: dict[tuple[str, str], Candidate] = {}
    if not candidates:
        return out
    vectors = store.embedder.embed([c.text for c in candidates])
    with store.read() as tx:
        conn = connection_of(tx)
        store.index.load_vectors(conn)
        for candidate, vector in zip(candidates, vectors, strict=True):
            project = check_name(project_of(candidate), "project")
            key = (content_hash(candidate.text), project)
            if key in creating:
                out.append(Planned(candidate, project, None, creating[key]))
                continue
            seq = duplicate_of(
                conn, store.index, candidate.text, vector, project,
                author=store.author, cosine=store.embedder.duplicate_cosine,
            )  # fmt: skip
            if seq is None:
                creating[key] = candidate
                out.append(Planned(candidate, project, None))
                continue
            (item_id,) = conn.execute("SELECT id FROM items WHERE seq = ?", (seq,)).fetchone()
            out.append(Planned(candidate, project, store.get(item_id, tx)))
    return out
