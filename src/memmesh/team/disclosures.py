"""Who was served my published items: the coordinator's log and my own peer daemon's.

Both logs keep one entry per item served to one member at one time: the item, the asker's
member id and name, and when. Neither keeps a query. The coordinator answers only for the
signer's own items (``POST /v1/disclosures``); the peer daemon's log is in the member's store.
"""

from collections import Counter
from collections.abc import Sequence
from typing import Literal

import msgspec

from memmesh.coordinator.protocol import Disclosure, DisclosuresRequest, DisclosuresResponse
from memmesh.local.store import Store
from memmesh.net.connect import coordinator_client
from memmesh.net.presence import Roster
from memmesh.peer import peer_disclosures
from memmesh.policy import Policy
from memmesh.registry import Identity
from memmesh.team.chain import trusted_roster

__all__ = ["Disclosed", "merged", "my_disclosures"]

Source = Literal["coordinator", "peer"]


class Disclosed(msgspec.Struct, frozen=True, kw_only=True):
    """One of my items served to one member, and which log says so."""

    item_id: str
    asker_key_id: str
    asker_name: str
    served_at: float
    source: Source


def my_disclosures(
    policy: Policy,
    identity: Identity,
    store: Store,
    *,
    item_id: str | None = None,
    limit: int = 100,
    per_asker: int | None = None,
) -> list[Disclosed]:
    """The newest ``limit`` disclosures of my items (of ``item_id`` only, when given; at most
    ``per_asker`` of one asker's), from the coordinator's log and my peer daemon's. Raises the
    client's errors when the coordinator cannot answer."""
    request = DisclosuresRequest(item_id=item_id, limit=limit, per_asker=per_asker)
    with coordinator_client(policy, identity) as client:
        answer = client.post("/v1/disclosures", request, DisclosuresResponse)
        # The askers' names as the signed roster says them, never on the coordinator's word.
        roster = trusted_roster(client, None, policy, client.get("/v1/members", Roster))
    names = {member.key_id: member.name for member in roster.members} if roster else {}
    entries = answer.entries
    if roster is not None and roster.head_seq >= 0:
        # A signed roster names the coordinator's askers too, not the operator's table.
        entries = [_named(entry, names) for entry in entries]
    peer = _peer_log(store, item_id, limit, per_asker, names)
    return merged(entries, peer, item_id=item_id, limit=limit, per_asker=per_asker)


def _named(entry: Disclosure, names: dict[str, str]) -> Disclosure:
    """``entry`` with its asker named as ``names`` say (their member id otherwise)."""
    name = names.get(entry.asker_key_id, entry.asker_key_id)
    return msgspec.structs.replace(entry, asker_name=name)


def merged(
    coordinator: Sequence[Disclosure],
    peer: Sequence[Disclosure],
    *,
    item_id: str | None = None,
    limit: int = 100,
    per_asker: int | None = None,
) -> list[Disclosed]:
    """Both logs as one, newest first, cut to ``limit`` and to ``per_asker`` rows of one asker
    (and to ``item_id``, whatever a log sent)."""
    logs: list[tuple[Source, Sequence[Disclosure]]] = [("coordinator", coordinator), ("peer", peer)]
    rows = [
        Disclosed(
            item_id=entry.item_id,
            asker_key_id=entry.asker_key_id,
            asker_name=entry.asker_name,
            served_at=entry.served_at,
            source=source,
        )
        for source, entries in logs
        for entry in entries
        if item_id is None or entry.item_id == item_id
    ]
    rows.sort(key=lambda row: row.served_at, reverse=True)
    return (rows if per_asker is None else _capped(rows, per_asker))[:limit]


def _capped(rows: list[Disclosed], per_asker: int) -> list[Disclosed]:
    """``rows`` without those beyond the first ``per_asker`` of each asker."""
    taken: Counter[str] = Counter()
    kept: list[Disclosed] = []
    for row in rows:
        taken[row.asker_key_id] += 1
        if taken[row.asker_key_id] <= per_asker:
            kept.append(row)
    return kept


def _peer_log(
    store: Store, item_id: str | None, limit: int, per_asker: int | None, names: dict[str, str]
) -> list[Disclosure]:
    """What my own peer daemon served of my items, askers named as the roster names them
    (their member id otherwise)."""
    return [
        Disclosure(
            item_id=row.item_id,
            asker_key_id=row.asker_key_id,
            asker_name=names.get(row.asker_key_id, row.asker_key_id),
            served_at=row.served_at,
        )
        for row in peer_disclosures(store, item_id=item_id, limit=limit, per_asker=per_asker)
    ]
