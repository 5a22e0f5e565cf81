"""What became of each hit a recall-team source returned, in one set of words: `mem team
recall-team --explain` prints them with their numbers, the page shows them beside its own."""

import pytest

from memmesh.team._explain import FATES, Fate, Returned, TeamExplanation
from memmesh.team.fates import fate_text, fate_words

EXPLANATION = TeamExplanation(k=3, min_relevance=0.3, min_share_of_best=0.4, sources=())


def _returned(fate: Fate, **fields: object) -> Returned:
    given: dict[str, object] = {
        "id": "01J9ZC4XQM0000000000000000",
        "key_id": "k3f9a2k3f9a2k3f9",
        "author": "ada",
        "version": 1,
        "source_score": 0.5,
        "cosine": 0.5,
        "fate": fate,
    }
    return Returned(**{**given, **fields})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fate", "fields", "said"),
    [
        ("returned", {"rank": 1, "score": 0.8125}, "kept, hit #1, score 0.812"),
        (
            "also",
            {"rank": 2, "score": 0.5},
            "kept, states the fact of hit #2 (listed in its also), score 0.500",
        ),
        (
            "duplicate",
            {"kept_from": "peer bob"},
            "cut, a duplicate of the copy kept (from peer bob)",
        ),
        (
            "replaced_by_author",
            {"kept_from": "peer ada"},
            "cut, replaced by its live author's own copy (from peer ada)",
        ),
        ("not_by_author", {}, "cut, not by --author bob"),
        (
            "below_floor",
            {"score": 0.2},
            "cut, nothing reached the relevance floor 0.30, so the answer abstained (score 0.200)",
        ),
        (
            "far_below_best",
            {"score": 0.1},
            "cut, score 0.100, under 40% of the best hit's: too far behind to be worth showing",
        ),
        ("ranked_below_k", {"rank": 4, "score": 0.6}, "cut, ranked #4, below -k 3 (score 0.600)"),
        ("bad_signature", {}, "cut, unverifiable: its signature does not hold"),
        (
            "below_gate",
            {},
            "cut, below the relevance gate: not close enough to the query, "
            "without an exact token of it and with too few of its words",
        ),
    ],
)
def test_each_fate_is_said_with_the_numbers_that_decided_it(
    fate: Fate, fields: dict[str, object], said: str
) -> None:
    assert fate_text(_returned(fate, **fields), EXPLANATION, "bob") == said


def test_a_kept_hit_never_scored_says_so() -> None:
    assert fate_text(_returned("returned", rank=1), EXPLANATION, None) == (
        "kept, hit #1, not scored"
    )


def test_every_fate_has_words_that_begin_what_the_full_text_says() -> None:
    for fate in FATES:
        words = fate_words(fate)
        assert words.startswith(("kept", "cut, ")), fate
        full = fate_text(_returned(fate, rank=1, score=0.5), EXPLANATION, "bob")
        assert full.split(",")[0] == words.split(",")[0], fate


def test_a_fate_said_by_itself_alone_is_said_whole_in_both() -> None:
    plain: tuple[Fate, ...] = (
        "bad_signature",
        "other_team",
        "outside_roster",
        "revoked",
        "peer_served_another_key",
        "withdrawn_by_author",
        "below_gate",
    )
    for fate in plain:
        assert fate_text(_returned(fate), EXPLANATION, None) == fate_words(fate)
    assert fate_words("withdrawn_by_author") == (
        "cut, withdrawn: its author's live peer no longer publishes this version (retracted "
        "or revised since)"
    )


def test_control_characters_a_source_sent_are_not_passed_on() -> None:
    said = fate_text(_returned("duplicate", kept_from="peer \x1b[31mbob"), EXPLANATION, None)
    assert "\x1b" not in said
