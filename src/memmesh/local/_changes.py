"""Changes to an item in place, under its own id: :func:`edit` (kind, project, tags) and
:func:`unforget`. Each runs inside the caller's write transaction and journals itself."""

import json
import sqlite3

import msgspec

from memmesh.local import journal
from memmesh.local._lookup import active, find
from memmesh.local._rows import change, content_hash, one, same_text
from memmesh.local.errors import InvalidInput, NotRestorable
from memmesh.local.items import Item, Kind, check_kind, check_name, check_tags

__all__ = ["Edit", "edit", "unforget"]

_NOTHING = "nothing to bring back"


class Edit(msgspec.Struct, frozen=True, kw_only=True):
    """What an edit asks for, checked: ``None`` leaves kind or project as they are."""

    kind: Kind | None
    project: str | None
    added: tuple[str, ...]
    removed: tuple[str, ...]

    @classmethod
    def checked(
        cls,
        kind: str | None,
        project: str | None,
        added: list[str] | tuple[str, ...],
        removed: list[str] | tuple[str, ...],
    ) -> "Edit":
        """The edit, or :class:`InvalidInput` for a bad name or a tag both added and removed."""
        wanted = cls(
            kind=None if kind is None else check_kind(kind),
            project=None if project is None else check_name(project, "project"),
            added=check_tags(added),
            removed=check_tags(removed),
        )
        both = [tag for tag in wanted.added if tag in wanted.removed]
        if both:
            raise InvalidInput(f"tag {both[0]!r} is both added and removed")
        return wanted


def edit(conn: sqlite3.Connection, item_id: str, wanted: Edit, now: float) -> tuple[Item, Item]:
    """Apply ``wanted`` to the active item; ``(before, after)``, the same item when nothing
    changes (then nothing is written)."""
    old = active(conn, item_id, now)
    missing = [tag for tag in wanted.removed if tag not in old.tags]
    if missing:
        raise InvalidInput(f"item {old.id} has no tag {missing[0]!r}")
    tags = check_tags([tag for tag in old.tags if tag not in wanted.removed] + list(wanted.added))
    changes: dict[str, object] = {}
    if wanted.kind is not None and wanted.kind != old.kind:
        changes["kind"] = wanted.kind
    if wanted.project is not None and wanted.project != old.project:
        # Moved beside an item saying the same, it would be a copy the novelty gate refuses.
        if same_text(conn, content_hash(old.text), wanted.project) is not None:
            raise InvalidInput(
                f"item {old.id} says the same as an active item of project {wanted.project}; "
                "forget one of them first"
            )
        changes["project"] = wanted.project
    if tags != old.tags:
        changes["tags"] = json.dumps(list(tags))
    if not changes:
        return old, old
    change(conn, old.id, now, **changes)
    journal.log(conn, now, "edit", old.id, changed=sorted(changes))
    return old, one(conn, "id = ?", old.id, now)


def unforget(conn: sqlite3.Connection, item_id: str, now: float) -> Item:
    """Make the archived item active again; :class:`NotRestorable` says why one cannot be."""
    item = find(conn, item_id, now)
    if item.status == "active":
        raise NotRestorable(item.id, f"is active: {_NOTHING}")
    if item.status == "superseded":
        raise NotRestorable(
            item.id,
            f"was revised, not forgotten: {item.superseded_by} replaced it "
            "(revise that one to change the text again)",
        )
    if not item.text:
        raise NotRestorable(item.id, f"was erased (its text is gone): {_NOTHING}")
    same = same_text(conn, content_hash(item.text), item.project)
    if same is not None:
        other = one(conn, "seq = ?", same, now).id
        raise NotRestorable(item.id, f"says the same as active item {other}: {_NOTHING}")
    change(conn, item.id, now, status="active")
    journal.log(conn, now, "unforget", item.id)
    return one(conn, "id = ?", item.id, now)
