"""The JSON views of memmesh's objects: pure functions from a struct to a JSON-ready dict, the
one place every front end takes its shapes from (`mem ... --json`, the agent's tools, the page
`mem ui` serves). They print nothing, read no file and ask nothing of a store: what a view needs
beyond its struct (teammates' tallies, the time) is given to it.

Two families:

* The full shapes are the ``--json`` output of `mem` (docs/cli.md), a documented, stable
  interface scripts rely on: times in ISO 8601 UTC, scores rounded to 4 places. The member's
  own items and recalls (:func:`item_json`, :func:`parts_json`, :func:`hit_json`,
  :func:`recall_json`, :func:`replay_json`); the team's answers, peers and feed
  (:func:`team_answer_json`, :func:`team_hit_json`, :func:`team_explanation_json`,
  :func:`peer_json`, :func:`feed_entry_json`); what a coordinator keeps
  (:func:`held_item_json`, :func:`key_holdings_json`).
* The brief shapes (``brief_*``) are what the agent's tools answer (:mod:`memmesh.agents.tools`),
  with fewer fields on purpose: an agent pays for every token. A hit names its project only
  when it is not ``global`` and says its track record in words (``has worked 3 times;
  teammates: failed once``) rather than in counts; scores are rounded to 3 places; a
  teammate's words (text, names, kinds, projects, what a source said) are made inert
  (:func:`memmesh.text.inert`), and a team hit names its author's member id ``author_id``.
"""

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from memmesh.local import outcomes
from memmesh.local.items import GLOBAL, iso
from memmesh.text import TEAMMATES_NOTE, inert

if TYPE_CHECKING:
    from memmesh.coordinator.holdings import HeldItem, KeyHoldings
    from memmesh.local import Hit, Parts, Recall, Replay
    from memmesh.local.anchors import Staleness
    from memmesh.local.items import Item
    from memmesh.local.teamcache import CachedItem
    from memmesh.team.feed import FeedEntry
    from memmesh.team.recall import PeerSeen, TeamAnswer, TeamExplanation, TeamHit

__all__ = [
    "brief_cached_hit",
    "brief_hit",
    "brief_outcome",
    "brief_parts",
    "brief_recall",
    "brief_replay",
    "brief_team_answer",
    "brief_team_hit",
    "feed_entry_json",
    "held_item_json",
    "hit_json",
    "item_json",
    "key_holdings_json",
    "parts_json",
    "peer_json",
    "recall_json",
    "replay_json",
    "stale_json",
    "team_answer_json",
    "team_explanation_json",
    "team_hit_json",
]


# The member's own items and recalls: `mem show`, `list`, `recall`, `why`.


def item_json(item: "Item") -> dict[str, Any]:
    """An item whole, as `mem show --json` prints it: every field, times in ISO 8601 UTC, the
    track record rounded to 4 places (:meth:`~memmesh.local.items.Item.to_dict`)."""
    return item.to_dict()


def parts_json(parts: "Parts", item: "Item") -> dict[str, Any]:
    """Every part of a hit's score, with the track record of ``item`` that gave its factor (the
    ``parts`` of `mem recall --explain --json`)."""
    return parts.to_dict(item)


def hit_json(hit: "Hit", stale: "Sequence[Staleness]" = ()) -> dict[str, Any]:
    """A recall hit: its item's id, text and fields, its score and the cosine and lexical parts
    of it; all of its ``parts`` when the recall was explained; ``stale``, its anchored files
    that changed enough since (memmesh.local.anchors: ``path``, ``changed``, ``gone``,
    ``anchored_at``), empty when none or not looked at."""
    item = hit.item
    data: dict[str, Any] = {
        "id": item.id,
        "text": item.text,
        "score": round(hit.score, 4),
        "kind": item.kind,
        "project": item.project,
        "tags": list(item.tags),
        "author": item.author,
        "cosine": round(hit.cosine, 4),
        "lexical": round(hit.lexical, 4),
        "outcome_score": round(item.outcome_score, 4),
        "reinforcements": item.reinforcements,
        "stale": [stale_json(found) for found in stale],
    }
    if hit.parts:
        data["parts"] = parts_json(hit.parts, item)
    return data


