"""Which texts of two collections could contradict each other, found without comparing every
pair. The rules (:mod:`memmesh.consolidate.conflicts`) flag two texts only when they speak of
one thing in the same words but for

* their values (numbers, versions, units) or a negation, with at most one word more on a side
  (``the webhook timeout is 30 seconds`` and ``... 60 seconds``); or
* a choice of at most three words in one place (``we use Redis locks for the job queue`` and
  ``we use Postgres advisory locks for the job queue``).

So a pair is a *candidate*, worth the rules' time, when its texts, read as their words
(stemmed, stopwords left out, :func:`reading`), either hold the same words of letters alone
once at most one is taken out of each (numbers aside), or hold the same words and numbers in
order once at most :data:`RUN` consecutive ones are taken out of each (and some are left).
Words the rules pass over (``use``, ``always``) count here: such a word on each side uses up
the one word each may lose. Every contradiction among the labelled pairs of
``bench/data/pairs.json`` is a candidate.

Each text gives a key per way of taking words out (the sum of the hashes of the words left),
so finding the candidates is looking keys up in dictionaries, and their cost is about that of
reading the words: thousands of texts against tens of thousands take a fraction of a second,
and the rules read only the texts of candidates.
"""

from collections.abc import Sequence
from typing import NamedTuple

from memmesh import text as _text

__all__ = ["RUN", "Reading", "candidate", "candidates", "reading"]

# The most consecutive words taken out of each text: the rules' longest choice.
RUN = 3


class Reading(NamedTuple):
    """A text's keys: of its distinct words of letters, whole and with one taken out
    (``letters``), and of its words and numbers in order with a run taken out (``runs``)."""

    letters: frozenset[int]
    runs: frozenset[int]


def reading(text: str) -> Reading:
    """The keys of ``text`` (see the module docstring)."""
    stem, stopwords = _text.stem, _text.STOPWORDS
    every = [stem(w) for w in _text.words(text) if w not in stopwords]
    letters = {hash(w) for w in every if w.isalpha()}
    whole = sum(letters)
    # Some word must be left: a text of one word loses none.
    out = [whole - h for h in letters] if len(letters) > 1 else []
    one_out = frozenset([whole, *out]) if letters else frozenset()
    return Reading(one_out, _runs([hash(w) for w in every]))


def candidate(a: Reading, b: Reading) -> bool:
    """Whether the texts read as ``a`` and ``b`` are worth the rules' time."""
    return not (a.letters.isdisjoint(b.letters) and a.runs.isdisjoint(b.runs))


def candidates(left: Sequence[Reading], right: Sequence[Reading]) -> list[tuple[int, int]]:
    """The pairs ``(i, j)`` whose ``left[i]`` and ``right[j]`` are :func:`candidate`, in
    order."""
    letters: dict[int, list[int]] = {}
    runs: dict[int, list[int]] = {}
    for i, each in enumerate(left):
        for key in each.letters:
            letters.setdefault(key, []).append(i)
        for key in each.runs:
            runs.setdefault(key, []).append(i)
    found: list[tuple[int, int]] = []
    for j, each in enumerate(right):
        met: set[int] = set()
        for keys, index in ((each.letters, letters), (each.runs, runs)):
            for key in keys:
                listed = index.get(key)
                if listed:
                    met.update(listed)
        found += [(i, j) for i in met]
    return sorted(found)


def _runs(hashes: list[int]) -> frozenset[int]:
    """One key for each way of taking at most :data:`RUN` consecutive words out of the words
    hashed as ``hashes`` and leaving some: the sum of the hashes left."""
    prefix = [0]
    for value in hashes:
        prefix.append(prefix[-1] + value)
    total, size = prefix[-1], len(hashes)
    return frozenset(
        [
            total - prefix[start + width] + prefix[start]
            for width in range(min(RUN, size - 1) + 1)
            for start in range(size - width + 1)
        ]
    )
