"""The item as the store holds it (:mod:`memmesh.local.items` has the rules for its fields,
and hands this out as ``memmesh.local.items.Item``)."""

from typing import Any

import msgspec

from memmesh.local.items import Kind, Status, iso

__all__ = ["Item"]


class Item(msgspec.Struct, frozen=True, kw_only=True):
    """A remembered item as the store holds it. Times are Unix seconds (UTC)."""

    id: str
    text: str
    kind: Kind
    project: str
    tags: tuple[str, ...]
    author: str
    created_at: float
    updated_at: float
    reinforcements: int
    worked: float
    failed: float
    partial: float
    outcome_score: float
    status: Status
    superseded_by: str | None = None
    supersedes: str | None = None
    # The dates between which it holds (either open: ``None``), and the other members whose
    # items were merged into it (memmesh.local.merge).
    valid_from: float | None = None
    valid_until: float | None = None
    coauthors: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping with ISO 8601 times; the ``--json`` shape of an item."""
        data = msgspec.structs.asdict(self)
        data["tags"] = list(self.tags)
        data["coauthors"] = list(self.coauthors)
        for key in ("valid_from", "valid_until"):
            data[key] = None if data[key] is None else iso(data[key])
        data["created_at"] = iso(self.created_at)
        data["updated_at"] = iso(self.updated_at)
        for key in ("worked", "failed", "partial", "outcome_score"):
            data[key] = round(data[key], 4)
        return data
