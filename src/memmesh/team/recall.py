"""recall-team: ask the coordinator and every live peer at once, verify, merge and rank.

1. The query is embedded once, with this member's embedder.
2. Sources: the coordinator (search), and peers learned from the coordinator's presence list,
   from ``peers`` in team.yaml and from zeroconf (:mod:`memmesh.team._sources`). A peer URL is
   only a hint: the team token is sent to a peer only after its signed presence (fetched
   without the token) verifies, names that URL, is unexpired and, with a roster, belongs to a
   member.
3. All sources are asked concurrently, each with its own timeout, under one overall deadline
   (:mod:`memmesh.team._fanout`).
4. Every hit's envelope is verified; hits from keys outside the roster, from another team or
   with bad signatures are dropped and counted (:mod:`memmesh.team._checks`).
5. An item is its author's key and its id (:data:`memmesh.team._checks.ItemKey`): two
   authors' items with one id are two hits, and nobody's copy replaces or withdraws another
   key's item. A peer serves only its owner's items; the coordinator may serve anyone's.
6. A live author is the authority: a coordinator copy of an item whose author's peer answered
   is replaced by the peer's copy, or confirmed with the peer, and dropped if the author no
   longer publishes it.
7. Hits are deduplicated per author and item (highest version wins) and ranked by
   :func:`memmesh.team.rank.team_score`, one score comparable across sources.
"""

import os
import time
from collections import Counter
from collections.abc import Callable
from functools import partial

import msgspec

from memmesh.local.store import Store
from memmesh.net.errors import Unreachable
from memmesh.net.search import SearchRequest
from memmesh.policy.config import Policy
from memmesh.registry.envelopes import Publication
from memmesh.team._calls import (
    DEFAULT_TIMEOUT,
    Calls,
    ClientFactory,
    default_client,
    run_blocking,
)
from memmesh.team._checks import Candidate, ItemKey, PeerSeen, roster_of, verified_hit
from memmesh.team._fanout import Fanout, SourceReport
from memmesh.team._sources import DISCOVERY_SECONDS, Discovery, list_peers
from memmesh.team.rank import QueryTerms, merge, ranked

__all__ = [
    "DEFAULT_DEADLINE",
    "DEFAULT_TIMEOUT",
    "ClientFactory",
    "PeerSeen",
    "SourceReport",
    "TeamAnswer",
    "TeamHit",
    "list_peers",
    "recall_team",
]

DEFAULT_DEADLINE = 3.0
# Every source is asked for k times this many hits, so that merging still leaves k.
_POOL = 3


class TeamHit(msgspec.Struct, frozen=True, kw_only=True):
    """One verified, attributed answer.

    ``id`` and ``key_id`` (the author's member id, from the key that signed it) together name
    the item: two authors' items may share an ``id`` and are then two hits.
    """

    id: str
    text: str
    score: float
    author: str
    key_id: str
    source: str
    version: int
    kind: str
    project: str
    tags: tuple[str, ...]
    published_at: float


class TeamAnswer(msgspec.Struct, kw_only=True):
    """The merged answer with each source's outcome."""

    query: str
    hits: list[TeamHit]
    abstained: bool
    sources: list[SourceReport]
    dropped: dict[str, int]
    warnings: list[str]

    @property
    def answered(self) -> int:
        """How many sources answered."""
        return sum(1 for s in self.sources if s.status == "ok")


