"""recall-team: ask the coordinator and every live peer at once, verify, merge and rank.

1. The query is embedded once, with this member's embedder.
2. Sources: the coordinator (search), and peers learned from the coordinator's presence list,
   from ``peers`` in team.yaml and from zeroconf (:mod:`memmesh.team._sources`). Every request
   is signed by the member for the daemon it is meant for; the team token goes to the
   coordinator only. A peer URL is only a hint: a peer is asked only once its signed presence
   (fetched with nothing signed) verifies, names that URL, is unexpired and belongs to an active
   member of the roster (the coordinator's, merged with team.yaml's ``members``; where the
   roster is signed, the chain its admins signed, verified: :mod:`memmesh.team.chain`); an
   https peer is pinned with the pin its presence gives. With no roster at all, no peer is
   asked.
3. All sources are asked concurrently, each with its own timeout, under one overall deadline
   (:mod:`memmesh.team._fanout`).
4. Every hit's envelope is verified; hits from keys outside the roster or revoked, from
   another team or with bad signatures are dropped and counted (:mod:`memmesh.team._checks`),
   and so are hits the verified roster says must not reach this member, whoever served them
   (:func:`memmesh.peer.audiences.unreadable`): their author may not publish them (a reader,
   or left out of the project's publish grant), or their audience does not admit this member.
5. An item is its author's key and its id (:data:`memmesh.team._checks.ItemKey`): two
   authors' items with one id are two hits, and nobody's copy replaces or withdraws another
   key's item. A peer serves only its owner's items; the coordinator may serve anyone's.
6. A live author is the authority: a coordinator copy of an item whose author's peer answered
   is replaced by the peer's copy, or confirmed with the peer, and dropped if the author no
   longer publishes it.
7. Hits are deduplicated per author and item (highest version wins) and ranked by
   :func:`memmesh.team.rank.team_score`, one score comparable across sources.
8. Different authors' items that state one fact are then one hit (corroboration,
   :mod:`memmesh.consolidate.corroborate`): the best ranked keeps its text, score and place, and
   lists the others in ``also``. ``k`` counts these hits: facts, not items.
9. An author is shown, and matched by ``author``, by the roster's name for their key (or their
   member id when the roster names none), never by the label inside the envelope; whom they
   published it for (:attr:`TeamHit.audience`) by the roster's names too.

Every source is asked about ``project`` plus global, or with ``all_projects`` about every
project it holds; the answer says which (``projects``, ``all_projects``). Its ``explanation``
says what each answering source returned and what became of each hit
(:mod:`memmesh.team._explain`). With ``record``, the answer is kept as the member's newest team
recall, for ``mem outcome --last`` (:mod:`memmesh.team.last`).
"""

import time
from collections import Counter
from collections.abc import Callable
from functools import partial

import msgspec

from memmesh.consolidate.corroborate import corroborating_groups
from memmesh.embed import Embedder
from memmesh.local import GLOBAL, MIN_RELEVANCE, MIN_SHARE_OF_BEST, recall
from memmesh.local.store import Store
from memmesh.net.errors import Revoked, Unreachable
from memmesh.net.search import MAX_K, SearchRequest
from memmesh.peer.audiences import unreadable
from memmesh.peer.trust import TrustedRoster
from memmesh.policy.config import Policy
from memmesh.registry.access import Access
from memmesh.registry.envelopes import Audience, Publication, PublishedAnchor
from memmesh.registry.identity import Identity
from memmesh.team._calls import (
    DEFAULT_TIMEOUT,
    Calls,
    ClientFactory,
    member_clients,
    run_blocking,
)
from memmesh.team._checks import Candidate, ItemKey, PeerSeen, verified_hit
from memmesh.team._explain import Fate, TeamExplanation, Trail
from memmesh.team._fanout import Fanout, SourceReport
from memmesh.team._sources import DISCOVERY_SECONDS, Discovery, list_peers
from memmesh.team.contradictions import Otherwise
from memmesh.team.errors import KeyRevoked
from memmesh.team.groups import names_of
from memmesh.team.last import note_last
from memmesh.team.rank import QueryTerms, answered, merge, ranked

