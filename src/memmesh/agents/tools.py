"""What a coding agent can do with memmesh, as plain methods returning compact results.

The MCP server (:mod:`memmesh.agents.server`) exposes these methods as tools; they take the
same paths as the `mem` command (the same store, the same policy and registry), so an agent
can do nothing a member could not do from the command line, and nothing more: in particular
:meth:`Tools.publish` has no way to force past the policy.

Results are dicts of plain values, short on purpose (an agent pays for every token), and
always carry item ids so that the agent can report an outcome afterwards; every hit carries
its track record in words (``has worked 3 times``; ``teammates: worked twice`` from
teammates' tallies) once one was reported. The items the last recall returned are kept, so
that :meth:`Tools.outcome` without an id credits them.

Teammates' items (the team cache's in :meth:`Tools.recall`, every hit of
:meth:`Tools.recall_team`) come with ``notice``, :data:`~memmesh.text.TEAMMATES_NOTE`, and their
words (text, names, kinds, projects, what a source said) with tag-shaped sequences made inert
(:func:`memmesh.text.inert`); the server escapes the controls (:mod:`memmesh.agents.server`).

A read-only :class:`Tools` (``mem mcp --read-only``, for sub-agents and scheduled runs) recalls
and explains but refuses every call that would change the store or the team's view of it.
"""

from pathlib import Path
from typing import Any, cast

from memmesh.agents.errors import ReadOnly
from memmesh.local import (
    InvalidInput,
    ItemNotFound,
    Parts,
    Recall,
    outcomes,
    recall,
    replay,
    tallies,
)
from memmesh.local.items import GLOBAL, Item
from memmesh.local.outcomes import Outcome
from memmesh.local.project import resolve_project
from memmesh.local.store import Store
from memmesh.policy import load_policy, redact
from memmesh.registry import load_identity
from memmesh.team.changes import forget, revise
from memmesh.team.member import Member, reported_action
from memmesh.text import TEAMMATES_NOTE, inert

__all__ = ["Tools"]


