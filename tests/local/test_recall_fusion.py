"""How recall fuses its two halves: the cosine does not outweigh the words, and an explained
recall's parts are all it takes to score its candidates again."""

import pytest

from memmesh.local._fusion import Weights, fused
from memmesh.local._recall import recall
from memmesh.local.items import MAX_K
from memmesh.local.store import Store

# Notes about one teammate and about on-call, and the one that answers the question (from
# teamdev's tuning half, where the answer ranked third: the cosine of the notes naming Lucas,
# or on-call, ran ahead of the only note holding the question's own words).
ON_CALL_NOTES = [
    (
        "Lucas's notebooks are great but his Terraform PRs often arrive without plan output; "
        "I should pair with him instead of just rejecting them.",
        ["teammates", "feedback"],
    ),
    (
        "On-call changes hands Tuesdays at 11:00. Before you hand over, write in #oncall which "
        "incidents are still open, what you silenced, and which alerts keep flapping.",
        ["oncall", "process"],
    ),
    (
        "My shell prompt is starship with the git_status module turned off, because it made "
        "every command feel slow in the monorepo.",
        ["shell", "terminal"],
    ),
    (
        "If the primary on-call doesn't acknowledge a page within 10 minutes, it escalates to "
        "the secondary and then to the engineering manager.",
        ["oncall", "paging"],
    ),
    (
        "Lucas owns the featherstore feature registry and reviews every change to its definitions.",
        ["featherstore", "registry"],
    ),
    (
        "Lucas moved the churn model's training to the shared batch nodes last quarter.",
        ["ml", "training"],
    ),
    ("Lucas and Priya pair on the riverbed backfill every Thursday afternoon.", ["riverbed"]),
    ("The on-call engineer may silence a flapping alert for at most two hours.", ["oncall"]),
]
ANSWER = (
    "I feel unprepared for SRE on-call shifts and want to shadow Adaeze for two rotations "
    "before I'm primary.",
    ["oncall", "confidence"],
)


def test_the_note_holding_the_questions_words_outranks_notes_only_about_the_same_person(
    store: Store,
) -> None:
    stored = {text: store.remember(text, tags=tags)[0].id for text, tags in ON_CALL_NOTES}
    about_lucas = [item_id for text, item_id in stored.items() if text.startswith("Lucas")]
    answer, _ = store.remember(ANSWER[0], tags=ANSWER[1])

    result = recall(store, "Does Lucas feel ready to be primary on-call?", k=MAX_K, record=False)

    ranked = [hit.item.id for hit in result.hits]
    assert answer.id in ranked
    assert set(about_lucas) & set(ranked)
    first = ranked.index(answer.id)
    assert all(first < ranked.index(note) for note in about_lucas if note in ranked)


def test_an_explained_recalls_parts_give_each_hit_its_score_again(
    store: Store,
) -> None:
    for text, tags in [*ON_CALL_NOTES, ANSWER]:
        store.remember(text, tags=tags)
    store.remember("Error E1234 from the payment provider means the card was declined")
    weights = Weights(vector=store.embedder.vector_weight)
    for query in ("who is primary on-call", "E1234", "how are alerts handed over", "Lucas"):
        result = recall(store, query, k=MAX_K, record=False, explain=True, answer=False)
        for hit in result.hits:
            parts = hit.parts
            assert parts is not None
            relevance = fused(weights, parts.closeness, parts.lexical, bool(parts.exact_tokens))
            assert relevance == pytest.approx(parts.relevance, rel=1e-12)
            assert hit.score == pytest.approx(relevance * parts.factor, rel=1e-12)