__all__ = [
    "DEFAULT_DEADLINE",
    "DEFAULT_TIMEOUT",
    "Calls",
    "ClientFactory",
    "PeerSeen",
    "SourceReport",
    "TeamAnswer",
    "TeamExplanation",
    "TeamHit",
    "list_peers",
    "member_clients",
    "recall_team",
]

DEFAULT_DEADLINE = 3.0
# Every source is asked for k times this many hits, so that merging still leaves k.
_POOL = 3


class TeamHit(msgspec.Struct, frozen=True, kw_only=True):
    """One verified, attributed answer: one fact, with every author who published it.

    ``id`` and ``key_id`` (the author's member id, from the key that signed it) together name
    the item: two authors' items may share an ``id`` and are then two hits, unless they state
    the same fact. ``author`` is the roster's name for that key, or the member id when the
    roster names none. The fields are those of the best ranked item stating the fact;
    ``also`` holds the other authors' items stating it, best ranked first, each a hit with its
    own score (and no ``also`` of its own). ``contradicted_by`` holds the other hits by
    another author that contradict it, once the answer was flagged
    (:func:`memmesh.team.contradictions.flag_answer`). ``anchors`` are the files its author
    anchored it to, as the publication carries them (:mod:`memmesh.team.stale`).
    ``audience`` names whom its author published it for, groups by their names and members
    by the names output shows (a member the roster does not hold by their member id; an item
    for its author alone names its author); empty: the whole team.
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
    also: tuple["TeamHit", ...] = ()
    contradicted_by: tuple[Otherwise, ...] = ()
    anchors: tuple[PublishedAnchor, ...] = ()
    audience: tuple[str, ...] = ()

    @property
    def authors(self) -> list[tuple[str, str]]:
        """Every author of the fact, as (name, member id), this hit's own first."""
        return [(self.author, self.key_id), *((a.author, a.key_id) for a in self.also)]


class TeamAnswer(msgspec.Struct, kw_only=True):
    """The merged answer with each source's outcome, the projects asked about (``projects``,
    empty with ``all_projects``: every project the sources hold) and, in ``explanation``, what
    each answering source returned and what became of it."""

    query: str
    hits: list[TeamHit]
    abstained: bool
    sources: list[SourceReport]
    dropped: dict[str, int]
    warnings: list[str]
    projects: list[str] = msgspec.field(default_factory=list)
    all_projects: bool = False
    explanation: TeamExplanation | None = None

    @property
    def answered(self) -> int:
        """How many sources answered."""
        return sum(1 for s in self.sources if s.status == "ok")


