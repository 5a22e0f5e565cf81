"""One comparable score for hits from different sources.

Each source ranks by its own statistics (BM25 depends on the corpus), so its scores cannot be
compared with another source's. recall-team therefore scores every hit itself with a function
of the query and the item alone: the cosine the source reported (comparable only when the
source's embedder fingerprint is ours), read as a closeness in our embedder's units as local
recall reads it, and the share of the query's content words the item holds, plus the
exact-token bonus. An answer then keeps what local recall's answer would
(:func:`answered`): nothing when even the best is under ``MIN_RELEVANCE``, else what reaches
``MIN_SHARE_OF_BEST`` of the best. Identical inputs give identical scores wherever the item
came from, which is what makes a federated answer match a single store's.

Before scoring, copies of one item from several sources are merged: the highest version wins,
and at equal versions the live author's copy. An item is its author's key and its id
(:data:`~memmesh.team._checks.ItemKey`): another key's item with the same id is another item,
whatever its version, and replaces nothing. (Different authors' items that state one fact are
merged after ranking, into one hit: :mod:`memmesh.consolidate.corroborate`.)
"""

from collections.abc import Iterable
from typing import TYPE_CHECKING

from memmesh import text as _text
from memmesh.embed import Embedder, closeness
from memmesh.local import (
    MIN_CLOSENESS,
    MIN_COVERAGE,
    MIN_RELEVANCE,
    MIN_SHARE_OF_BEST,
    W_EXACT,
    W_LEXICAL,
)

if TYPE_CHECKING:  # at run time the hooks score with this module without the network's stack
    from memmesh.team._checks import Candidate, ItemKey

__all__ = ["QueryTerms", "answered", "merge", "ranked", "team_score"]


class QueryTerms:
    """The parts of a query that scoring needs, computed once."""

    def __init__(self, query: str) -> None:
        tokens = set(_text.tokens(query))
        self.words = {t for t in tokens if t.isalnum()} or tokens
        self.exact = _text.exact_tokens(query)


def team_score(
    terms: QueryTerms,
    text: str,
    tags: tuple[str, ...],
    cosine: float | None,
    embedder: "Embedder",
) -> float | None:
    """The hit's score, or ``None`` when it is not relevant enough to show.

    ``cosine`` is ``None`` when the source's vectors are not comparable with ours; the score is
    then lexical only.
    """
    if not terms.words:
        return None
    item_text = text + " " + " ".join(tags)
    coverage = len(terms.words & _text.token_set(item_text)) / len(terms.words)
    exact = _text.shares_exact_token(terms.exact, item_text)
    close = closeness(cosine, embedder.unrelated) if cosine is not None else None
    if not ((close is not None and close >= MIN_CLOSENESS) or exact or coverage >= MIN_COVERAGE):
        return None
    bonus = W_EXACT if exact else 0.0
    if close is None:
        return coverage + bonus
    return embedder.vector_weight * max(close, 0.0) + W_LEXICAL * coverage + bonus


def merge(candidates: "dict[ItemKey, Candidate]", candidate: "Candidate") -> None:
    """Keep the highest version of each author's item; at equal versions the live author's copy
    (a peer serves only its owner's items, so a peer's copy is the author's own)."""
    item = candidate.item_key
    current = candidates.get(item)
    if current is None:
        candidates[item] = candidate
        return
    newer = candidate.publication.version > current.publication.version
    same = candidate.publication.version == current.publication.version
    if newer or (same and candidate.from_peer and not current.from_peer):
        candidates[item] = candidate


def ranked(
    candidates: "Iterable[Candidate]", terms: QueryTerms, embedder: "Embedder"
) -> "list[tuple[float, Candidate]]":
    """The relevant candidates with their :func:`team_score`, best first (ties by item id, then
    author key id)."""
    scored: list[tuple[float, Candidate]] = []
    for candidate in candidates:
        body = candidate.publication
        score = team_score(terms, body.text, body.tags, candidate.cosine, embedder)
        if score is not None:
            scored.append((score, candidate))
    scored.sort(
        key=lambda pair: (-pair[0], pair[1].publication.item_id, pair[1].publication.key_id)
    )
    return scored


def answered(scored: "list[tuple[float, Candidate]]") -> "list[tuple[float, Candidate]]":
    """What an answer keeps of the ranked candidates: none when the best is under
    ``MIN_RELEVANCE`` (recall-team abstains), else those reaching ``MIN_SHARE_OF_BEST`` of it."""
    if not scored or scored[0][0] < MIN_RELEVANCE:
        return []
    floor = MIN_SHARE_OF_BEST * scored[0][0]
    return [pair for pair in scored if pair[0] >= floor]
