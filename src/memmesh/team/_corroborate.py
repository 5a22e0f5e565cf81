"""Corroboration: one fact that several members published is one hit naming them all.

recall-team merges copies of one item (:func:`memmesh.team.rank.merge`); this goes further and
merges *different* items by *different* authors that state the same fact, after every hit has
been verified, filtered, withdrawn where its author says so, and ranked. Two texts state the
same fact (:func:`same_fact`) when

* they are the same words, ignoring case, spacing and punctuation, with the same exact tokens
  (so ``use --force`` and ``use force`` stay apart); or
* one restates the other (:class:`Rule`): they share at least :data:`MIN_SHARED_WORDS`
  content words and at least :data:`MIN_OVERLAP` of their content words (Jaccard); if either
  names exact tokens (an error code, a flag, a version: what makes a fact specific), they
  share one; and they are no near copy, since a near copy that changes or moves a few words
  can change the meaning (``5 times`` and ``3 times``, ``before`` and ``after``, ``X over Y``
  and ``Y over X``).

The rule reads words only. It can also ask that the asker's own embedder (never a source's
vectors) put the two texts at least its ``min_cosine`` near (``Rule.cosine``); measured, that
prevents no wrong merge the words let through and misses restatements, so recall-team does
not, and its merges are the same whatever embedder a member uses.

The thresholds were chosen on teamdev's same-project pairs, preferring a missed merge (two
hits for one fact) to a wrong one (a fact hidden behind another): see docs/benchmarks.md,
"Corroboration", and ``bench/corroboration.py``. Words are compared, not meanings: two texts
that share most of their words but make different claims in other words may still be
merged, which is why every merged item's id and author stay in the answer.
"""

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal

import msgspec
import numpy as np

from memmesh import text as _text
from memmesh.embed import Embedder, Vectors

__all__ = [
    "MIN_OVERLAP",
    "MIN_SHARED_WORDS",
    "NEAR_COPY_WORDS",
    "RULE",
    "Rule",
    "Statement",
    "corroborating_groups",
    "same_fact",
]

# teamdev's 12 restatement pairs share 6 to 14 content words, a Jaccard of 0.26 to 0.47; its
# 865 other same-project pairs at most 5 words and 0.17: both thresholds sit in that gap.
MIN_SHARED_WORDS = 6
MIN_OVERLAP = 0.22
# Texts whose words differ by this many or fewer (counted with repeats, stopwords included)
# are near copies: not merged unless they are the same words.
NEAR_COPY_WORDS = 4


class Rule(msgspec.Struct, frozen=True, kw_only=True):
    """When one text restates another (the measurement varies it; recall-team uses
    :data:`RULE`)."""

    min_shared_words: int = MIN_SHARED_WORDS
    min_overlap: float = MIN_OVERLAP
    near_copy_words: int = NEAR_COPY_WORDS
    # Exact tokens (an error code, a flag, a version: the fact's anchor) in common: required
    # of texts that name any ("named"), of every pair ("always"), or not at all ("off").
    anchor: Literal["named", "always", "off"] = "named"
    # The asker's embedder must place the texts at least its ``min_cosine`` near.
    cosine: bool = False


RULE = Rule()


class Statement:
    """What comparing a text needs, computed once: its words, exact and content tokens."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.words = tuple(_text.words(text))
        self.exact = frozenset(_text.exact_tokens(text))
        # The stemmed content words, not the compound tokens (those are ``exact``).
        self.content = frozenset(t for t in _text.tokens(text) if t.isalnum())


def same_fact(
    a: Statement,
    b: Statement,
    cosine: Callable[[], float],
    *,
    min_cosine: float,
    rule: Rule = RULE,
) -> bool:
    """Whether ``a`` and ``b`` state the same fact (see the module docstring); ``cosine`` gives
    their cosine under the asker's embedder, asked only when the words let the pair through."""
    if a.words == b.words and a.exact == b.exact:
        return True
    shared = a.content & b.content
    if len(shared) < rule.min_shared_words:
        return False
    if len(shared) < rule.min_overlap * len(a.content | b.content):
        return False
    named = bool(a.exact or b.exact) if rule.anchor == "named" else rule.anchor == "always"
    if named and not a.exact & b.exact:
        return False
    if _differing_words(a, b) <= rule.near_copy_words:
        return False
    return not rule.cosine or cosine() >= min_cosine


def corroborating_groups(
    texts: Sequence[str],
    authors: Sequence[str],
    embedder: Embedder,
    *,
    limit: int,
    rule: Rule = RULE,
) -> list[list[int]]:
    """The first ``limit`` facts among ``texts`` (best ranked first, written by ``authors``),
    each as the indexes of the texts that state it, best first.

    A text joins the first group each of whose texts states the same fact and none of whose
    texts is by its author; otherwise it starts a group of its own, while there are fewer than
    ``limit``. Every group's first text is its best ranked, so the groups keep the order of
    their first texts.
    """
    statements = [Statement(text) for text in texts]
    vectors: dict[int, Vectors] = {}

    def vector(i: int) -> Vectors:
        if i not in vectors:
            vectors[i] = embedder.embed([texts[i]])[0]
        return vectors[i]

    def same(i: int, j: int) -> bool:
        def cosine() -> float:
            return float(np.dot(vector(i), vector(j)))

        return same_fact(
            statements[i], statements[j], cosine, min_cosine=embedder.min_cosine, rule=rule
        )

    groups: list[list[int]] = []
    for i in range(len(texts)):
        for group in groups:
            if all(authors[j] != authors[i] and same(j, i) for j in group):
                group.append(i)
                break
        else:
            if len(groups) < limit:
                groups.append([i])
    return groups


def _differing_words(a: Statement, b: Statement) -> int:
    """How many words one text has that the other lacks, counted with repeats (the same words
    in another order differ by none)."""
    ours, theirs = Counter(a.words), Counter(b.words)
    return ((ours - theirs) + (theirs - ours)).total()