def recall_team(
    store: Store,
    policy: Policy,
    query: str,
    *,
    identity: Identity,
    k: int = 5,
    project: str = "global",
    all_projects: bool = False,
    author: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    deadline: float = DEFAULT_DEADLINE,
    interfaces: list[str] | None = None,
    client_factory: ClientFactory | None = None,
    calls: Calls | None = None,
    record: bool = True,
) -> TeamAnswer:
    """Ask the whole team as ``identity`` (who signs every request, and whose own peer is
    never asked); see the module docstring.

    ``timeout`` bounds each connect and read of one source, ``deadline`` the whole call. It
    blocks, in an event loop of its own (on a thread of its own when the caller is itself
    inside a running loop). ``calls`` lets the caller keep clients and their connections across
    many asks (and close them); otherwise they are made for this one (with ``client_factory``,
    the product's own by default) and closed at its end. ``all_projects`` asks every project
    the sources hold, instead of ``project`` and global. ``record`` keeps the answer as the
    member's newest team recall (:func:`memmesh.team.last.note_last`).

    Raises :class:`~memmesh.local.errors.InvalidInput` (exit 2) for a query the local recall
    refuses (empty, or longer than it takes), before anything is sent;
    :class:`Unreachable` (exit 4) only when no source answered, :class:`KeyRevoked` (exit 3)
    when none did and the coordinator refused this member's key as revoked,
    :class:`~memmesh.team.errors.RosterNotTrusted` (exit 3) when the team's signed roster, as
    the coordinator serves it, does not verify (nothing is then believed of its members).
    """
    end = time.monotonic() + deadline
    dropped: Counter[str] = Counter()
    warnings: list[str] = []
    vector = store.embedder.embed_query(query)
    # The local recall's own checks, run over no items: a query `mem recall` refuses is refused
    # here in the same words (InvalidInput, exit 2), before anything is sent.
    recall(store, query, k=k, project=project, record=False, restrict=(), query_vector=vector)
    # Sources could only filter by the label publications carry: the author is matched here,
    # on every hit, by the roster's name or the member id.
    request = SearchRequest(
        query=query,
        k=MAX_K if author else min(k * _POOL, MAX_K),
        project=project,
        vector=vector.tolist(),
        embedder=store.embedder.fingerprint,
        all_projects=all_projects,
    )
    own_calls = calls is None
    if calls is None:
        make = client_factory or member_clients(policy, identity)
        calls = Calls(make, timeout=timeout)
    discovery = Discovery(
        policy=policy, calls=calls, dropped=dropped, own_key=identity.key_id,
        interfaces=interfaces or ["127.0.0.1"],
        # Zeroconf answers take about a second on loopback: listen for up to half the time.
        listen_seconds=min(DISCOVERY_SECONDS, deadline / 2), home=store.home,
        identity=identity, timeout=timeout,
    )  # fmt: skip
    fanout = Fanout(request, discovery, end=end)
    trail = Trail()

    def merged() -> dict[ItemKey, Candidate]:
        readable = partial(unreadable, discovery.access, identity.key_id)
        return _merge_answers(fanout, policy, discovery.roster, readable, dropped, warnings, trail)

    try:
        first, candidates = run_blocking(partial(_gather, fanout, merged))
    except Unreachable:
        if discovery.untrusted is not None:  # the coordinator answered, with a forged roster
            raise discovery.untrusted from None
        # No source answered: the coordinator refusing this member's key says why best.
        for report in fanout.reports:
            if report.kind == "coordinator" and report.code == Revoked.code:
                raise KeyRevoked(identity.key_id, policy.team, "") from None
        raise
    finally:
        # Whatever still runs after the deadline is abandoned, never waited for: closing its
        # client under it ends it within the client's timeout.
        if own_calls:
            calls.close()
    if discovery.untrusted is not None:
        raise discovery.untrusted
    roster = discovery.roster
    shown = _Shown(roster, discovery.access)
    hits = _hits(candidates, query, shown, author, store.embedder, k, trail)
    answered_by = [report.name for report in fanout.reports if report.status == "ok"]
    answer = TeamAnswer(
        query=query,
        hits=hits,
        abstained=not hits,
        sources=fanout.reports,
        dropped=dict(dropped),
        warnings=warnings,
        projects=[] if all_projects else list(dict.fromkeys([project, GLOBAL])),
        all_projects=all_projects,
        explanation=trail.explanation(
            answered_by, first, candidates, roster, k=k, min_relevance=MIN_RELEVANCE,
            min_share_of_best=MIN_SHARE_OF_BEST,
        ),
    )  # fmt: skip
    if record:
        note_last(store, answer, identity.key_id)
    return answer


async def _gather(
    fanout: Fanout, merged: Callable[[], dict[ItemKey, Candidate]]
) -> tuple[dict[ItemKey, Candidate], dict[ItemKey, Candidate]]:
    """Ask everyone, merge what answered, then let live authors confirm the coordinator's
    copies: the merged candidates, and those the live authors let stand."""
    await fanout.ask_everyone()
    if not any(r.status == "ok" for r in fanout.reports):
        if not fanout.reports:
            raise Unreachable("no team source is configured: set coordinator or peers in team.yaml")
        reasons = "; ".join(f"{r.name}: {r.error or r.status}" for r in fanout.reports)
        raise Unreachable(f"no team source answered ({reasons})")
    first = merged()
    candidates = dict(first)
    await fanout.defer_to_live_authors(candidates)
    return first, candidates


