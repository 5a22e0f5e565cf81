"""recall-team's asking: the coordinator and every live peer at once, under one deadline.

All of it runs in one anyio task group inside a cancel scope that ends at the deadline: the
coordinator's search, discovery (:class:`~memmesh.team._sources.Discovery`) and one task per
peer, started the moment that peer is found (and admitted by the roster). What has not
answered by the deadline is cancelled (its worker thread abandoned) and reported as timed out;
a peer that must not be asked (no roster at all) is reported as skipped, saying why. At most
:data:`MAX_PEERS` peers are asked; any more are dropped, counted as ``too_many_peers``.
"""

import time
from typing import Literal

import anyio
import msgspec
from anyio.abc import TaskGroup

from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.wire import MAX_BATCH
from memmesh.peer.protocol import ConfirmRequest, ConfirmResponse
from memmesh.team._calls import Outcome, Target
from memmesh.team._checks import Candidate, ItemKey, PeerSeen
from memmesh.team._sources import Discovery, coordinator_target

__all__ = ["MAX_PEERS", "Fanout", "SourceReport", "Status"]

Status = Literal["ok", "failed", "timeout", "skipped"]
# The most peers one run asks: more than a team of a few hundred needs, and all that a
# coordinator listing thousands of members' presences can make a member connect to.
MAX_PEERS = 256


class SourceReport(msgspec.Struct, kw_only=True):
    """What one source did for this query."""

    name: str
    kind: Literal["coordinator", "peer"]
    url: str
    status: Status = "skipped"
    error: str = ""
    code: str = ""  # why it failed, for programs (the source's own code when it refused)
    hits: int = 0
    latency_ms: float = 0.0
    lexical_only: bool = False
    learned_from: str = ""


