"""Recall's cached gate tokens and rows: a changed item is always judged by what it says now."""

import importlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memmesh import text as _text
from memmesh.embed import closeness
from memmesh.local import outcomes
from memmesh.local._recall import W_EXACT, W_LEXICAL, Hit, recall
from memmesh.local.store import Store
from tests._clock import FakeClock

# The module, not the function ``memmesh.local._recall`` that the package exports.
recall_module = importlib.import_module("memmesh.local._recall")
index_module = importlib.import_module("memmesh.local._index")

COPY = "01JC0PY0000000000000000001"
QUERIES = (
    "error E1234 from the payment provider",
    "node-gyp build on macOS",
    "how many times are webhooks retried",
    "nightly backup host backup-07",
    "where do feature flags live",
)


@pytest.fixture
def store(home: Path) -> Iterator[Store]:
    """A store on a fixed clock, so that two recalls decay outcomes to the same instant."""
    with Store(home, author="tester", clock=FakeClock()) as opened:
        yield opened


def _put(store: Store, text: str, tags: tuple[str, ...] = ()) -> None:
    store.put(
        item_id=COPY, text=text, kind="fact", project="global", tags=tags, author="bob",
        created_at=0.0, vector=None,
    )  # fmt: skip


def _answers(store: Store) -> list[tuple[Hit, ...]]:
    return [recall(store, query, k=10, record=False).hits for query in QUERIES]


def _assert_warm_equals_cold(store: Store) -> None:
    """Recall with whatever the cache holds answers exactly as with an empty cache."""
    warm = _answers(store)
    store.index._rows_read.clear()  # rows and their tokens
    assert _answers(store) == warm


def _assert_scores_from_current_text(store: Store) -> None:
    """Every hit's score is what the item's current text and tags give, tokenized afresh."""
    for query in QUERIES:
        exact = _text.exact_tokens(query)
        for hit in recall(store, query, k=10, record=False).hits:
            item_text = hit.item.text + " " + " ".join(hit.item.tags)
            bonus = W_EXACT if _text.shares_exact_token(exact, item_text) else 0.0
            relevance = _vector_part(store, hit.cosine) + W_LEXICAL * hit.lexical + bonus
            factor = outcomes.rank_factor(hit.item.outcome_score, hit.item.reinforcements)
            assert hit.score == pytest.approx(relevance * factor, rel=1e-12), hit.item.text


def _vector_part(store: Store, cosine: float) -> float:
    """What a cosine adds to the fused score: its closeness, weighed as the embedder says."""
    return store.embedder.vector_weight * max(closeness(cosine, store.embedder.unrelated), 0.0)


def _revise_the_oldest(store: Store) -> None:
    oldest = store.items()[-1]
    store.revise(oldest.id, "Error E9999 from the payment provider is a timeout")


def _forget_the_newest(store: Store) -> None:
    store.forget(store.items()[0].id)


def _purge_the_copy(store: Store) -> None:
    assert store.purge(COPY)


def _put_over_the_newest_row(store: Store) -> None:
    _put(store, "node-gyp needs python3 on the build host")


def _reinforce_with_a_new_tag(store: Store) -> None:
    store.remember("Feature flags live in config/flags.yaml", tags=["node-gyp"])


def _fail_the_newest(store: Store) -> None:
    store.outcome(store.items()[0].id, "failed")


def _reindex(store: Store) -> None:
    store.reindex()


WRITES: dict[str, Callable[[Store], None]] = {
    "revise": _revise_the_oldest,
    "forget": _forget_the_newest,
    "purge": _purge_the_copy,
    "put over the newest row": _put_over_the_newest_row,
    "reinforce with a new tag": _reinforce_with_a_new_tag,
    "outcome": _fail_the_newest,
    "reindex": _reindex,
}


@pytest.mark.parametrize("write", list(WRITES), ids=list(WRITES))
def test_recall_after_a_write_answers_as_with_an_empty_cache(store: Store, write: str) -> None:
    store.remember("Error E1234 from the payment provider means the card was declined")
    store.remember("The nightly backup runs on backup-07 at 03:00", tags=["ops"])
    store.remember("Feature flags live in config/flags.yaml", tags=["config"])
    store.remember("The billing service retries webhooks 5 times")
    _put(store, "node-gyp fails on macOS until the Xcode tools are installed")
    _answers(store)  # fills the cache with every item as it was

    WRITES[write](store)

    _assert_scores_from_current_text(store)
    _assert_warm_equals_cold(store)


def test_a_tag_added_by_reinforcement_counts_in_the_gate_at_once(store: Store) -> None:
    item, _ = store.remember("Use pnpm, not npm, in the frontend monorepo")
    query = "quokka-ledger rotation"
    assert recall(store, query, record=False).abstained  # cached: no exact token, no words

    store.remember("Use pnpm, not npm, in the frontend monorepo", tags=["quokka-ledger"])

    (hit,) = recall(store, query, record=False).hits
    assert hit.item.id == item.id
    assert hit.item.tags == ("quokka-ledger",)