def _merge_answers(
    fanout: Fanout,
    policy: Policy,
    roster: TrustedRoster,
    readable: Callable[[Publication], str | None],
    dropped: Counter[str],
    warnings: list[str],
    trail: Trail,
) -> dict[ItemKey, Candidate]:
    """Every answer's verified hits, one per author and item; a peer may only serve its own
    key's items (the key of its verified presence), and no source what ``readable`` says must
    not reach this member (why, or ``None``). ``trail`` hears what became of each, but of a
    hit ``readable`` refused, which leaves no trace beyond its count."""
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
        source = "coordinator" if key is None else fanout.peer_reports[key].name
        label = "coordinator" if key is None else f"peer {source}"
        for hit in answer.hits:
            why: Counter[str] = Counter()
            candidate = verified_hit(
                hit, policy, roster, why, comparable=comparable, source=label,
                from_peer=key is not None,
            )  # fmt: skip
            if candidate is not None and key is not None and candidate.publication.key_id != key:
                candidate, why["peer_served_another_key"] = None, 1
            refusal = readable(candidate.publication) if candidate is not None else None
            if refusal is not None:
                candidate, why[refusal] = None, 1
            dropped.update(why)
            trail.checked(source, hit, candidate if candidate is not None else next(iter(why)))
            if candidate is not None:
                merge(candidates, candidate)
    return candidates


class _Shown:
    """How output names members: by the roster (``roster``), and the groups and members of an
    audience by the verified roster's display names (``access``)."""

    def __init__(self, roster: TrustedRoster, access: Access) -> None:
        self.roster = roster
        self._access = access

    def audience(self, audience: Audience | None, author: str) -> tuple[str, ...]:
        """The names of whom ``audience`` (of an item by the member ``author``) is for."""
        return names_of(self._access, audience, author) or ()


def _hits(
    candidates: dict[ItemKey, Candidate],
    query: str,
    shown: _Shown,
    author: str | None,
    embedder: Embedder,
    k: int,
    trail: Trail,
) -> list[TeamHit]:
    """The first ``k`` facts among the candidates by ``author`` (a roster name or a member id,
    if given), ranked, attributed by roster name, each with its corroborating items;
    ``trail`` hears the verdict on each candidate."""
    roster = shown.roster
    wanted = []
    for item, candidate in candidates.items():
        key_id = candidate.publication.key_id
        if author is None or author in (roster.name_of(key_id), key_id):
            wanted.append(candidate)
        else:
            trail.judged(item, "not_by_author", None, None)
    every = ranked(wanted, QueryTerms(query), embedder)
    scored = answered(every)
    relevant = {candidate.item_key for _, candidate in every}
    for candidate in wanted:
        if candidate.item_key not in relevant:
            trail.judged(candidate.item_key, "below_gate", None, None)
    cut: Fate = "far_below_best" if scored else "below_floor"
    for score, candidate in every[len(scored) :]:  # answered() keeps a prefix
        trail.judged(candidate.item_key, cut, score, None)
    groups = corroborating_groups(
        [candidate.publication.text for _, candidate in scored],
        [candidate.publication.key_id for _, candidate in scored],
        embedder,
        limit=k,
    )
    for place, (score, candidate) in enumerate(scored, start=1):  # beyond k, unless grouped
        trail.judged(candidate.item_key, "ranked_below_k", score, place)
    hits: list[TeamHit] = []
    for rank, (first, *rest) in enumerate(groups, start=1):
        for i in (first, *rest):
            trail.judged(scored[i][1].item_key, "returned" if i == first else "also",
                         scored[i][0], rank)  # fmt: skip
        also = tuple(_hit(*scored[i], shown) for i in rest)
        hits.append(_hit(*scored[first], shown, also))
    return hits


def _hit(
    score: float, candidate: Candidate, shown: _Shown, also: tuple[TeamHit, ...] = ()
) -> TeamHit:
    """The candidate as a hit, attributed by roster name."""
    body = candidate.publication
    roster = shown.roster
    return TeamHit(
        id=body.item_id,
        text=body.text,
        score=score,
        author=roster.name_of(body.key_id),
        key_id=body.key_id,
        source=candidate.source,
        version=body.version,
        kind=body.kind,
        project=body.project,
        tags=body.tags,
        published_at=body.published_at,
        also=also,
        anchors=body.anchors,
        audience=shown.audience(body.audience, body.key_id),
    )