def stale_json(found: "Staleness") -> dict[str, Any]:
    """An anchored file that changed since its item was written, as a hit shows it."""
    changed, at = round(found.changed, 3), iso(found.anchored_at)
    return {"path": found.path, "changed": changed, "gone": found.gone, "anchored_at": at}


def recall_json(
    answer: "Recall", stale: "Mapping[str, Sequence[Staleness]] | None" = None
) -> dict[str, Any]:
    """A recall, as `mem recall --json` prints it: the hits, whether it abstained, the projects
    it searched, how long it took and the ``trace`` it is kept under (when recorded); an
    explained one adds its ``explanation`` (the gate, the weights, the near misses)."""
    data: dict[str, Any] = {
        "query": answer.query,
        "hits": [hit_json(hit, (stale or {}).get(hit.item.id, ())) for hit in answer.hits],
        "abstained": answer.abstained,
        "projects": list(answer.projects),
        "latency_ms": round(answer.latency_ms, 3),
    }
    if answer.trace is not None:
        data["trace"] = answer.trace
    if answer.explanation is not None:
        data["explanation"] = answer.explanation.to_dict()
    return data


def replay_json(again: "Replay") -> dict[str, Any]:
    """A past recall run again, as `mem why --trace ID --json` prints it: the ``trace``, what
    became of each item it returned (``then``), and the recall as it runs ``now``."""
    trace = again.trace
    return {
        "trace": {
            "id": trace.id,
            "at": iso(trace.at),
            "query": trace.query,
            "project": trace.project,
            "mode": trace.mode,
            "k": trace.k,
            "item_ids": list(trace.item_ids),
        },
        "then": [
            {
                "id": then.item_id,
                "rank": then.rank,
                "fate": then.fate,
                "now_rank": then.now_rank,
                "changed": then.changed,
                "status": then.item.status if then.item else None,
                **({"left_out": then.left_out.to_dict()} if then.left_out else {}),
            }
            for then in again.then
        ],
        "now": recall_json(again.now),
    }


# The team's: `mem team recall-team`, `peers`, `feed`, `status --check`; `mem coordinator items`.


def team_answer_json(
    answer: "TeamAnswer",
    stale: "Mapping[tuple[str, str], Sequence[Staleness]] | None" = None,
) -> dict[str, Any]:
    """A recall-team answer, as `mem team recall-team --json` prints it (its ``scope`` and
    ``explanation`` aside): a hit is one fact, with its ``authors`` (name and member id, the
    hit's own first), the other authors' items stating it in ``also`` and ``stale`` (as for
    :func:`hit_json`, in the asker's checkout: :mod:`memmesh.team.stale`); every source with
    its outcome; what was dropped, by reason; the warnings."""
    return {
        "query": answer.query,
        "hits": [
            {
                **team_hit_json(hit),
                "authors": [{"name": name, "key_id": key} for name, key in hit.authors],
                "stale": [stale_json(f) for f in (stale or {}).get((hit.key_id, hit.id), ())],
            }
            for hit in answer.hits
        ],
        "abstained": answer.abstained,
        "sources": [msgspec.to_builtins(source) for source in answer.sources],
        "dropped": answer.dropped,
        "warnings": answer.warnings,
    }


def team_hit_json(hit: "TeamHit") -> dict[str, Any]:
    """A team hit: its score rounded as every score shown is, its time in ISO 8601 UTC, and the
    items in ``also`` alike; ``contradicted_by`` lists the other hits by another author that
    contradict it (author, key_id, item_id, text, reason; empty when none)."""
    data: dict[str, Any] = msgspec.to_builtins(hit)
    data["score"] = round(hit.score, 4)
    data["published_at"] = iso(hit.published_at)
    data["also"] = [team_hit_json(other) for other in hit.also]
    return data


def team_explanation_json(explanation: "TeamExplanation") -> dict[str, Any]:
    """The ``explanation`` of `mem team recall-team --explain --json`: per answering source,
    each hit it returned and its fate, scores rounded as every score shown is."""
    data: dict[str, Any] = msgspec.to_builtins(explanation)
    for source in data["sources"]:
        for each in source["returned"]:
            for field in ("source_score", "cosine", "score"):
                if each[field] is not None:
                    each[field] = round(each[field], 4)
    return data


