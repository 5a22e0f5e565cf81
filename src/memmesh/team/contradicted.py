"""The member's published items that a teammate's item contradicts (`mem team status`).

Read offline, from what this home holds: the member's live publications (the registry) and
teammates' published items (the team cache, :mod:`memmesh.local.teamcache`, as its last
refresh left it). A retraction that reached the cache takes the teammate's item out of the
cache, and so out of this list; one of the member's own takes their item out of it at once.

Pairs are compared where one recall could show both: in one project, or one of them global.
Teammates' items are read from the projects the member has published in, and global: at most
:data:`~memmesh.local.teamcache.MAX_SCOPE_ROWS` of each (the newest), and none once the cache
is withheld (the coordinator has not confirmed it for too long).
"""

from pathlib import Path

import msgspec

from memmesh.local import GLOBAL, teamcache
from memmesh.registry import Live
from memmesh.team.contradictions import Otherwise, Said, contradicting

__all__ = ["Contradicted", "contradicted"]


class Contradicted(msgspec.Struct, frozen=True, kw_only=True):
    """One of the member's published items (``id``, ``text``, ``project``) and the
    teammates' items that contradict it."""

    id: str
    text: str
    project: str
    contradicted_by: tuple[Otherwise, ...]


def contradicted(home: Path, live: dict[str, Live], *, own_key: str) -> list[Contradicted]:
    """Which of the member's ``live`` publications a teammate's cached item contradicts, by
    project then item id; ``own_key`` is the member's id, whose items the cache never
    holds."""
    published = [each.publication for each in live.values()]
    own = [
        Said(key_id=own_key, author="", item_id=p.item_id, text=p.text, project=p.project)
        for p in published
    ]
    if not own:
        return []
    theirs: list[Said] = []
    for project in sorted({s.project for s in own} | {GLOBAL}):
        items, _ = teamcache.in_scope(home, [project])
        theirs += [
            Said(
                key_id=c.key_id,
                author=c.author,
                item_id=c.item_id,
                text=c.text,
                project=c.project,
            )
            for c in items
        ]
    flags = contradicting(own, theirs)
    found = [
        Contradicted(id=s.item_id, text=s.text, project=s.project, contradicted_by=tuple(f))
        for s, f in zip(own, flags, strict=True)
        if f
    ]
    return sorted(found, key=lambda c: (c.project, c.id))
