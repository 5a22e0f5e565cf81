"""One comparable score for hits from different sources.

Each source ranks by its own statistics (BM25 depends on the corpus), so its scores cannot be
compared with another source's. recall-team therefore scores every hit itself with a function
of the query and the item alone: the cosine the source reported (comparable only when the
source's embedder fingerprint is ours) and the share of the query's content words the item
holds, plus the exact-token bonus. Identical inputs give identical scores wherever the item
came from, which is what makes a federated answer match a single store's.
"""

from memmesh import text as _text
from memmesh.local import MIN_COVERAGE, W_EXACT, W_LEXICAL, W_VECTOR

__all__ = ["QueryTerms", "team_score"]


class QueryTerms:
    """The parts of a query that scoring needs, computed once."""

    def __init__(self, query: str) -> None:
        tokens = set(_text.tokens(query))
        self.words = {t for t in tokens if t.isalnum()} or tokens
        self.exact = _text.exact_tokens(query)


def team_score(
    terms: QueryTerms, text: str, tags: tuple[str, ...], cosine: float | None, min_cosine: float
) -> float | None:
    """The hit's score, or ``None`` when it is not relevant enough to show.

    ``cosine`` is ``None`` when the source's vectors are not comparable with ours; the score is
    then lexical only.
    """
    if not terms.words:
        return None
    item_text = text + " " + " ".join(tags)
    coverage = len(terms.words & set(_text.tokens(item_text))) / len(terms.words)
    exact = _text.shares_exact_token(terms.exact, item_text)
    close = cosine is not None and cosine >= min_cosine
    if not (close or exact or coverage >= MIN_COVERAGE):
        return None
    bonus = W_EXACT if exact else 0.0
    if cosine is None:
        return coverage + bonus
    return W_VECTOR * cosine + W_LEXICAL * coverage + bonus