def peer_json(
    peer: "PeerSeen", silent: dict[str, str] | None, *, now: float | None = None
) -> dict[str, Any]:
    """A teammate's peer daemon, as `mem team peers --json` lists it: its presence, when it
    expires and how many seconds ago (at ``now``, else the time) it was last seen.

    ``silent`` is, for peers that were asked, why each that does not answer does not (by
    member id); ``None`` when none was asked, and then ``answers`` is ``None`` and ``problem``
    empty."""
    from memmesh.team.check import last_seen

    row: dict[str, Any] = msgspec.to_builtins(peer)
    row["expires_at"] = iso(peer.expires_at)
    row["last_seen_s"] = round(last_seen(peer, now))
    row["answers"] = None if silent is None else peer.key_id not in silent
    row["problem"] = "" if silent is None else silent.get(peer.key_id, "")
    return row


def feed_entry_json(entry: "FeedEntry") -> dict[str, Any]:
    """A change in the team's feed, as `mem team feed --json` lists it: ``at`` in ISO 8601 UTC."""
    return {**msgspec.to_builtins(entry), "at": iso(entry.at)}


def held_item_json(item: "HeldItem") -> dict[str, Any]:
    """An item a coordinator keeps, as `mem coordinator items --key K --json` lists it: times
    in ISO 8601 UTC, ``published_at`` ``None`` when its author's time is not known."""
    data: dict[str, Any] = msgspec.to_builtins(item)
    data["published_at"] = None if item.published_at is None else iso(item.published_at)
    data["stored_at"] = iso(item.stored_at)
    return data


def key_holdings_json(share: "KeyHoldings") -> dict[str, Any]:
    """What a coordinator keeps for one member key, as `mem coordinator items --json` lists it:
    the key, its member id and name, its items and their bytes of text."""
    data: dict[str, Any] = msgspec.to_builtins(share)
    return data


# The agent's tools' brief shapes.


# Teammates' tallies of an item: (worked, failed, partial), as memmesh.local.tallies sums them.
Tally = tuple[int, int, int]


def brief_hit(
    item: "Item", score: float, teammates: Tally | None = None, stale: str = ""
) -> dict[str, Any]:
    """The member's own item as a hit: id, text, kind, score, the project unless global,
    ``record``, its track record and ``teammates``' tally in words, once one was reported, and
    ``stale``, ``may be stale: PATH changed since DATE``, when an anchored file changed."""
    hit: dict[str, Any] = {
        "id": item.id,
        "text": item.text,
        "kind": item.kind,
        "score": round(score, 3),
    }
    if item.project != GLOBAL:
        hit["project"] = item.project
    said = (
        outcomes.spoken(item.worked, item.failed, item.partial),
        outcomes.teammates_spoken(*teammates) if teammates else None,
    )
    if any(said):
        hit["record"] = "; ".join(part for part in said if part)
    if stale:
        hit["stale"] = stale
    return hit


def brief_parts(parts: "Parts") -> dict[str, Any]:
    """A score's parts, short (``why``): the cosine, the lexical part, the exact tokens shared,
    the query's words covered (``3/4``), the track record's factor and the score."""
    return {
        "cosine": round(parts.cosine, 3),
        "lexical": round(parts.lexical, 3),
        "exact": list(parts.exact_tokens),
        "words": f"{parts.covered}/{parts.words}",
        "record_factor": round(parts.factor, 3),
        "score": round(parts.score, 3),
    }


