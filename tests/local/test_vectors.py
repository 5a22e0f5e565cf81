"""The vector index's views: what a search reads never changes under it."""

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memmesh.local.store import Store

COPY = "01JC0PY0000000000000000001"
BEFORE = "The billing service retries webhooks 5 times"
AFTER = "Integration tests need a local Postgres 15 on port 5433"


def _put(store: Store, text: str) -> None:
    store.put(
        item_id=COPY, text=text, kind="fact", project="global", tags=(), author="bob",
        created_at=0.0, vector=None,
    )  # fmt: skip


def _refresh(store: Store) -> None:
    with store.reading():
        pass


def _seq_of(store: Store, item_id: str) -> int:
    with store.db.read() as conn:
        return int(conn.execute("SELECT seq FROM items WHERE id = ?", (item_id,)).fetchone()[0])


@pytest.fixture
def store(home: Path) -> Iterator[Store]:
    """A store with a copy in ``global`` and an item in ``web``, both in the index."""
    with Store(home, author="tester") as opened:
        _put(opened, BEFORE)
        opened.remember("Deploys to production go through Argo CD", project="web")
        _refresh(opened)
        yield opened


def test_a_view_keeps_the_rows_it_was_taken_with(store: Store) -> None:
    query = store.embedder.embed_query(AFTER)
    seq = _seq_of(store, COPY)
    with store.vector_lock:
        view = store.vectors.view()
    before = view.cosine(query, [seq])

    _put(store, AFTER)  # the same row, a new vector
    store.remember("Feature flags live in config/flags.yaml")  # a row after the view's
    store.forget(store.items(project="web")[0].id)
    _refresh(store)

    assert view.cosine(query, [seq]) == before
    assert len(view.search(query, view.scope(["global", "web"]), 10)) == 2
    assert view.scope(["global", "web"]).tolist() == [True, True]
    with store.vector_lock:
        now = store.vectors.view()
    expected = float(store.embedder.embed([AFTER])[0] @ query)
    assert now.cosine(query, [seq])[seq] == pytest.approx(expected, abs=1e-6)
    assert now.scope(["global", "web"]).tolist() == [True, False, True]


def test_a_view_answers_as_the_index_did_when_it_was_taken(store: Store) -> None:
    query = store.embedder.embed_query("webhook retries")
    with store.vector_lock:
        view = store.vectors.view()
        mask = store.vectors.scope(["global"])
        expected = store.vectors.search(query, mask, 5)
    for text in ("Retry webhooks with backoff", "Webhooks retry five times at most"):
        store.remember(text)
    _refresh(store)

    assert view.search(query, view.scope(["global"]), 5) == expected
    assert np.array_equal(view.scope(["global"]), mask)
