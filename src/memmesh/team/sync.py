"""`mem team sync`: push every registry entry the coordinator has not acknowledged.

Entries go in log order, in bounded batches of one kind. The policy is checked again before
anything is sent: a live publication the policy no longer allows is retracted first
(:func:`~memmesh.registry.publish.withdraw`, after the retractions of forgotten and revised
items), and that retraction is pushed like any other, so a tightened team.yaml takes items
back from the coordinator too. A policy that allows them again brings nothing back: sharing
them again takes a new publish, asked for (``--again``). A publication that is no longer
live (retracted or replaced since) is not sent at all; one withheld for a local reason the
policy does not judge (its text changed under it) stays unsent and unacknowledged. An entry
is marked acknowledged only after the coordinator answered ``accepted``, ``duplicate`` or
``stale`` for it, so a kill at any moment followed by another sync reaches the same state: the
coordinator treats a resent envelope as a duplicate. The retractions :func:`withdraw` appends
are committed before any request, so a kill between the two leaves them queued for the next
sync.

The coordinator answers each retraction it applied with a receipt signed by its own key; sync
keeps it once it checks out (:meth:`~memmesh.registry.log.Registry.keep_receipt`: a receipt for
exactly that retraction of ours, signed by team.yaml's ``coordinator_key`` when it names one),
and reports one that does not (``bad_receipts``); the retraction counts as applied either way.

The same sync pushes the member's tallies on teammates' items and folds in teammates'
tallies on its own (:mod:`memmesh.team.tallies`, reported in ``tallies``).

The client comes from :func:`memmesh.net.connect.coordinator_client`: every request signed for
the coordinator, with the team token. With nothing to send, sync still asks the coordinator
(``GET /v1/info``), so that a credential it refuses is never reported as a sync that went well.
"""

from collections.abc import Callable

import msgspec

from memmesh.coordinator.protocol import (
    Info,
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
from memmesh.registry.errors import BadSignature
from memmesh.registry.log import Entry, Registry
from memmesh.registry.publish import reconcile, withdraw, withheld
from memmesh.team.tallies import TallyReport

__all__ = ["DEFAULT_BATCH", "SyncReport", "sync"]

DEFAULT_BATCH = 64


class SyncReport(msgspec.Struct, kw_only=True):
    """What one sync did.

    * ``withdrawn`` - (item id, rule) of each publication retracted because the policy no
      longer allows it; ``withheld`` - (item id, why) of each left unsent for another reason.
    * ``receipts`` - retraction receipts kept; ``bad_receipts`` - (item id, why) of each
      receipt refused.
    * ``tallies`` - the tallies sent and folded in (see :class:`TallyReport`).
    """

    sent: int = 0
    accepted: int = 0
    already_known: int = 0
    stale: int = 0
    skipped: int = 0
    withheld: list[tuple[str, str]] = msgspec.field(default_factory=list)
    withdrawn: list[tuple[str, str]] = msgspec.field(default_factory=list)
    rejected: list[tuple[str, str]] = msgspec.field(default_factory=list)
    batches: int = 0
    receipts: int = 0
    bad_receipts: list[tuple[str, str]] = msgspec.field(default_factory=list)
    tallies: TallyReport = msgspec.field(default_factory=TallyReport)


def sync(
    registry: Registry,
    policy: Policy,
    client: Client,
    *,
    batch_size: int = DEFAULT_BATCH,
    progress: Callable[[int, int], None] | None = None,
) -> SyncReport:
    """Push unacknowledged entries to the coordinator behind ``client`` (made by
    :func:`memmesh.net.connect.coordinator_client`), keeping the receipts it answers with;
    ``progress(sent, to send)`` is called before the first batch and after each."""
    assert 1 <= batch_size <= MAX_BATCH
    reconcile(registry)
    report = SyncReport(withdrawn=[(e.item_id, rule) for e, rule in withdraw(registry, policy)])
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
    if not sendable:
        client.get("/v1/info", Info)  # raises when the coordinator does not accept us
    if progress is not None and sendable:
        progress(0, len(sendable))
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
        _record(registry, policy, batch, results, report)
        if progress is not None:
            progress(report.sent, len(sendable))
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
    registry: Registry,
    policy: Policy,
    batch: list[Entry],
    results: list[Outcome],
    report: SyncReport,
) -> None:
    if len(results) != len(batch):
        raise BadResponse(f"the coordinator answered {len(results)} outcomes for {len(batch)}")
    acked: list[int] = []
    for entry, outcome in zip(batch, results, strict=True):
        if outcome.status == "rejected":
            report.rejected.append((entry.item_id, outcome.reason))
            continue
        acked.append(entry.seq)
        if entry.kind == "retraction" and outcome.receipt is not None:
            try:
                registry.keep_receipt(
                    entry, outcome.receipt, coordinator_key=policy.coordinator_key
                )
                report.receipts += 1
            except BadSignature as exc:
                report.bad_receipts.append((entry.item_id, exc.reason))
        if outcome.status == "accepted":
            report.accepted += 1
        elif outcome.status == "duplicate":
            report.already_known += 1
        else:
            report.stale += 1
    registry.ack(acked)
