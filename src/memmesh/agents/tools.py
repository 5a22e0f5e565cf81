"""What a coding agent can do with memmesh, as plain methods returning compact results.

The MCP server (:mod:`memmesh.agents.server`) exposes these methods as tools; they take the
same paths as the `mem` command (the same store, the same policy and registry), so an agent
can do nothing a member could not do from the command line, and nothing more: in particular
:meth:`Tools.publish` has no way to force past the policy.

Results are dicts of plain values, short on purpose (an agent pays for every token: the
``brief_*`` views of :mod:`memmesh.views`, beside the fuller ones `mem --json` prints), and
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

import msgspec

from memmesh.agents.errors import ReadOnly
from memmesh.local import (
    InvalidInput,
    ItemNotFound,
    Recall,
    recall,
    replay,
    tallies,
)
from memmesh.local.anchors import stale, stale_notes
from memmesh.local.outcomes import Outcome
from memmesh.local.project import resolve_project
from memmesh.local.store import Store
from memmesh.policy import load_policy, redact
from memmesh.registry import load_identity
from memmesh.team.changes import forget, revise
from memmesh.team.member import Member, reported_action
from memmesh.text import TEAMMATES_NOTE
from memmesh.views import (
    brief_cached_hit,
    brief_outcome,
    brief_recall,
    brief_replay,
    brief_team_answer,
)

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

    def _stale(self, answer: Recall) -> dict[str, str]:
        """What to say of the hits whose anchored files changed since (memmesh.local.anchors)."""
        return stale_notes(stale(self.store, [hit.item.id for hit in answer.hits]))

    def _teammates(self, answer: Recall) -> dict[str, tuple[int, int, int]]:
        """What teammates reported of the recall's hits, for their track record."""
        return tallies.team_records(self.store, [hit.item.id for hit in answer.hits])

    def recall(
        self, query: str, *, k: int = 5, project: str | None = None, explain: bool = False
    ) -> dict[str, Any]:
        """The items most relevant to ``query`` in the project (plus global); with ``explain``,
        each hit's score parts (``why``), the gate, and the near misses with their reason."""
        scope = resolve_project(project)
        vector = self.store.embedder.embed_query(query)
        answer = recall(self.store, query, k=k, project=scope, explain=explain, query_vector=vector)
        self.last = tuple(hit.item.id for hit in answer.hits)
        result = brief_recall(answer, self._teammates(answer), self._stale(answer))
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
        team = [brief_cached_hit(score, item) for score, item in found]
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
            return brief_recall(answer, self._teammates(answer))
        again = replay(self.store, trace)
        return brief_replay(again, self._teammates(again.now))

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
            return brief_outcome(self.store.outcome(item_id, result))
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
        return brief_team_answer(answer)

    def _member(self, *, reconcile_first: bool = True) -> Member:
        """This member with the policy as it is now (an invalid one refuses, exit 3)."""
        identity, policy = load_identity(self.home), load_policy(self.home)
        return Member(self.store, identity, policy, reconcile_first=reconcile_first)

    def publish(
        self, item_ids: list[str], *, dry_run: bool = False, to: list[str] | None = None
    ) -> dict[str, Any]:
        """Share items with the team, exactly as `mem team publish` would without --force;
        ``to`` names whom for, as ``--to`` does (each item's ``audience``: ``None`` is the
        whole team)."""
        if not dry_run:
            self._writable("publish")
        planned, warning = self._member().publish(item_ids, dry_run=dry_run, to=to or None)
        result: dict[str, Any] = {
            "dry_run": dry_run,
            "items": [
                {
                    "id": p.item.id,
                    "action": reported_action(p, dry_run=dry_run),
                    "version": p.version,
                    "rule": p.decision.rule,
                    "audience": None if p.audience is None else msgspec.to_builtins(p.audience),
                }
                for p in planned
            ],
        }
        if warning:
            result["warning"] = warning
        return result