class Tools:
    """The agent's tools over the member's store in ``home`` (``store`` stays the caller's)."""

    def __init__(
        self, home: Path, store: Store, *, read_only: bool = False, team: bool = False
    ) -> None:
        self.home = home
        self.store = store
        self.read_only = read_only
        self.team = team  # recall adds the team cache's items (a coordinator is set)
        self.last: tuple[str, ...] = ()  # the ids the newest recall (or recall_team) returned

    def _writable(self, tool: str) -> None:
        if self.read_only:
            raise ReadOnly(tool)

    def recall(
        self, query: str, *, k: int = 5, project: str | None = None, explain: bool = False
    ) -> dict[str, Any]:
        """The items most relevant to ``query`` in the project (plus global); with ``explain``,
        each hit's score parts (``why``), the gate, and the near misses with their reason."""
        scope = resolve_project(project)
        vector = self.store.embedder.embed_query(query)
        answer = recall(self.store, query, k=k, project=scope, explain=explain, query_vector=vector)
        self.last = tuple(hit.item.id for hit in answer.hits)
        result = _recalled(answer, self.store)
        if self.team:
            result |= self._cached(query, scope, vector, k)
        return result

    def _cached(self, query: str, project: str, vector: Any, k: int) -> dict[str, Any]:
        """The team cache's items relevant to ``query`` (``team``, each with its author), and
        how old they are when the cache is stale (``team_note``); a refresh is started when
        one is due, as the session hooks do."""
        from memmesh.agents import teampart
        from memmesh.local import teamcache
        from memmesh.team.cached import for_query

        state = teamcache.state(self.home)
        if teampart.needs_refresh(self.home, state):
            teampart.start_refresh(self.home)
        if not state.items:
            return {}
        found = for_query(
            self.home, query, project, embedder=self.store.embedder, query_vector=vector, k=k
        )
        team = [
            {"id": item.item_id, "text": inert(item.text), "author": inert(item.author),
             "author_id": item.key_id, "kind": inert(item.kind), "project": inert(item.project),
             "score": round(score, 3), "source": "team cache"}
            for score, item in found
        ]  # fmt: skip
        if not team:
            return {"team": team}
        note = teampart.age_note(state)
        return {"notice": TEAMMATES_NOTE, "team": team} | ({"team_note": note} if note else {})

    def why(
        self,
        query: str | None = None,
        *,
        trace: str | None = None,
        k: int = 5,
        project: str | None = None,
    ) -> dict[str, Any]:
        """Explain a recall of ``query`` without recording it, or run the past recall
        ``trace`` again and say what became of each item it returned (``then``)."""
        if (query is None) == (trace is None):
            raise InvalidInput("give a query, or the trace id of a past recall, not both")
        if trace is None:
            assert query is not None
            answer = recall(
                self.store, query, k=k, project=resolve_project(project), record=False,
                explain=True,
            )  # fmt: skip
            return _recalled(answer, self.store)
        again = replay(self.store, trace)
        then = [
            {"id": then.item_id, "rank": then.rank, "fate": then.fate,
             **({"now_rank": then.now_rank} if then.now_rank else {}),
             **({"reason": then.left_out.reason} if then.left_out else {})}
            for then in again.then
        ]  # fmt: skip
        return {
            "trace": again.trace.id,
            "query": again.trace.query,
            "then": then,
            "now": _recalled(again.now, self.store),
        }

    def revise(self, item_id: str, text: str) -> dict[str, Any]:
        """Replace the item's text: a new item supersedes it (kept as history). A secret is
        stored redacted, as by :meth:`remember`; a published old item is retracted."""
        self._writable("revise")
        clean = redact(text, [])
        revised = revise(self.home, self.store, item_id, clean.text)
        answer: dict[str, Any] = {"id": revised.new.id, "superseded": revised.old.id}
        warnings = [w for w in (revised.warning, revised.unshared) if w]
        if clean.detectors:
            answer["redacted"] = list(clean.detectors)
            warnings.append("the text held a secret, stored as [redacted: <kind>]")
        if warnings:
            answer["warning"] = "; ".join(warnings)
        return answer

    def remember(
        self,
        text: str,
        *,
        kind: str = "fact",
        project: str | None = None,
        tags: list[str] | None = None,
    ) -> dict[str, Any]:
        """Store ``text``; the same fact again reinforces the existing item.

        A detected secret is always stored redacted (``[redacted: github-token]``), and a tag
        holding one dropped: an agent cannot keep one as written, as ``mem remember
        --keep-secret`` can. The answer names what was redacted.
        """
        self._writable("remember")
        clean = redact(text, tags or [])
        item, status = self.store.remember(
            clean.text, kind=kind, project=resolve_project(project), tags=list(clean.tags)
        )
        answer: dict[str, Any] = {
            "id": item.id,
            "status": status,
            "project": item.project,
            "reinforcements": item.reinforcements,
        }
        if clean.detectors:
            answer["redacted"] = list(clean.detectors)
            answer["warning"] = (
                "the text held a secret, stored as [redacted: <kind>]; do not put secrets in memory"
            )
        return answer

    def outcome(self, item_id: str | None, result: str) -> dict[str, Any]:
        """Record whether following the item worked, failed or partly worked; without an id,
        for each item the last recall returned. A teammate's item `recall_team` gave is
        credited as a tally: its counts (never text) reach the author at the next sync."""
        self._writable("outcome")
        if item_id is not None:
            return self._one_outcome(item_id, result)
        if not self.last:
            raise InvalidInput(
                "no recall has returned anything yet in this session; give the item's id"
            )
        return {"credited": [self._one_outcome(each, result) for each in self.last]}

    def _one_outcome(self, item_id: str, result: str) -> dict[str, Any]:
        """One item's outcome: the member's own item's, or a teammate's as a tally."""
        try:
            return _credited(self.store.outcome(item_id, result))
        except ItemNotFound:
            return self._teammate_outcome(item_id, result)

    def _teammate_outcome(self, item_id: str, result: str) -> dict[str, Any]:
        from memmesh.team.tallies import credit_teammate

        credited = credit_teammate(self.home, self.store, item_id, cast(Outcome, result))
        given = credited.item
        answer: dict[str, Any] = {
            "id": given.item_id, "author": given.author, "teammate": True,
            "sent": credited.sent,
            "tally": {"worked": given.worked, "failed": given.failed, "partial": given.partial},
        }  # fmt: skip
        if credited.warning:
            answer["warning"] = credited.warning
        return answer

    def forget(self, item_id: str) -> dict[str, Any]:
        """Archive the item; if it was published, its publication is retracted too."""
        self._writable("forget")
        forgotten = forget(self.home, self.store, item_id)
        item = forgotten.item
        answer = {"id": item.id, "status": item.status, "retracted": item.id in forgotten.retracted}
        if forgotten.warning:
            answer["warning"] = forgotten.warning
        return answer

    def recall_team(
        self,
        query: str,
        *,
        k: int = 5,
        project: str | None = None,
        author: str | None = None,
        timeout: float = 2.0,
    ) -> dict[str, Any]:
        """Ask the whole team (coordinator and live peers); raises when no source answered.

        A hit is one fact: when other members published it too, ``also`` names each of them
        and their item's id (their words are not repeated). Teammates' words come under
        ``notice``, with tag-shaped sequences made inert.
        """
        answer = self._member(reconcile_first=False).ask_team(
            query, k=k, project=resolve_project(project), author=author, timeout=timeout
        )
        self.last = tuple(hit.id for hit in answer.hits)  # the newest recall, team or not
        hits: list[dict[str, Any]] = []
        for hit in answer.hits:
            shown: dict[str, Any] = {
                "id": hit.id,
                "text": inert(hit.text),
                "author": inert(hit.author),
                "author_id": hit.key_id,
                "kind": inert(hit.kind),
                "project": inert(hit.project),
                "score": round(hit.score, 3),
                "source": hit.source,
            }
            if hit.also:
                shown["also"] = [
                    {"id": also.id, "author": inert(also.author), "author_id": also.key_id}
                    for also in hit.also
                ]
            hits.append(shown)
        return {
            "notice": TEAMMATES_NOTE,
            "hits": hits,
            "abstained": answer.abstained,
            "sources": {
                inert(source.name): inert(f"{source.status}: {source.error}")
                if source.error
                else source.status
                for source in answer.sources
            },
            "warnings": [inert(warning) for warning in answer.warnings],
        }

    def _member(self, *, reconcile_first: bool = True) -> Member:
        """This member with the policy as it is now (an invalid one refuses, exit 3)."""
        identity, policy = load_identity(self.home), load_policy(self.home)
        return Member(self.store, identity, policy, reconcile_first=reconcile_first)

    def publish(self, item_ids: list[str], *, dry_run: bool = False) -> dict[str, Any]:
        """Share items with the team, exactly as `mem team publish` would without --force."""
        if not dry_run:
            self._writable("publish")
        planned, warning = self._member().publish(item_ids, dry_run=dry_run)
        result: dict[str, Any] = {
            "dry_run": dry_run,
            "items": [
                {
                    "id": p.item.id,
                    "action": reported_action(p, dry_run=dry_run),
                    "version": p.version,
                    "rule": p.decision.rule,
                }
                for p in planned
            ],
        }
        if warning:
            result["warning"] = warning
        return result


