"""recall-team: ask the coordinator and every live peer at once, verify, merge and rank.

1. The query is embedded once, with this member's embedder.
2. Sources: the coordinator (search), and peers learned from the coordinator's presence list,
   from ``peers`` in team.yaml and from zeroconf. A peer URL is only a hint: the team token is
   sent to a peer only after its signed presence (fetched without the token) verifies, names
   that URL, is unexpired and, with a roster, belongs to a member.
3. All sources are asked concurrently, each with its own timeout, under one overall deadline.
4. Every hit's envelope is verified; hits from keys outside the roster, from another team or
   with bad signatures are dropped and counted.
5. A live author is the authority: a coordinator copy of an item whose author's peer answered
   is replaced by the peer's copy, or confirmed with the peer, and dropped if the author no
   longer publishes it.
6. Hits are deduplicated by item id (highest version wins) and ranked by
   :func:`memmesh.team.rank.team_score`, one score comparable across sources.
"""

import concurrent.futures
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from functools import partial
from typing import Literal, TypeVar

import msgspec

from memmesh.coordinator.protocol import PresenceList
from memmesh.errors import MemmeshError
from memmesh.local.store import Store
from memmesh.net.client import Client
from memmesh.net.errors import Unreachable
from memmesh.net.search import SearchHit, SearchRequest, SearchResponse
from memmesh.net.wire import MAX_BATCH
from memmesh.peer.discovery import browse
from memmesh.peer.protocol import ConfirmRequest, ConfirmResponse, PeerPresence
from memmesh.policy.config import Policy
from memmesh.registry.envelopes import Envelope, Presence, Publication, open_envelope
from memmesh.registry.errors import BadSignature
from memmesh.team.rank import QueryTerms, team_score

__all__ = [
    "DEFAULT_DEADLINE",
    "DEFAULT_TIMEOUT",
    "PeerSeen",
    "SourceReport",
    "TeamAnswer",
    "TeamHit",
    "list_peers",
    "recall_team",
]

DEFAULT_TIMEOUT = 2.0
DEFAULT_DEADLINE = 3.0
DISCOVERY_SECONDS = 2.0
_POOL = 3

T = TypeVar("T")
ClientFactory = Callable[[str, str | None, float], Client]
Status = Literal["ok", "failed", "timeout", "skipped"]


class SourceReport(msgspec.Struct, kw_only=True):
    """What one source did for this query."""

    name: str
    kind: Literal["coordinator", "peer"]
    url: str
    status: Status = "skipped"
    error: str = ""
    hits: int = 0
    latency_ms: float = 0.0
    lexical_only: bool = False
    learned_from: str = ""


class TeamHit(msgspec.Struct, frozen=True, kw_only=True):
    """One verified, attributed answer."""

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


class _Candidate(msgspec.Struct, kw_only=True):
    publication: Publication
    envelope: Envelope
    cosine: float | None
    source: str
    from_peer: bool


