"""Corroboration: one fact that several members published is one hit naming them all.

recall-team merges copies of one item (:func:`memmesh.team.rank.merge`); this goes further and
merges *different* items by *different* authors that state the same fact, after every hit has
been verified, filtered, withdrawn where its author says so, and ranked. Two texts state the
same fact (:func:`same_fact`) when

* they are the same words, ignoring case, spacing and punctuation, with the same exact tokens
  (so ``use --force`` and ``use force`` stay apart); or
* one restates the other (:class:`Rule`): they name the same exact tokens (error codes,
  flags, commands, services, versions: what makes a fact specific, so ``run X in svc-a`` and
  ``run X in svc-b`` stay apart), and no number one lacks while the other names one it lacks
  (``5 times`` and ``3 times``); they share at least :data:`MIN_SHARED_WORDS` content words
  and at least :data:`MIN_OVERLAP` of them (Jaccard); and one is no edit of the other: their
  words, in order, are less than :data:`MAX_SIMILARITY` alike. An edit of a few words can
  change the meaning (``before`` and ``after``, ``X over Y`` and ``Y over X``) and still
  share every word.

The rule reads words only. It can also ask that the asker's own embedder (never a source's
vectors) put the two texts at least its ``min_cosine`` near (``Rule.cosine``); measured, that
prevents no wrong merge the words let through and misses restatements, so recall-team does
not, and its merges are the same whatever embedder a member uses.

The rule was chosen on teamdev's pairs and on answers over generated memories on shared
topics, preferring a missed merge (two hits for one fact) to a wrong one (a fact hidden behind
another, its author shown as saying what they did not). So it is strict: it merges 3 of
teamdev's 12 restatements and no two different facts measured; every looser variant measured
merges different facts in the generated answers (docs/benchmarks.md, "Corroboration";
``bench/corroboration.py``). Words are compared, not meanings: two texts naming the same
identifiers and many of the same words but making different claims may still be merged, which
is why every merged item's author, id and text stay in the answer.
"""

import functools
from collections.abc import Callable, Sequence
from difflib import SequenceMatcher
from typing import Literal

import msgspec
import numpy as np

from memmesh import text as _text
from memmesh.embed import Embedder, Vectors

__all__ = [
    "MAX_SIMILARITY",
    "MIN_OVERLAP",
    "MIN_SHARED_WORDS",
    "RULE",
    "Rule",
    "Statement",
    "corroborating_groups",
    "same_fact",
]

# teamdev's 12 restatement pairs share 6 to 14 content words, a Jaccard of 0.26 to 0.47, and
# its 865 other same-project pairs at most 5 words and 0.17; but different facts of one topic
# and one template (bench/team_recall.py's corpus) often share 6 or 7 words, now and then 8
# (one decision, two reasons), seldom 9.
MIN_SHARED_WORDS = 9
MIN_OVERLAP = 0.22
# From this similarity of their word sequences (difflib's ratio, stopwords included) texts
# that are not the same words are edits of one another: teamdev's restatements reach 0.47,
# a sentence of 15 words with 3 of them changed 0.8.
MAX_SIMILARITY = 0.6


class Rule(msgspec.Struct, frozen=True, kw_only=True):
    """When one text restates another (the measurement varies it; recall-team uses
    :data:`RULE`)."""

    min_shared_words: int = MIN_SHARED_WORDS
    min_overlap: float = MIN_OVERLAP
    max_similarity: float = MAX_SIMILARITY
    # What the texts' exact tokens must do: be the same ("same"); not each hold one the other
    # lacks ("no_conflict"); hold one in common if either names any ("one_shared"); or
    # nothing ("off").
    identifiers: Literal["same", "no_conflict", "one_shared", "off"] = "same"
    # Texts that each name a number the other lacks are not merged.
    numbers: bool = True
    # The asker's embedder must place the texts at least its ``min_cosine`` near.
    cosine: bool = False


RULE = Rule()


class Statement:
    """What comparing a text needs, each part computed once, when first asked for: its words,
    exact and content tokens and numbers (consolidation's rules read most texts' own parts
    only, and ask for these of the few pairs they compare as restatements)."""

    def __init__(self, text: str) -> None:
        self.text = text

    @functools.cached_property
    def words(self) -> tuple[str, ...]:
        return tuple(_text.words(self.text))

    @functools.cached_property
    def exact(self) -> frozenset[str]:
        return frozenset(_text.exact_tokens(self.text))

    @functools.cached_property
    def content(self) -> frozenset[str]:
        """The stemmed content words, not the compound tokens (those are ``exact``)."""
        return frozenset(t for t in _text.tokens(self.text) if t.isalnum())

    @functools.cached_property
    def numbers(self) -> frozenset[str]:
        return frozenset(t for t in _text.key_tokens(self.text) if any(map(str.isdigit, t)))


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
    shared = len(a.content & b.content)
    if shared < rule.min_shared_words or shared < rule.min_overlap * len(a.content | b.content):
        return False
    if not _identifiers_agree(a.exact, b.exact, rule.identifiers):
        return False
    if rule.numbers and a.numbers - b.numbers and b.numbers - a.numbers:
        return False
    edit = SequenceMatcher(None, a.words, b.words, autojunk=False).ratio()
    if edit >= rule.max_similarity:
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


def _identifiers_agree(a: frozenset[str], b: frozenset[str], how: str) -> bool:
    """Whether two texts' exact tokens agree as ``how`` (:attr:`Rule.identifiers`) asks."""
    if how == "same":
        return a == b
    if how == "no_conflict":
        return not (a - b and b - a)
    if how == "one_shared":
        return bool(a & b) or not (a or b)
    return True