class Fanout:
    """One recall-team run's asking: its sources, their reports and their answers.

    * ``request`` - what every source is asked (coordinator search and peer recall alike).
    * ``discovery`` - finds the peers; its calls, policy and ``dropped`` serve the whole run.
    * ``end`` - the overall deadline, on :func:`time.monotonic`'s clock.

    ``answers`` is keyed ``coordinator`` or ``peer:KEY_ID``; ``peer_reports`` and ``peers``
    by key id.
    """

    def __init__(
        self,
        request: SearchRequest,
        discovery: Discovery,
        *,
        end: float,
    ) -> None:
        self.request = request
        self.discovery = discovery
        self.calls = discovery.calls
        self.end = end
        self.reports: list[SourceReport] = []
        self.answers: dict[str, SearchResponse] = {}
        self.peer_reports: dict[str, SourceReport] = {}
        self.peers: dict[str, PeerSeen] = {}
        self._group: TaskGroup | None = None

    async def ask_everyone(self) -> None:
        """Every source at once: the coordinator's search, its presence list, static peers and
        zeroconf; each peer is asked the moment its presence verifies, without waiting for the
        others (the coordinator's search included). Returns by the deadline."""
        with self._until_the_deadline():
            async with anyio.create_task_group() as group:
                self._group = group
                coordinator = self.discovery.policy.coordinator
                if coordinator:
                    report = SourceReport(name="coordinator", kind="coordinator", url=coordinator)
                    self.reports.append(report)
                    target = coordinator_target(self.discovery.policy)
                    group.start_soon(self._ask, report, target, "coordinator", "/v1/search")
                self.discovery.start(group, self)
        self._group = None
        for report in self.reports:
            if report.status == "skipped" and not report.error:  # not one left out on purpose
                report.status, report.error = "timeout", "no answer before the deadline"

    async def defer_to_live_authors(self, candidates: dict[ItemKey, Candidate]) -> None:
        """Confirm coordinator copies with their authors' live peers; drop what they withdrew.

        A peer speaks only for its own key's items: its "not published" withdraws that key's
        copy of the id, never another author's item with the same id. Confirmations that miss
        the deadline change nothing.
        """
        answered = {n.removeprefix("peer:") for n in self.answers if n.startswith("peer:")}
        asks: dict[str, list[str]] = {}
        for candidate in candidates.values():
            key, item_id = candidate.item_key
            if not candidate.from_peer and key in answered:
                asks.setdefault(key, []).append(item_id)
        with self._until_the_deadline():
            async with anyio.create_task_group() as group:
                for key, ids in asks.items():
                    group.start_soon(self._confirm, candidates, key, ids[:MAX_BATCH])

    # -- what discovery reports (memmesh.team._sources.Listener) ---------------------------

    def found(self, peer: PeerSeen) -> None:
        """Ask a verified peer at once, once per key: a URL another key's presence also names
        is asked for each (each answer keeps only its own key's items)."""
        if peer.key_id in self.peer_reports:
            return
        if len(self.peers) >= MAX_PEERS:
            self.discovery.dropped["too_many_peers"] += 1
            return
        assert self._group is not None, "peers are found only while everyone is asked"
        report = SourceReport(
            name=peer.name, kind="peer", url=peer.url, learned_from=peer.learned_from
        )
        self.reports.append(report)
        self.peer_reports[peer.key_id] = report
        self.peers[peer.key_id] = peer
        name = f"peer:{peer.key_id}"
        self._group.start_soon(self._ask, report, _target(peer), name, "/v1/recall")

    def unasked(self, peer: PeerSeen, why: str) -> None:
        """A peer that must not be asked is a source skipped on purpose, once per key."""
        if peer.key_id in self.peer_reports:
            return
        report = SourceReport(
            name=peer.name, kind="peer", url=peer.url, status="skipped", error=why,
            learned_from=peer.learned_from,
        )  # fmt: skip
        self.reports.append(report)
        self.peer_reports[peer.key_id] = report

    def failed(self, url: str, source: str, outcome: Outcome) -> None:
        """A peer the member listed is a source that failed, not a silent absence."""
        if source != "team.yaml":
            return
        self.reports.append(
            SourceReport(
                name=url, kind="peer", url=url, status="failed",
                error=outcome.error or "no verifiable presence",
                latency_ms=round(outcome.latency_ms, 2), learned_from=source,
            )
        )  # fmt: skip

    def misplaced(self, url: str, peer: PeerSeen) -> None:
        """Count a presence that announces another address than where it was fetched."""
        self.discovery.dropped["presence_url_mismatch"] += 1

    def _until_the_deadline(self) -> anyio.CancelScope:
        """A scope cancelled at ``end`` (anyio's clock need not be :func:`time.monotonic`)."""
        return anyio.CancelScope(deadline=anyio.current_time() + self.end - time.monotonic())

    # -- asking one source -----------------------------------------------------------------

    async def _ask(self, report: SourceReport, target: Target, name: str, path: str) -> None:
        """Ask one source and record its answer (or why there is none)."""
        outcome = await self.calls.post(target, path, self.request, SearchResponse)
        report.latency_ms = round(outcome.latency_ms, 2)
        if outcome.error:
            report.status = "timeout" if outcome.timed_out else "failed"
            report.error, report.code = outcome.error, outcome.code
            return
        report.status = "ok"
        if isinstance(outcome.value, SearchResponse):
            self.answers[name] = outcome.value
            report.hits = len(outcome.value.hits)
            report.lexical_only = outcome.value.lexical_only

    async def _confirm(
        self, candidates: dict[ItemKey, Candidate], key: str, ids: list[str]
    ) -> None:
        """Ask ``key``'s peer about its ``ids``; drop its copies it no longer publishes."""
        request = ConfirmRequest(item_ids=ids)
        target = _target(self.peers[key])
        outcome = await self.calls.post(target, "/v1/confirm", request, ConfirmResponse)
        if not isinstance(outcome.value, ConfirmResponse):
            return
        for confirmation in outcome.value.items:
            item = (key, confirmation.item_id)
            held = candidates.get(item)
            if held is None or held.from_peer:
                continue
            if not confirmation.published or confirmation.version != held.publication.version:
                del candidates[item]
                self.discovery.dropped["withdrawn_by_author"] += 1


def _target(peer: PeerSeen) -> Target:
    """``peer``'s daemon, reached as its signed presence says (URL and pin)."""
    return Target(kind="peer", url=peer.url, key_id=peer.key_id, pin=peer.tls_pin)