class _Peer(msgspec.Struct, frozen=True, kw_only=True):
    url: str
    name: str
    key_id: str
    learned_from: str


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

    Raises :class:`Unreachable` (exit 4) only when no source answered.
    """
    fanout = _Fanout(
        store,
        policy,
        query,
        k=k,
        project=project,
        author=author,
        timeout=timeout,
        deadline=deadline,
        own_key=own_key,
        interfaces=interfaces or ["127.0.0.1"],
        make=client_factory or _default_client,
    )
    return fanout.run()


def _default_client(url: str, token: str | None, timeout: float) -> Client:
    return Client(url, token=token, timeout=timeout)


class _Fanout:
    """One recall-team run: its sources, their outcomes and the merge."""

    def __init__(
        self,
        store: Store,
        policy: Policy,
        query: str,
        *,
        k: int,
        project: str,
        author: str | None,
        timeout: float,
        deadline: float,
        own_key: str | None,
        interfaces: list[str],
        make: ClientFactory,
    ) -> None:
        self.store = store
        self.policy = policy
        self.query = query
        self.k = k
        self.timeout = timeout
        self.deadline = deadline
        self.end = time.monotonic() + deadline
        self.own_key = own_key
        self.interfaces = interfaces
        self.make = make
        self.token = os.environ.get(policy.token_env) or None
        self.fingerprint = store.embedder.fingerprint
        self.roster = _roster(policy)
        self.author = author
        # A roster name is not what publications carry: filter by it here, on every hit.
        by_roster = author is not None and author in self.roster.values()
        self.request = SearchRequest(
            query=query,
            k=100 if by_roster else min(k * _POOL, 100),
            project=project,
            authors=[author] if author and not by_roster else [],
            vector=store.embedder.embed_query(query).tolist(),
            embedder=self.fingerprint,
        )
        self.dropped: Counter[str] = Counter()
        self.warnings: list[str] = []
        self.reports: list[SourceReport] = []
        self.answers: dict[str, SearchResponse] = {}
        self.peers: dict[str, _Peer] = {}
        self.peer_reports: dict[str, SourceReport] = {}
        self.known_urls: set[str] = set()
        self.jobs: dict[Future[_Outcome], Callable[[_Outcome], None]] = {}
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=16)
        self.clients: dict[tuple[str, bool], Client] = {}
        self.clients_lock = threading.Lock()

    def run(self) -> TeamAnswer:
        try:
            self._ask_everyone()
            if not any(r.status == "ok" for r in self.reports):
                if not self.reports:
                    raise Unreachable(
                        "no team source is configured: set coordinator or peers in team.yaml"
                    )
                reasons = "; ".join(f"{r.name}: {r.error or r.status}" for r in self.reports)
                raise Unreachable(f"no team source answered ({reasons})")
            candidates = self._merge_answers()
            self._defer_to_live_authors(candidates)
        finally:
            # Abandon whatever is still running after the deadline; never wait for it. Its
            # client is closed under it, which ends it promptly.
            self.pool.shutdown(wait=False, cancel_futures=True)
            with self.clients_lock:
                for client in self.clients.values():
                    client.close()
        hits = self._rank(candidates)
        return TeamAnswer(
            query=self.query,
            hits=hits,
            abstained=not hits,
            sources=self.reports,
            dropped=dict(self.dropped),
            warnings=self.warnings,
        )

    # -- asking ----------------------------------------------------------------------------

    def _ask_everyone(self) -> None:
        """Every source at once: the coordinator's search, its presence list, static peers and
        zeroconf; each peer is asked the moment its presence verifies, without waiting for the
        others (the coordinator's search included)."""
        coordinator = self.policy.coordinator
        if coordinator:
            report = SourceReport(name="coordinator", kind="coordinator", url=coordinator)
            self.reports.append(report)
            search = partial(self._post, coordinator, "/v1/search", self.request, SearchResponse)
            self._start(search, partial(self._answered, report, "coordinator"))
            listing = partial(self._get, coordinator, "/v1/presence/list", PresenceList, True)
            self._start(listing, self._listed)
        hints: dict[str, str] = dict.fromkeys(self.policy.peers, "team.yaml")
        if self.policy.discovery:
            # Zeroconf answers take about a second on loopback: listen for up to half the time.
            listen = partial(browse, self.interfaces, min(DISCOVERY_SECONDS, self.deadline / 2))
            self._start(listen, self._heard)
        self._check_hints(hints)
        while self.jobs:
            remaining = self.end - time.monotonic()
            if remaining <= 0:
                break
            done, _ = concurrent.futures.wait(
                list(self.jobs), timeout=remaining, return_when=concurrent.futures.FIRST_COMPLETED
            )
            for future in done:
                self.jobs.pop(future)(future.result())
        for report in self.reports:
            if report.status == "skipped":
                report.status, report.error = "timeout", "no answer before the deadline"

    def _start(self, job: Callable[[], object], then: Callable[["_Outcome"], None]) -> None:
        self.jobs[self._submit(job)] = then

    def _listed(self, outcome: "_Outcome") -> None:
        if isinstance(outcome.value, PresenceList):
            for envelope in outcome.value.members:
                self._add_peer(
                    _verified_presence(envelope, self.policy, self.roster, self.dropped, "presence")
                )

    def _heard(self, outcome: "_Outcome") -> None:
        if isinstance(outcome.value, list):
            self._check_hints({hint.url: "zeroconf" for hint in outcome.value})

    def _check_hints(self, hints: dict[str, str]) -> None:
        """A hinted URL gets the token only once its own signed presence checks out."""
        for url, source in hints.items():
            if url.rstrip("/") in self.known_urls:
                continue
            self.known_urls.add(url.rstrip("/"))
            fetch = partial(self._get, url, "/v1/presence", PeerPresence, False)
            self._start(fetch, partial(self._hint_checked, url, source))

    def _hint_checked(self, url: str, source: str, outcome: "_Outcome") -> None:
        if not isinstance(outcome.value, PeerPresence):
            if source == "team.yaml":
                # A peer the member listed is a source that failed, not a silent absence.
                self.reports.append(
                    SourceReport(
                        name=url, kind="peer", url=url, status="failed",
                        error=outcome.error or "no verifiable presence",
                        latency_ms=round(outcome.latency_ms, 2), learned_from=source,
                    )
                )  # fmt: skip
            return
        peer = _verified_presence(
            outcome.value.envelope, self.policy, self.roster, self.dropped, source
        )
        if peer is not None and peer.url.rstrip("/") != url.rstrip("/"):
            self.dropped["presence_url_mismatch"] += 1
            return
        self._add_peer(peer)

    def _add_peer(self, peer: "_Peer | None") -> None:
        """Ask a verified peer at once (once per peer, never ourselves)."""
        if peer is None or peer.key_id == self.own_key or peer.url in self.peers:
            return
        if peer.key_id in self.peer_reports:
            return
        self.peers[peer.url] = peer
        self.known_urls.add(peer.url.rstrip("/"))
        report = SourceReport(
            name=peer.name, kind="peer", url=peer.url, learned_from=peer.learned_from
        )
        self.reports.append(report)
        self.peer_reports[peer.key_id] = report
        ask = partial(self._post, peer.url, "/v1/recall", self.request, SearchResponse)
        self._start(ask, partial(self._answered, report, f"peer:{peer.key_id}"))

    def _answered(self, report: SourceReport, name: str, outcome: "_Outcome") -> None:
        """Record a source's answer (or why there is none)."""
        report.latency_ms = round(outcome.latency_ms, 2)
        if outcome.error:
            report.status = "timeout" if outcome.timed_out else "failed"
            report.error = outcome.error
            return
        report.status = "ok"
        if isinstance(outcome.value, SearchResponse):
            self.answers[name] = outcome.value
            report.hits = len(outcome.value.hits)
            report.lexical_only = outcome.value.lexical_only

    # -- merge -----------------------------------------------------------------------------

    def _merge_answers(self) -> dict[str, _Candidate]:
        comparable = all(
            a.embedder == self.fingerprint and not a.lexical_only for a in self.answers.values()
        )
        if not comparable:
            self.warnings.append(
                "a source uses another embedder or could not use our query vector: "
                "ranking by words only"
            )
        candidates: dict[str, _Candidate] = {}
        for name, answer in self.answers.items():
            key = name.removeprefix("peer:") if name.startswith("peer:") else None
            label = "coordinator" if key is None else f"peer {self.peer_reports[key].name}"
            for hit in answer.hits:
                candidate = _verified_hit(
                    hit, self.policy, self.roster, self.dropped, comparable, label, key is not None
                )
                if candidate is None:
                    continue
                if key is not None and candidate.publication.key_id != key:
                    self.dropped["peer_served_another_key"] += 1
                    continue
                _merge(candidates, candidate)
        return candidates

    def _defer_to_live_authors(self, candidates: dict[str, _Candidate]) -> None:
        """Confirm coordinator copies with their authors' live peers; drop what they withdrew."""
        answered = {n.removeprefix("peer:") for n in self.answers if n.startswith("peer:")}
        asks: dict[str, list[str]] = {}
        for item_id, candidate in candidates.items():
            key = candidate.publication.key_id
            if not candidate.from_peer and key in answered:
                asks.setdefault(key, []).append(item_id)
        jobs: dict[Future[_Outcome], str] = {}
        for key, ids in asks.items():
            confirm = partial(
                self._post, self.peer_reports[key].url, "/v1/confirm",
                ConfirmRequest(item_ids=ids[:MAX_BATCH]), ConfirmResponse,
            )  # fmt: skip
            jobs[self._submit(confirm)] = key
        for future in self._finished(jobs):
            outcome = future.result()
            if not isinstance(outcome.value, ConfirmResponse):
                continue
            for confirmation in outcome.value.items:
                held = candidates.get(confirmation.item_id)
                if held is None or held.from_peer:
                    continue
                if not confirmation.published or confirmation.version != held.publication.version:
                    del candidates[confirmation.item_id]
                    self.dropped["withdrawn_by_author"] += 1

    def _rank(self, candidates: dict[str, _Candidate]) -> list[TeamHit]:
        terms = QueryTerms(self.query)
        min_cosine = self.store.embedder.min_cosine
        hits: list[TeamHit] = []
        for candidate in candidates.values():
            body = candidate.publication
            shown = self.roster.get(body.author_key, body.author)
            if self.author is not None and self.author not in (shown, body.author, body.key_id):
                continue
            score = team_score(terms, body.text, body.tags, candidate.cosine, min_cosine)
            if score is None:
                continue
            hits.append(
                TeamHit(
                    id=body.item_id,
                    text=body.text,
                    score=score,
                    author=shown,
                    key_id=body.key_id,
                    source=candidate.source,
                    version=body.version,
                    kind=body.kind,
                    project=body.project,
                    tags=body.tags,
                    published_at=body.published_at,
                )
            )
        hits.sort(key=lambda h: (-h.score, h.id))
        return hits[: self.k]

    # -- plumbing --------------------------------------------------------------------------

    def _submit(self, job: Callable[[], object]) -> "Future[_Outcome]":
        return self.pool.submit(_timed, job)

    def _finished(self, jobs: "Mapping[Future[_Outcome], object]") -> "list[Future[_Outcome]]":
        """The jobs that finish before the overall deadline; the rest are abandoned."""
        if not jobs:
            return []
        remaining = max(0.0, self.end - time.monotonic())
        done, _ = concurrent.futures.wait(list(jobs), timeout=remaining)
        return list(done)

    def _client(self, url: str, with_token: bool) -> Client:
        """One client (and its connections) per source and token use, for the whole run."""
        key = (url, with_token)
        with self.clients_lock:
            client = self.clients.get(key)
            if client is None:
                token = self.token if with_token else None
                client = self.clients[key] = self.make(url, token, self.timeout)
            return client

    def _post(self, url: str, path: str, body: object, kind: type[T]) -> T:
        return self._client(url, True).post(path, body, kind)

    def _get(self, url: str, path: str, kind: type[T], with_token: bool) -> T:
        return self._client(url, with_token).get(path, kind)


class _Outcome(msgspec.Struct, kw_only=True):
    value: object = None
    error: str = ""
    timed_out: bool = False
    latency_ms: float = 0.0


def _timed(call: Callable[[], object]) -> _Outcome:
    started = time.monotonic()
    try:
        value = call()
    except Unreachable as exc:
        return _Outcome(
            error=exc.message, timed_out="in time" in exc.message, latency_ms=_since(started)
        )
    except MemmeshError as exc:
        return _Outcome(error=exc.message, latency_ms=_since(started))
    return _Outcome(value=value, latency_ms=_since(started))


def _since(started: float) -> float:
    return (time.monotonic() - started) * 1000


def _roster(policy: Policy) -> dict[str, str]:
    """Public key text -> member name; matches a roster entry given as key or member id."""
    return {member.key: member.name for member in policy.members}


def _in_roster(body: Publication | Presence, roster: dict[str, str]) -> bool:
    return not roster or body.author_key in roster or body.key_id in roster


def _verified_presence(
    envelope: Envelope, policy: Policy, roster: dict[str, str], dropped: Counter[str], source: str
) -> _Peer | None:
    try:
        body = open_envelope(envelope)
    except BadSignature:
        dropped["bad_presence"] += 1
        return None
    if not isinstance(body, Presence) or body.team != policy.team or body.expires_at <= time.time():
        dropped["bad_presence"] += 1
        return None
    if not _in_roster(body, roster):
        dropped["outside_roster"] += 1
        return None
    return _Peer(url=body.peer_url, name=body.name, key_id=body.key_id, learned_from=source)


def _verified_hit(
    hit: SearchHit,
    policy: Policy,
    roster: dict[str, str],
    dropped: Counter[str],
    comparable: bool,
    source: str,
    from_peer: bool,
) -> _Candidate | None:
    try:
        body = open_envelope(hit.envelope)
    except BadSignature:
        dropped["bad_signature"] += 1
        return None
    if not isinstance(body, Publication):
        dropped["bad_signature"] += 1
        return None
    if body.team != policy.team:
        dropped["other_team"] += 1
        return None
    if not _in_roster(body, roster):
        dropped["outside_roster"] += 1
        return None
    return _Candidate(
        publication=body,
        envelope=hit.envelope,
        cosine=hit.cosine if comparable else None,
        source=source,
        from_peer=from_peer,
    )


def _merge(candidates: dict[str, _Candidate], candidate: _Candidate) -> None:
    """Keep the highest version of each item; at equal versions the live author's copy."""
    item_id = candidate.publication.item_id
    current = candidates.get(item_id)
    if current is None:
        candidates[item_id] = candidate
        return
    newer = candidate.publication.version > current.publication.version
    same = candidate.publication.version == current.publication.version
    if newer or (same and candidate.from_peer and not current.from_peer):
        candidates[item_id] = candidate


class PeerSeen(msgspec.Struct, frozen=True, kw_only=True):
    """A teammate's peer daemon: who, where, how we learned of it, and its embedder."""

    name: str
    key_id: str
    url: str
    learned_from: str
    embedder: str
    expires_at: float


def list_peers(
    policy: Policy,
    *,
    own_key: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    interfaces: list[str] | None = None,
    client_factory: ClientFactory | None = None,
) -> tuple[list[PeerSeen], list[str]]:
    """Verified peers from presence, team.yaml and zeroconf, and the problems met on the way."""
    make = client_factory or _default_client
    token = os.environ.get(policy.token_env) or None
    roster = _roster(policy)
    dropped: Counter[str] = Counter()
    problems: list[str] = []
    found: dict[str, PeerSeen] = {}
    envelopes: list[tuple[Envelope, str, str | None]] = []
    if policy.coordinator:
        try:
            with make(policy.coordinator, token, timeout) as client:
                listing = client.get("/v1/presence/list", PresenceList)
            envelopes += [(envelope, "presence", None) for envelope in listing.members]
        except MemmeshError as exc:
            problems.append(f"coordinator: {exc.message}")
    hints = dict.fromkeys(policy.peers, "team.yaml")
    if policy.discovery:
        heard = browse(interfaces or ["127.0.0.1"], DISCOVERY_SECONDS)
        hints.update({h.url: "zeroconf" for h in heard})
    for hint, source in hints.items():
        try:
            with make(hint, None, timeout) as client:
                envelopes.append((client.get("/v1/presence", PeerPresence).envelope, source, hint))
        except MemmeshError as exc:
            problems.append(f"{hint}: {exc.message}")
    for envelope, source, asked in envelopes:
        peer = _verified_presence(envelope, policy, roster, dropped, source)
        if peer is None or peer.key_id == own_key:
            continue
        if asked is not None and peer.url.rstrip("/") != asked.rstrip("/"):
            problems.append(f"{asked}: its presence names another address ({peer.url})")
            continue
        body = open_envelope(envelope)
        assert isinstance(body, Presence)
        found.setdefault(
            peer.url,
            PeerSeen(
                name=peer.name, key_id=peer.key_id, url=peer.url, learned_from=source,
                embedder=body.embedder, expires_at=body.expires_at,
            ),
        )  # fmt: skip
    problems += [f"dropped {count} presence(s): {why}" for why, count in dropped.items()]
    return sorted(found.values(), key=lambda p: p.name), problems
