"""`mem team sync`: push every registry entry the coordinator has not acknowledged.

Entries go in log order, in bounded batches of one kind. The policy is checked again before
anything is sent: a publication the policy now withholds stays unsent (and unacknowledged, so
it goes out if the policy allows it again). A publication that is no longer live (retracted or
replaced since) is not sent at all. An entry is marked acknowledged only after the coordinator
answered ``accepted``, ``duplicate`` or ``stale`` for it, so a kill at any moment followed by
another sync reaches the same state: the coordinator treats a resent envelope as a duplicate.
"""

import os

import msgspec

from memmesh.coordinator.protocol import (
    Outcome,
    PublishItem,
    PublishRequest,
    PublishResponse,
    RetractRequest,
    RetractResponse,
)
from memmesh.net.client import Client
from memmesh.net.errors import BadResponse
from memmesh.net.wire import MAX_BATCH
from memmesh.policy.config import Policy
from memmesh.policy.errors import NoCoordinator
from memmesh.registry.log import Entry, Registry
from memmesh.registry.publish import reconcile, withheld

__all__ = ["DEFAULT_BATCH", "SyncReport", "coordinator_client", "sync"]

DEFAULT_BATCH = 64


class SyncReport(msgspec.Struct, kw_only=True):
    """What one sync did."""

    sent: int = 0
    accepted: int = 0
    already_known: int = 0
    stale: int = 0
    skipped: int = 0
    withheld: list[tuple[str, str]] = msgspec.field(default_factory=list)
    rejected: list[tuple[str, str]] = msgspec.field(default_factory=list)
    batches: int = 0


def coordinator_client(policy: Policy, *, timeout: float = 10.0) -> Client:
    """A client for the policy's coordinator, with the team token from its variable."""
    if policy.coordinator is None:
        raise NoCoordinator()
    token = os.environ.get(policy.token_env) or None
    return Client(policy.coordinator, token=token, timeout=timeout)


def sync(
    registry: Registry, policy: Policy, client: Client, *, batch_size: int = DEFAULT_BATCH
) -> SyncReport:
    """Push unacknowledged entries to the coordinator behind ``client``."""
    assert 1 <= batch_size <= MAX_BATCH
    reconcile(registry)
    report = SyncReport()
    with registry.store.read() as tx:
        live = registry.live(tx)
        pending = registry.unacked(tx)
    held = withheld(registry, policy, live)
    sendable: list[Entry] = []
    for entry in pending:
        if entry.kind == "publication":
            current = live.get(entry.item_id)
            if current is None or current.envelope != entry.envelope:
                report.skipped += 1
                registry.ack([entry.seq])
                continue
            if entry.item_id in held:
                report.withheld.append((entry.item_id, held[entry.item_id].rule))
                continue
        sendable.append(entry)
    for batch in _batches(sendable, batch_size):
        report.batches += 1
        report.sent += len(batch)
        if batch[0].kind == "publication":
            vector_of = registry.store.vector_of
            items = [PublishItem(envelope=e.envelope, vector=vector_of(e.item_id)) for e in batch]
            results = client.post(
                "/v1/publish", PublishRequest(items=items), PublishResponse
            ).results
        else:
            request = RetractRequest(envelopes=[e.envelope for e in batch])
            results = client.post("/v1/retract", request, RetractResponse).results
        _record(registry, batch, results, report)
    return report


def _batches(entries: list[Entry], size: int) -> list[list[Entry]]:
    """Consecutive runs of one kind, cut at ``size``: log order is kept across kinds."""
    batches: list[list[Entry]] = []
    for entry in entries:
        if batches and batches[-1][0].kind == entry.kind and len(batches[-1]) < size:
            batches[-1].append(entry)
        else:
            batches.append([entry])
    return batches


def _record(
    registry: Registry, batch: list[Entry], results: list[Outcome], report: SyncReport
) -> None:
    if len(results) != len(batch):
        raise BadResponse(f"the coordinator answered {len(results)} outcomes for {len(batch)}")
    acked: list[int] = []
    for entry, outcome in zip(batch, results, strict=True):
        if outcome.status == "rejected":
            report.rejected.append((entry.item_id, outcome.reason))
            continue
        acked.append(entry.seq)
        if outcome.status == "accepted":
            report.accepted += 1
        elif outcome.status == "duplicate":
            report.already_known += 1
        else:
            report.stale += 1
    registry.ack(acked)