def _recalled(answer: Recall, store: Store) -> dict[str, Any]:
    """A recall's answer, short; with its explanation (``why`` per hit, the gate, the near
    misses) when it was explained."""
    records = tallies.team_records(store, [h.item.id for h in answer.hits])
    result: dict[str, Any] = {
        "hits": [
            _hit(h.item, h.score, records.get(h.item.id))
            | ({"why": _parts(h.parts)} if h.parts else {})
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
            {"id": miss.item.id, "text": miss.item.text, "project": miss.item.project,
             "reason": miss.reason, **({"rank": miss.rank} if miss.rank else {}),
             "why": _parts(miss.parts)}
            for miss in gate.left_out
        ]  # fmt: skip
    return result


def _parts(parts: Parts) -> dict[str, Any]:
    """A score's parts, short: an agent pays for every token."""
    return {
        "cosine": round(parts.cosine, 3),
        "lexical": round(parts.lexical, 3),
        "exact": list(parts.exact_tokens),
        "words": f"{parts.covered}/{parts.words}",
        "record_factor": round(parts.factor, 3),
        "score": round(parts.score, 3),
    }


def _hit(item: Item, score: float, teammates: tuple[int, int, int] | None = None) -> dict[str, Any]:
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
    return hit


def _credited(item: Item) -> dict[str, Any]:
    return {
        "id": item.id,
        "outcome_score": round(item.outcome_score, 3),
        "excluded_from_recall": item.outcome_score <= outcomes.EXCLUDE_AT,
    }
