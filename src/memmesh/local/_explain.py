"""What an explained recall says: the parts of each hit's score, and why near misses were left out.

A recall with ``explain=True`` (:func:`memmesh.local.recall`) gives each hit its
:class:`Parts` and adds an :class:`Explanation`: the gate and weights in force, and up to
:data:`MAX_LEFT_OUT` near misses, best first, each with one :data:`Reason`:

* ``below_gate`` - a candidate of either half that fails the absolute gate (its cosine and
  closeness, its coverage of the query's words and its exact tokens are in its parts);
* ``below_floor`` - it passes the gate, but not even the best candidate reached the relevance
  floor, so the recall abstained;
* ``far_below_best`` - it passes the gate but scores under the share of the best hit's score
  an answer keeps;
* ``not_in_force`` - it holds only from or until a date that leaves the recall's moment
  out (:mod:`memmesh.local.validity`);
* ``outcome_excluded`` - its track record is at or below ``outcomes.EXCLUDE_AT``;
* ``out_of_scope`` - it passes the gate but lives in a project outside the recall's scope;
* ``ranked_below_k`` - it passes the gate but ``rank`` is past ``k``;
* ``withheld`` - in scope and passing the gate, but not among the items the recall was
  restricted to (a peer answers from its published items only).

Near misses are found among the candidates the two halves bring (the best ``pool`` of each),
and, for the last two reasons, among the candidates of the same search over every project
without the restriction, which only an explained recall runs.
"""

from collections.abc import Collection
from typing import Any, Literal, get_args

import msgspec

from memmesh.local._rows import ItemRow, item_of
from memmesh.local.items import Item

__all__ = [
    "MAX_LEFT_OUT",
    "REASONS",
    "Explanation",
    "LeftOut",
    "Miss",
    "Parts",
    "Reason",
    "left_out",
]

Reason = Literal[
    "below_gate",
    "below_floor",
    "far_below_best",
    "not_in_force",
    "outcome_excluded",
    "out_of_scope",
    "ranked_below_k",
    "withheld",
]
REASONS: tuple[Reason, ...] = get_args(Reason)
MAX_LEFT_OUT = 10


class Parts(msgspec.Struct, frozen=True, kw_only=True):
    """The parts of one candidate's score.

    ``closeness`` is the cosine in spreads above what unrelated texts get from the store's
    embedder; ``lexical`` is ``bm25`` relative to the best BM25 of the search that found it;
    ``exact_bonus`` is what sharing the ``exact_tokens`` added (only the fused ranking adds
    it); ``covered`` of the query's ``words`` content words are in the item; ``factor`` is
    the track record's multiplier, and ``score = relevance * factor``.
    """

    cosine: float
    closeness: float
    bm25: float
    lexical: float
    exact_tokens: tuple[str, ...]
    exact_bonus: float
    covered: int
    words: int
    relevance: float
    factor: float
    score: float

    @property
    def coverage(self) -> float:
        """The share of the query's content words the item holds."""
        return self.covered / self.words if self.words else 0.0

    def to_dict(self, item: Item) -> dict[str, Any]:
        """A JSON-ready mapping, with the item's track record that gave ``factor``."""
        return {
            "cosine": round(self.cosine, 4),
            "closeness": round(self.closeness, 4),
            "bm25": round(self.bm25, 4),
            "lexical": round(self.lexical, 4),
            "exact_tokens": list(self.exact_tokens),
            "exact_bonus": round(self.exact_bonus, 4),
            "words_covered": self.covered,
            "query_words": self.words,
            "coverage": round(self.coverage, 4),
            "relevance": round(self.relevance, 4),
            "record": {
                "outcome_score": round(item.outcome_score, 4),
                "worked": round(item.worked, 4),
                "failed": round(item.failed, 4),
                "partial": round(item.partial, 4),
                "reinforcements": item.reinforcements,
                "factor": round(self.factor, 4),
            },
            "score": round(self.score, 4),
        }


class LeftOut(msgspec.Struct, frozen=True, kw_only=True):
    """A near miss: an item the recall did not return, and why (``rank`` for
    ``ranked_below_k``: its place among the items that passed the gate, from 1)."""

    item: Item
    reason: Reason
    parts: Parts
    rank: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping: the item's id, text, kind and project, the reason, its parts."""
        data: dict[str, Any] = {
            "id": self.item.id,
            "text": self.item.text,
            "kind": self.item.kind,
            "project": self.item.project,
            "reason": self.reason,
        }
        if self.rank is not None:
            data["rank"] = self.rank
        data["parts"] = self.parts.to_dict(self.item)
        return data


class Explanation(msgspec.Struct, frozen=True, kw_only=True):
    """The gate and weights an explained recall applied, and its near misses, best first."""

    unrelated: tuple[float, float]
    min_closeness: float
    min_coverage: float
    min_relevance: float
    min_share_of_best: float
    weights: dict[str, float]
    exclude_at: float
    query_words: tuple[str, ...]
    query_exact: tuple[str, ...]
    k: int
    left_out: tuple[LeftOut, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping of the gate, the weights and the near misses."""
        return {
            "gate": {
                "unrelated_cosine": {"median": self.unrelated[0], "spread": self.unrelated[1]},
                "min_closeness": self.min_closeness,
                "min_coverage": self.min_coverage,
                "min_relevance": self.min_relevance,
                "min_share_of_best": self.min_share_of_best,
                "exclude_at": self.exclude_at,
            },
            "weights": dict(self.weights),
            "query_words": list(self.query_words),
            "query_exact": list(self.query_exact),
            "left_out": [left.to_dict() for left in self.left_out],
        }


# A near miss as recall found it: the reason, the parts, the row, and the rank if any.
Miss = tuple[Reason, Parts, ItemRow, int | None]


def left_out(misses: list[Miss], now: float, keep: Collection[str]) -> tuple[LeftOut, ...]:
    """The best :data:`MAX_LEFT_OUT` of ``misses`` by score (then id), and any more of the items
    ``keep`` names, as they stand at ``now``."""
    misses.sort(key=lambda miss: (-miss[1].score, miss[2].id))
    return tuple(
        LeftOut(item=item_of(row, now), reason=reason, parts=parts, rank=rank)
        for n, (reason, parts, row, rank) in enumerate(misses)
        if n < MAX_LEFT_OUT or row.id in keep
    )
