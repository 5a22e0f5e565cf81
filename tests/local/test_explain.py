"""An explained recall over a real store: the parts of each hit's score, and each near miss
left out for exactly one reason, without changing what a plain recall returns."""

from pathlib import Path

import pytest

from memmesh.local import outcomes
from memmesh.local._explain import MAX_LEFT_OUT, REASONS, LeftOut
from memmesh.local._recall import (
    MIN_CLOSENESS,
    MIN_COVERAGE,
    W_EXACT,
    W_LEXICAL,
    Mode,
    Recall,
    recall,
)
from memmesh.local.store import Store
from tests._clock import FakeClock
from tests.local.test_recall import FACTS

QUERY = "how many times does the billing service retry failed webhooks"
RETRIES = "The billing service retries failed webhooks 5 times with exponential backoff"
DEAD_LETTERS = "Billing webhooks that keep failing go to the dead-letter queue"
SEARCH = "The search service is rebuilt by a cron job on Sundays"
WORKER = "Failed webhooks are retried by the billing worker every ten minutes"


def _left_out(answer: Recall, item_id: str) -> LeftOut:
    """The one near miss of ``answer`` that is ``item_id``."""
    assert answer.explanation is not None
    assert item_id not in {hit.item.id for hit in answer.hits}
    (left,) = [left for left in answer.explanation.left_out if left.item.id == item_id]
    return left


def _explained(store: Store, **options: object) -> Recall:
    return recall(store, QUERY, project="shop", record=False, explain=True, **options)  # type: ignore[arg-type]


def test_an_item_matching_too_little_of_the_query_is_left_out_below_the_gate(
    store: Store,
) -> None:
    store.remember(RETRIES, project="shop")
    # Shares only "service", and means something else: no closer than unrelated texts get.
    search, _ = store.remember(
        "The office plants are watered by the front desk service", project="shop"
    )

    left = _left_out(_explained(store), search.id)

    assert left.reason == "below_gate"
    assert left.parts.closeness < MIN_CLOSENESS
    assert (left.parts.covered, left.parts.words) == (1, 7)
    assert left.parts.coverage < MIN_COVERAGE
    assert left.parts.exact_tokens == ()


def test_an_item_with_a_poor_track_record_is_left_out_for_it(home: Path) -> None:
    with Store(home, author="tester", clock=FakeClock()) as store:
        failing, _ = store.remember(RETRIES, project="shop")
        store.remember(DEAD_LETTERS, project="shop")
        store.outcome(failing.id, "failed")
        store.outcome(failing.id, "failed")

        left = _left_out(_explained(store), failing.id)

    assert left.reason == "outcome_excluded"
    assert left.item.outcome_score <= outcomes.EXCLUDE_AT
    assert left.item.failed == pytest.approx(2.0)
    assert left.parts.factor == pytest.approx(outcomes.rank_factor(-0.6, 0))


def test_an_item_of_another_project_that_would_match_is_left_out_of_scope(store: Store) -> None:
    store.remember(RETRIES, project="shop")
    elsewhere, _ = store.remember(WORKER, project="ops")

    answer = _explained(store)
    left = _left_out(answer, elsewhere.id)

    assert left.reason == "out_of_scope"
    assert left.item.project == "ops"
    assert answer.projects == ("shop", "global")
    # Only explaining looks outside the scope: a plain recall never reads the item.
    assert elsewhere.id not in {h.item.id for h in recall(store, QUERY, project="shop", k=10).hits}


def test_an_item_that_matches_below_the_first_k_is_left_out_with_its_rank(store: Store) -> None:
    store.remember(RETRIES, project="shop")
    store.remember(DEAD_LETTERS, project="shop")
    third, _ = store.remember("Webhooks from billing are retried until they stop failing")

    answer = _explained(store, k=1)
    hits = {hit.item.id for hit in _explained(store, k=3).hits}
    left = _left_out(answer, third.id)

    assert third.id in hits
    assert left.reason == "ranked_below_k"
    assert left.rank is not None
    assert left.rank > 1
    assert answer.explanation is not None
    assert answer.explanation.k == 1


def test_an_item_outside_the_restriction_that_would_match_is_withheld(store: Store) -> None:
    published, _ = store.remember(RETRIES, project="shop")
    private, _ = store.remember(DEAD_LETTERS, project="shop")

    answer = _explained(store, restrict=[published.id])
    left = _left_out(answer, private.id)

    assert [hit.item.id for hit in answer.hits] == [published.id]
    assert left.reason == "withheld"