def brief_recall(
    answer: "Recall", teammates: Mapping[str, Tally], stale: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A recall's answer, short; with its explanation (``why`` per hit, the ``gate``, the near
    misses in ``left_out``) when it was explained. ``teammates`` holds the tallies teammates
    reported for the hits, by item id (:func:`memmesh.local.tallies.team_records`); ``stale``
    what to say of the hits whose anchored files changed, by item id."""
    result: dict[str, Any] = {
        "hits": [
            brief_hit(h.item, h.score, teammates.get(h.item.id), (stale or {}).get(h.item.id, ""))
            | ({"why": brief_parts(h.parts)} if h.parts else {})
            for h in answer.hits
        ],
        "abstained": answer.abstained,
        "projects": list(answer.projects),
    }
    if answer.trace is not None:
        result["trace"] = answer.trace
    if answer.explanation is not None:
        gate = answer.explanation
        result["gate"] = {
            "min_closeness": gate.min_closeness,
            "min_coverage": gate.min_coverage,
            "min_relevance": gate.min_relevance,
        }
        result["left_out"] = [
            {
                "id": miss.item.id,
                "text": miss.item.text,
                "project": miss.item.project,
                "reason": miss.reason,
                **({"rank": miss.rank} if miss.rank else {}),
                "why": brief_parts(miss.parts),
            }
            for miss in gate.left_out
        ]
    return result


def brief_replay(again: "Replay", teammates: Mapping[str, Tally]) -> dict[str, Any]:
    """A past recall run again, short: the trace's id and query, what became of each item it
    returned (``then``: its rank, its fate, its rank now or why it is left out), and the recall
    as it runs ``now`` (:func:`brief_recall`, with ``teammates`` for its hits)."""
    then = [
        {
            "id": then.item_id,
            "rank": then.rank,
            "fate": then.fate,
            **({"now_rank": then.now_rank} if then.now_rank else {}),
            **({"reason": then.left_out.reason} if then.left_out else {}),
        }
        for then in again.then
    ]
    return {
        "trace": again.trace.id,
        "query": again.trace.query,
        "then": then,
        "now": brief_recall(again.now, teammates),
    }


def brief_outcome(item: "Item") -> dict[str, Any]:
    """The member's item once an outcome was recorded: its outcome score, and whether recall
    now leaves it out for its record (``excluded_from_recall``)."""
    return {
        "id": item.id,
        "outcome_score": round(item.outcome_score, 3),
        "excluded_from_recall": item.outcome_score <= outcomes.EXCLUDE_AT,
    }


def brief_team_hit(hit: "TeamHit") -> dict[str, Any]:
    """A teammate's hit from recall-team: its author's words made inert; when other members
    stated the fact too, ``also`` names each of them and their item's id (their words are not
    repeated); when another author's hit in the answer contradicts it, ``contradicted_by``
    names each, their item's id and what the two disagree on (``reason``; their item is a hit
    of the same answer)."""
    shown = _teammates(
        hit.id, hit.text, hit.author, hit.key_id, hit.kind, hit.project, hit.score, hit.source
    )
    if hit.also:
        shown["also"] = [
            {"id": also.id, "author": inert(also.author), "author_id": also.key_id}
            for also in hit.also
        ]
    if hit.contradicted_by:
        shown["contradicted_by"] = [
            {
                "id": other.item_id,
                "author": inert(other.author),
                "author_id": other.key_id,
                "reason": inert(other.reason),
            }
            for other in hit.contradicted_by
        ]
    return shown


def brief_cached_hit(score: float, item: "CachedItem") -> dict[str, Any]:
    """A teammate's item from the team cache, scored for a query: read as a recall-team hit
    (:func:`brief_team_hit`) whose source is ``team cache``."""
    return _teammates(
        item.item_id,
        item.text,
        item.author,
        item.key_id,
        item.kind,
        item.project,
        score,
        "team cache",
    )


def brief_team_answer(answer: "TeamAnswer") -> dict[str, Any]:
    """A recall-team answer, short, under ``notice`` (:data:`~memmesh.text.TEAMMATES_NOTE`):
    the hits (:func:`brief_team_hit`), whether it abstained, each source's outcome in a few
    words (``timeout: ...``), and the warnings."""
    return {
        "notice": TEAMMATES_NOTE,
        "hits": [brief_team_hit(hit) for hit in answer.hits],
        "abstained": answer.abstained,
        "sources": {
            inert(source.name): inert(f"{source.status}: {source.error}")
            if source.error
            else source.status
            for source in answer.sources
        },
        "warnings": [inert(warning) for warning in answer.warnings],
    }


def _teammates(
    item_id: str,
    text: str,
    author: str,
    key_id: str,
    kind: str,
    project: str,
    score: float,
    source: str,
) -> dict[str, Any]:
    """A teammate's item as an agent reads it: every word of theirs made inert."""
    return {
        "id": item_id,
        "text": inert(text),
        "author": inert(author),
        "author_id": key_id,
        "kind": inert(kind),
        "project": inert(project),
        "score": round(score, 3),
        "source": source,
    }
