"""The fused score of hybrid recall: what a closeness, the relative BM25 and an exact token weigh.

Each half already counts by how much it discriminates for the query: a closeness is in spreads
of what unrelated texts get from the embedder, a BM25 is relative to the best one among the
candidates. So the weights only set the rate between the two halves, and the bonus for holding
one of the query's exact tokens. They were chosen on teamdev's tuning half (``bench/fusion.py``
searches them there; docs/benchmarks.md quotes the other half and LoCoMo).
"""

from typing import NamedTuple

__all__ = ["W_EXACT", "W_LEXICAL", "Weights", "fused"]

# The relative BM25's weight (the share of the query's words, in recall-team's score); a
# spread of closeness weighs the embedder's ``vector_weight``. Over the first ten candidates of
# teamdev's tuning queries, closeness spans 1.2 spreads and relative BM25 0.79 (medians): at
# 0.3 the cosine had 1.6 times the words' say over the order, at 0.4 it has 1.2 times (0.46
# would be equal; the grid of bench/fusion.py put 0.4 first).
W_LEXICAL = 0.4
# Sharing an exact token with the query (``node-gyp`` itself, not ``node-gyp-build``): with
# the best BM25 match it reaches MIN_RELEVANCE alone, so an identifier asked for is answered.
W_EXACT = 0.3


class Weights(NamedTuple):
    """What the fused score gives a spread of closeness (the embedder's ``vector_weight``), the
    relative BM25 and an exact token shared with the query."""

    vector: float
    lexical: float = W_LEXICAL
    exact: float = W_EXACT


def fused(weights: Weights, close: float, lexical: float, exact: bool) -> float:
    """The hybrid relevance of a candidate of this closeness and relative BM25, holding one of
    the query's exact tokens or not (an explained recall's parts hold all three)."""
    # A cosine no closer than unrelated texts get is no evidence either way: it adds nothing.
    vector = weights.vector * max(close, 0.0)
    return vector + weights.lexical * lexical + (weights.exact if exact else 0.0)