def test_nothing_allowed_still_says_what_was_withheld(store: Store) -> None:
    private, _ = store.remember(RETRIES, project="shop")
    answer = _explained(store, restrict=[])
    assert answer.abstained
    assert _left_out(answer, private.id).reason == "withheld"


def test_every_reason_is_one_of_the_closed_set(store: Store) -> None:
    for text in FACTS:
        store.remember(text, project="shop")
    store.remember(WORKER, project="ops")
    answer = _explained(store, k=1)
    assert answer.explanation is not None
    assert {left.reason for left in answer.explanation.left_out} <= set(REASONS)
    assert set(REASONS) == {
        "below_gate", "below_floor", "far_below_best", "not_in_force", "outcome_excluded",
        "out_of_scope",
        "ranked_below_k", "withheld",
    }  # fmt: skip


def test_a_hits_parts_add_up_to_its_score(store: Store) -> None:
    store.remember("npm install fails with node-gyp error E1234 unless python3-dev is installed")
    store.remember("Error E1235 from the payment provider means the card expired")
    answer = recall(store, "what does error E1234 mean", record=False, explain=True)

    first = answer.hits[0]
    parts = first.parts
    assert parts is not None
    assert parts.exact_tokens == ("e1234",)
    assert parts.exact_bonus == pytest.approx(W_EXACT)
    assert parts.relevance == pytest.approx(
        store.embedder.vector_weight * max(parts.closeness, 0.0)
        + W_LEXICAL * parts.lexical
        + parts.exact_bonus
    )
    assert parts.score == pytest.approx(parts.relevance * parts.factor)
    assert (first.score, first.cosine, first.lexical) == (parts.score, parts.cosine, parts.lexical)
    assert 0 < parts.lexical <= 1.0  # relative to the best BM25 among the candidates
    assert parts.bm25 > 0


def test_near_misses_are_capped_and_best_first(store: Store) -> None:
    for n in range(MAX_LEFT_OUT + 5):
        store.remember(f"Step {n}: the billing service retries failed webhooks {n} times")
    answer = recall(store, QUERY, k=1, record=False, explain=True)
    assert answer.explanation is not None
    left = answer.explanation.left_out
    assert len(left) == MAX_LEFT_OUT
    scores = [miss.parts.score for miss in left]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "vector"])
@pytest.mark.parametrize("k", [1, 3, 10])
def test_explaining_returns_exactly_the_hits_of_a_plain_recall(
    home: Path, mode: Mode, k: int
) -> None:
    with Store(home, author="tester", clock=FakeClock()) as store:
        items = [store.remember(text, project="shop")[0] for text in FACTS]
        store.remember(WORKER, project="ops")
        store.outcome(items[0].id, "worked")
        store.outcome(items[1].id, "failed")
        for query in (QUERY, "how do I run migrations", "API", "E1234", "rate limit per token"):
            for restrict in (None, [item.id for item in items[::2]]):
                options = {"k": k, "project": "shop", "mode": mode, "restrict": restrict}
                plain = recall(store, query, **options)  # type: ignore[arg-type]
                explained = recall(store, query, **options, explain=True)  # type: ignore[arg-type]
                assert [(h.item, h.score, h.cosine, h.lexical) for h in plain.hits] == [
                    (h.item, h.score, h.cosine, h.lexical) for h in explained.hits
                ], (query, restrict)
                assert plain.explanation is None
                assert all(hit.parts is None for hit in plain.hits)


def test_only_an_explained_recall_searches_beyond_the_scope(store: Store) -> None:
    for text in FACTS:
        store.remember(text, project="shop")
    searches: list[str] = []
    with store.searching() as conn:
        # Recall reads on this thread's connection: count its full-text searches.
        conn.set_trace_callback(lambda sql: searches.append(sql) if "MATCH" in sql else None)
        try:
            recall(store, QUERY, project="shop", record=False)
            plain = len(searches)
            recall(store, QUERY, project="shop", record=False, explain=True)
        finally:
            conn.set_trace_callback(None)
    assert plain == 1
    # Its own search, and the same one in every project.
    assert len(searches) - plain == 2


def test_an_explained_abstention_gives_the_gate_it_applied(store: Store) -> None:
    store.remember(RETRIES)
    answer = recall(store, "the of and", record=False, explain=True)
    assert answer.abstained
    assert answer.explanation is not None
    assert answer.explanation.left_out == ()
    assert answer.explanation.unrelated == store.embedder.unrelated
    assert answer.explanation.min_coverage == MIN_COVERAGE