def test_a_revised_text_loses_the_exact_token_it_no_longer_holds(store: Store) -> None:
    old, _ = store.remember("Error E1234 from the payment provider means the card was declined")
    store.remember("Invoices are emailed on the first of the month")
    (hit,) = recall(store, "E1234", record=False).hits
    assert hit.item.id == old.id

    _, new = store.revise(old.id, "A declined card shows up as a payment provider error")

    for hit in recall(store, "E1234", record=False).hits:
        assert hit.item.id != old.id
        if hit.item.id == new.id:  # found by its vector or words, but with no exact bonus
            vector = _vector_part(store, hit.cosine)
            assert hit.score == pytest.approx(vector + W_LEXICAL * hit.lexical)


def test_a_purged_item_is_never_recalled_again(store: Store) -> None:
    _put(store, "node-gyp fails on macOS until the Xcode tools are installed")
    assert [h.item.id for h in recall(store, "node-gyp", record=False).hits] == [COPY]

    assert store.purge(COPY)

    assert recall(store, "node-gyp", record=False).abstained


def test_a_change_written_through_another_connection_is_seen_at_once(
    store: Store, home: Path
) -> None:
    kept, _ = store.remember("The billing service retries webhooks 5 times", tags=["billing"])
    gone, _ = store.remember("Webhooks are signed with HMAC-SHA256 before they are retried")
    assert len(recall(store, "webhooks retried", record=False).hits) == 2  # both rows cached

    with Store(home, author="tester", clock=store.clock) as other:
        other.outcome(kept.id, "worked")
        other.remember("The billing service retries webhooks 5 times", tags=["retries"])
        other.forget(gone.id)

    (hit,) = recall(store, "webhooks retried", record=False).hits
    assert hit.item == store.get(kept.id)
    assert (hit.item.worked, hit.item.reinforcements) == (1.0, 1)
    assert hit.item.tags == ("billing", "retries")


def test_the_rows_read_are_bounded(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_module, "_ROWS_READ_MAX", 3)
    for n in range(6):
        store.remember(f"Webhook retry rule number {n} for the billing service")

    hits = recall(store, "webhook retry rule billing", k=10, record=False).hits

    assert len(hits) == 6
    assert len(store.index._rows_read) == 3


def test_hits_carry_the_stored_items(store: Store) -> None:
    first, _ = store.remember("The billing service retries webhooks 5 times", tags=["billing"])
    store.outcome(first.id, "worked")
    store.clock.now += 30 * 24 * 3600.0  # type: ignore[attr-defined]
    store.remember("Webhooks are signed with HMAC-SHA256 before they are retried")

    hits = recall(store, "webhooks retried", k=10, record=False).hits

    assert len(hits) == 2
    for hit in hits:
        assert hit.item == store.get(hit.item.id)


def test_the_gate_cache_is_bounded() -> None:
    # Tokens are kept beside their rows, in the one bounded cache of rows read.
    maxsize = index_module._ROWS_READ_MAX
    assert maxsize is not None
    assert 0 < maxsize <= 1 << 16


def test_recall_answers_the_same_beside_other_recalls(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.remember("Error E1234 from the payment provider means the card was declined")
    store.remember("The billing service retries webhooks 5 times", tags=["billing"])
    alone = _answers(store)

    # With other recalls running, BM25 runs on the calling thread instead of beside it.
    monkeypatch.setattr(recall_module._running, "alone", lambda: False)

    assert _answers(store) == alone


def _cached_tokens(store: Store) -> set[str]:
    """Every content token the store keeps beside the rows it has read."""
    return {
        token for read in store.index._rows_read.values() if read.tokens for token in read.tokens[1]
    }


@pytest.mark.parametrize("lexicon", [False, True])
def test_a_purged_items_text_leaves_the_recall_caches(home: Path, lexicon: bool) -> None:
    secret = "The zanzibar rotation key lives under ops/zanzibar in the vault"
    with Store(home, author="tester", lexicon=lexicon) as store:
        store.remember("Webhooks are retried five times with backoff")
        _put(store, secret)
        assert [hit.item.id for hit in recall(store, "zanzibar rotation", record=False).hits] == [
            COPY
        ]
        assert "zanzibar" in _cached_tokens(store)  # it was kept

        assert store.purge(COPY)
        assert recall(store, "zanzibar rotation webhooks", record=False).hits

        assert all(secret not in read.row.text for read in store.index._rows_read.values())
        assert "zanzibar" not in _cached_tokens(store)  # it was gone


def test_a_purge_after_a_reindex_still_empties_the_recall_caches(home: Path) -> None:
    secret = "The zanzibar rotation key lives under ops/zanzibar in the vault"
    with Store(home, author="tester", lexicon=True) as store:
        store.remember("Webhooks are retried five times with backoff")
        _put(store, secret)
        assert recall(store, "zanzibar rotation", record=False).hits
        store.reindex()  # a fresh vector index: every row it loads next looks new
        with Store(home, author="other") as other:  # another process purges the copy
            assert other.purge(COPY)

        assert not any(h.item.id == COPY for h in recall(store, "zanzibar", record=False).hits)
        assert all(secret not in read.row.text for read in store.index._rows_read.values())
        assert "zanzibar" not in _cached_tokens(store)
