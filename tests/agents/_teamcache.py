"""Filling a member's real team cache with teammates' items, as a refresh would write them."""

import time
from collections.abc import Sequence
from pathlib import Path

from memmesh.local import teamcache
from memmesh.local.store import Store

TEAM = "acme"


def cache_team_items(
    home: Path, items: Sequence[tuple[str, str]], *, kind: str = "decision", project: str = "global"
) -> list[str]:
    """Cache each ``(author, text)`` as that teammate's published item in ``home`` (which holds
    a store: the cache's vectors are in its embedder's space); their item ids, in order."""
    with Store(home) as store:
        embedder = store.embedder
    vectors = embedder.embed([text for _, text in items])
    now = time.time()
    live = [
        (
            teamcache.CachedItem(
                key_id=f"{author}key", item_id=f"01JTEAM{n:04d}", version=1, author=author,
                kind=kind, project=project, text=text, published_at=now - n,
            ),
            vector.astype("float32").tobytes(),
        )
        for n, ((author, text), vector) in enumerate(zip(items, vectors, strict=True))
    ]  # fmt: skip
    source = teamcache.Source(coordinator="https://x", team=TEAM, embedder=embedder.fingerprint)
    teamcache.apply(home, source, live, [], complete=True, at=now)
    return [item.item_id for item, _ in live]
