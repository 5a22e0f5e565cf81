"""One member retracting ids it never published, to fill the team's quota with tombstones.

A coordinator over a temporary data folder keeps ``--member-items`` items per member and
``--total-items`` for the team. The attacker, a member, sends ``--tombstones`` signed
retractions of made-up ids in batches of 256 (as a sync sends them); then a teammate publishes
one item. Each row: what was sent, how many tombstones were accepted, how many items the
coordinator counts for the attacker and for the team, the teammate's outcome, and the wall
time of the attack. Bounded: at most 20,000 tombstones, all in this process.

Run from the repository root::

    .venv/bin/python bench/_attack_tombstones.py                 # 3,000 against 1,000 / 3,000
    .venv/bin/python bench/_attack_tombstones.py --tombstones 5000 --total-items 5000
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import log, ms_since, table
from memmesh.coordinator import Coordinator, _usage
from memmesh.coordinator.errors import QuotaExceeded
from memmesh.coordinator.protocol import PublishItem, PublishRequest, RetractRequest
from memmesh.net.quotas import Quotas
from memmesh.net.signing import Caller
from memmesh.net.wire import MAX_BATCH
from memmesh.registry.envelopes import FORMAT_VERSION, Publication, Retraction, seal, text_hash
from memmesh.registry.identity import Identity, create_identity

TEAM = "tombstone-bench"
HEADER = [
    "sent",
    "accepted",
    "attacker items",
    "team items",
    "member limit",
    "team limit",
    "teammate publish",
    "attack ms",
]
MOST = 20_000


def _caller(member: Identity) -> Caller:
    return Caller(key=member.public_key_text, key_id=member.key_id)


def _tombstone(member: Identity, n: int) -> Retraction:
    return Retraction(
        format=FORMAT_VERSION, team=TEAM, item_id=f"01JTOMBBENCH{n:014d}", version=1,
        author_key=member.public_key_text, key_id=member.key_id, seq=n + 1,
        retracted_at=1_700_000_000.0,
    )  # fmt: skip


def _publication(member: Identity, fingerprint: str) -> Publication:
    text = "The billing exporter needs the ledger lock before month end"
    return Publication(
        format=FORMAT_VERSION, team=TEAM, item_id="01JTOMBBENCHTEAMMATE000001", version=1,
        author_key=member.public_key_text, key_id=member.key_id, seq=1, author="teammate",
        published_at=1_700_000_000.0, text=text, kind="decision", project="global", tags=(),
        content_hash=text_hash(text), embedder=fingerprint,
    )  # fmt: skip


def run_tombstones(
    *, tombstones: int = 3000, member_items: int = 1000, total_items: int = 3000
) -> list[list[object]]:
    """One row: the attack against a fresh coordinator, then a teammate's publish."""
    tombstones = min(tombstones, MOST)
    with tempfile.TemporaryDirectory(prefix="memmesh-tombstones-") as tmp:
        root = Path(tmp)
        attacker, teammate = create_identity(root / "mallory"), create_identity(root / "ada")
        quotas = Quotas(member_items=member_items, total_items=total_items)
        coordinator = Coordinator(root / "coordinator", team=TEAM, quotas=quotas)
        try:
            envelopes = [seal(_tombstone(attacker, n), attacker) for n in range(tombstones)]
            log(f"retracting {tombstones:,} ids never published")
            started = time.perf_counter()
            accepted = 0
            for start in range(0, tombstones, MAX_BATCH):
                batch = RetractRequest(envelopes=envelopes[start : start + MAX_BATCH])
                results = coordinator.retract(_caller(attacker), batch).results
                accepted += sum(outcome.status == "accepted" for outcome in results)
            elapsed = ms_since(started)
            body = _publication(teammate, coordinator.store.embedder.fingerprint)
            request = PublishRequest(items=[PublishItem(envelope=seal(body, teammate))])
            try:
                (outcome,) = coordinator.publish(_caller(teammate), request).results
                published: str = outcome.status
            except QuotaExceeded as exc:
                published = f"{exc.status} {exc.scope} full"
            with coordinator.store.read() as tx:
                mine = _usage.of(tx, attacker.public_key_text).items
                team = _usage.total(tx).items
        finally:
            coordinator.close()
    return [
        [tombstones, accepted, mine, team, member_items, total_items, published, round(elapsed)]
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tombstones", type=int, default=3000)
    parser.add_argument("--member-items", type=int, default=1000)
    parser.add_argument("--total-items", type=int, default=3000)
    args = parser.parse_args()
    rows = run_tombstones(
        tombstones=args.tombstones,
        member_items=args.member_items,
        total_items=args.total_items,
    )
    print(table(HEADER, rows))


if __name__ == "__main__":
    main()
