"""What became of each hit a recall-team source returned (its fate, see
:mod:`memmesh.team._explain`), in words: `mem team recall-team --explain` prints
:func:`fate_text`, the page's "Ask the team" shows :func:`fate_words` beside the rank, the
scores and the source it shows of its own. Both begin the same way, so the two never differ
on why a hit was kept or cut.
"""

from memmesh.team._explain import Returned, TeamExplanation
from memmesh.text import printable

__all__ = ["fate_text", "fate_words"]

# What each fate is called by itself, without the numbers that decided it.
_WORDS: dict[str, str] = {
    "returned": "kept",
    "also": "kept, states the fact of another hit",
    "bad_signature": "cut, unverifiable: its signature does not hold",
    "other_team": "cut, signed for another team",
    "outside_roster": "cut, its author's key is not on the team's roster",
    "revoked": "cut, its author's key was revoked",
    "peer_served_another_key": "cut, a peer serves only its owner's items, and this is another "
    "key's",
    "not_in_audience": "cut, its audience leaves you out (a source served it against the roster)",
    "author_may_not_publish": "cut, the roster does not let its author publish it",
    "duplicate": "cut, a duplicate of the copy kept",
    "replaced_by_author": "cut, replaced by its live author's own copy",
    "withdrawn_by_author": "cut, withdrawn: its author's live peer no longer publishes this "
    "version (retracted or revised since)",
    "not_by_author": "cut, not by the author asked for",
    "below_gate": "cut, below the relevance gate: not close enough to the query, without an "
    "exact token of it and with too few of its words",
    "below_floor": "cut, nothing reached the relevance floor, so the answer abstained",
    "far_below_best": "cut, too far behind the best hit to be worth showing",
    "ranked_below_k": "cut, ranked below k",
}


def fate_words(fate: str) -> str:
    """What ``fate`` means by itself: ``kept``, ``cut, signed for another team``; a fate this
    version does not know is said as its name."""
    return _WORDS.get(fate, fate.replace("_", " "))


def fate_text(each: Returned, explanation: TeamExplanation, author: str | None) -> str:
    """What became of ``each``, with the numbers that decided it (``explanation``'s floor,
    share of the best and ``k``; ``author``, the one asked for): ``kept, hit #1, score
    0.812``, ``cut, ranked #4, below -k 3 (score 0.600)``."""
    score = f"score {each.score:.3f}" if each.score is not None else "not scored"
    fate = each.fate
    if fate == "returned":
        return f"kept, hit #{each.rank}, {score}"
    if fate == "also":
        return f"kept, states the fact of hit #{each.rank} (listed in its also), {score}"
    if fate in ("duplicate", "replaced_by_author"):
        return f"{fate_words(fate)} (from {printable(each.kept_from)})"
    if fate == "not_by_author":
        return f"cut, not by --author {printable(author or '')}"
    if fate == "below_floor":
        return (
            f"cut, nothing reached the relevance floor {explanation.min_relevance:.2f}, so the "
            f"answer abstained ({score})"
        )
    if fate == "far_below_best":
        return (
            f"cut, {score}, under {explanation.min_share_of_best:.0%} of the best hit's: too "
            "far behind to be worth showing"
        )
    if fate == "ranked_below_k":
        return f"cut, ranked #{each.rank}, below -k {explanation.k} ({score})"
    return fate_words(fate)
