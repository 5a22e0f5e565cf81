"""What the team cache answers the hooks: teammates' items for a project, or for a prompt.

Both read only the cache (:mod:`memmesh.local.teamcache`), never the network, and import
nothing of the HTTP stack: they run inside a client's hook. A prompt's items are scored as
recall-team scores a teammate's hit (:func:`memmesh.team.rank.team_score`: the closeness of the
cached vector, the share of the query's words, the exact-token bonus), so the same item gets
the same score here as from the coordinator, and the answer abstains the same way.
"""

from pathlib import Path

import numpy as np

from memmesh.embed import Embedder
from memmesh.local import GLOBAL, MIN_RELEVANCE, MIN_SHARE_OF_BEST
from memmesh.local.teamcache import CachedItem, in_scope
from memmesh.team.rank import QueryTerms, team_score

__all__ = ["KIND_ORDER", "for_project", "for_query"]

# What a session should hear of first: what bites, then what was decided, then the rest.
KIND_ORDER = ("gotcha", "decision", "convention", "command", "incident", "fact", "preference")


def _scope(project: str) -> list[str]:
    return [GLOBAL] if project == GLOBAL else [project, GLOBAL]


def for_project(home: Path, project: str, *, limit: int) -> list[CachedItem]:
    """Teammates' items for a session in ``project``: the project's before the global ones,
    then by kind (:data:`KIND_ORDER`), newest first."""
    items, _ = in_scope(home, _scope(project))
    rank = {kind: n for n, kind in enumerate(KIND_ORDER)}
    items.sort(key=lambda i: (i.project != project, rank.get(i.kind, len(rank)), -i.published_at))
    return items[:limit]


def for_query(
    home: Path,
    query: str,
    project: str,
    *,
    embedder: Embedder,
    query_vector: "np.ndarray | None",
    k: int,
) -> list[tuple[float, CachedItem]]:
    """The ``k`` teammates' items most relevant to ``query`` in ``project`` (and global), with
    their scores, best first; none when even the best is not relevant enough.

    ``query_vector`` is the query embedded by ``embedder``; it is used only when the cache's
    vectors come from that embedder (else the scores are lexical).
    """
    from memmesh.local import teamcache

    source = teamcache.state(home).source
    wanted = None
    if query_vector is not None and source is not None and source.embedder == embedder.fingerprint:
        wanted = np.asarray(query_vector, dtype=np.float32).reshape(-1)
    items, blobs = in_scope(home, _scope(project), vectors=wanted is not None)
    if not items:
        return []
    cosines: list[float | None] = [None] * len(items)
    if wanted is not None and any(blobs):
        usable = [n for n, blob in enumerate(blobs) if blob and len(blob) == wanted.nbytes]
        matrix = np.frombuffer(b"".join(blobs[n] or b"" for n in usable), dtype=np.float32)
        for n, cosine in zip(usable, matrix.reshape(len(usable), -1) @ wanted, strict=True):
            cosines[n] = float(cosine)
    terms = QueryTerms(query)
    scored = []
    for item, cosine in zip(items, cosines, strict=True):
        score = team_score(terms, item.text, item.tags, cosine, embedder)
        if score is not None:
            scored.append((score, item))
    scored.sort(key=lambda pair: (-pair[0], pair[1].item_id, pair[1].key_id))
    if not scored or scored[0][0] < MIN_RELEVANCE:
        return []
    floor = MIN_SHARE_OF_BEST * scored[0][0]
    return [pair for pair in scored if pair[0] >= floor][:k]