def recall_team(
    store: Store,
    policy: Policy,
    query: str,
    *,
    k: int = 5,
    project: str = "global",
    author: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    deadline: float = DEFAULT_DEADLINE,
    own_key: str | None = None,
    interfaces: list[str] | None = None,
    client_factory: ClientFactory | None = None,
) -> TeamAnswer:
    """Ask the whole team; see the module docstring.

    ``timeout`` bounds each connect and read of one source, ``deadline`` the whole call. It
    blocks, in an event loop of its own (on a thread of its own when the caller is itself
    inside a running loop).

    Raises :class:`Unreachable` (exit 4) only when no source answered.
    """
    end = time.monotonic() + deadline
    roster = roster_of(policy)
    dropped: Counter[str] = Counter()
    warnings: list[str] = []
    # A roster name is not what publications carry: filter by it here, on every hit.
    by_roster = author is not None and author in roster.values()
    request = SearchRequest(
        query=query,
        k=100 if by_roster else min(k * _POOL, 100),
        project=project,
        authors=[author] if author and not by_roster else [],
        vector=store.embedder.embed_query(query).tolist(),
        embedder=store.embedder.fingerprint,
    )
    token = os.environ.get(policy.token_env) or None
    calls = Calls(client_factory or default_client, token=token, timeout=timeout)
    discovery = Discovery(
        policy=policy, calls=calls, roster=roster, dropped=dropped, own_key=own_key,
        interfaces=interfaces or ["127.0.0.1"],
        # Zeroconf answers take about a second on loopback: listen for up to half the time.
        listen_seconds=min(DISCOVERY_SECONDS, deadline / 2),
    )  # fmt: skip
    fanout = Fanout(request, discovery, end=end)

    def merged() -> dict[ItemKey, Candidate]:
        return _merge_answers(fanout, policy, roster, dropped, warnings)

    try:
        candidates = run_blocking(partial(_gather, fanout, merged))
    finally:
        # Whatever still runs after the deadline is abandoned, never waited for: closing its
        # client under it ends it within the client's timeout.
        calls.close()
    hits = _hits(candidates, query, roster, author, store.embedder.min_cosine)[:k]
    return TeamAnswer(
        query=query,
        hits=hits,
        abstained=not hits,
        sources=fanout.reports,
        dropped=dict(dropped),
        warnings=warnings,
    )


async def _gather(
    fanout: Fanout, merged: Callable[[], dict[ItemKey, Candidate]]
) -> dict[ItemKey, Candidate]:
    """Ask everyone, merge what answered, then let live authors confirm the coordinator's copies."""
    await fanout.ask_everyone()
    if not any(r.status == "ok" for r in fanout.reports):
        if not fanout.reports:
            raise Unreachable("no team source is configured: set coordinator or peers in team.yaml")
        reasons = "; ".join(f"{r.name}: {r.error or r.status}" for r in fanout.reports)
        raise Unreachable(f"no team source answered ({reasons})")
    candidates = merged()
    await fanout.defer_to_live_authors(candidates)
    return candidates


def _merge_answers(
    fanout: Fanout,
    policy: Policy,
    roster: dict[str, str],
    dropped: Counter[str],
    warnings: list[str],
) -> dict[ItemKey, Candidate]:
    """Every answer's verified hits, one per author and item; a peer may only serve its own
    key's items (the key of its verified presence)."""
    fingerprint = fanout.request.embedder
    comparable = all(
        a.embedder == fingerprint and not a.lexical_only for a in fanout.answers.values()
    )
    if not comparable:
        warnings.append(
            "a source uses another embedder or could not use our query vector: "
            "ranking by words only"
        )
    candidates: dict[ItemKey, Candidate] = {}
    for name, answer in fanout.answers.items():
        key = name.removeprefix("peer:") if name.startswith("peer:") else None
        label = "coordinator" if key is None else f"peer {fanout.peer_reports[key].name}"
        for hit in answer.hits:
            candidate = verified_hit(
                hit, policy, roster, dropped, comparable=comparable, source=label,
                from_peer=key is not None,
            )  # fmt: skip
            if candidate is None:
                continue
            if key is not None and candidate.publication.key_id != key:
                dropped["peer_served_another_key"] += 1
                continue
            merge(candidates, candidate)
    return candidates


def _hits(
    candidates: dict[ItemKey, Candidate],
    query: str,
    roster: dict[str, str],
    author: str | None,
    min_cosine: float,
) -> list[TeamHit]:
    """The candidates by ``author`` (if given), ranked, attributed by roster name."""

    def shown(body: Publication) -> str:
        return roster.get(body.author_key, body.author)

    wanted = [
        candidate
        for candidate in candidates.values()
        if author is None
        or author
        in (
            shown(candidate.publication),
            candidate.publication.author,
            candidate.publication.key_id,
        )
    ]
    hits: list[TeamHit] = []
    for score, candidate in ranked(wanted, QueryTerms(query), min_cosine):
        body = candidate.publication
        hits.append(
            TeamHit(
                id=body.item_id,
                text=body.text,
                score=score,
                author=shown(body),
                key_id=body.key_id,
                source=candidate.source,
                version=body.version,
                kind=body.kind,
                project=body.project,
                tags=body.tags,
                published_at=body.published_at,
            )
        )
    return hits
