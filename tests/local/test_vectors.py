"""The vector index's views: what a search reads never changes under it."""

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from memmesh.embed import Vectors
from memmesh.local.store import Store

COPY = "01JC0PY0000000000000000001"
BEFORE = "The billing service retries webhooks 5 times"
AFTER = "Integration tests need a local Postgres 15 on port 5433"


def _put(store: Store, text: str, project: str = "global") -> None:
    store.put(
        item_id=COPY, text=text, kind="fact", project=project, tags=(), author="bob",
        created_at=0.0, vector=None,
    )  # fmt: skip


def _refresh(store: Store) -> None:
    with store.searching():
        pass


def _seq_of(store: Store, item_id: str) -> int:
    with store._db.read() as conn:
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
    with store.index.lock:
        view = store.index.vectors.view()
    before = view.cosine(query, [seq])

    _put(store, AFTER)  # the same row, a new vector
    store.remember("Feature flags live in config/flags.yaml")  # a row after the view's
    store.forget(store.items(project="web")[0].id)
    _refresh(store)

    assert view.cosine(query, [seq]) == before
    assert len(view.search(query, ["global", "web"], 10)) == 2
    with store.index.lock:
        now = store.index.vectors.view()
    expected = float(store.embedder.embed([AFTER])[0] @ query)
    assert now.cosine(query, [seq])[seq] == pytest.approx(expected, abs=1e-6)
    # The forgotten item is out; the new one and the changed copy are in.
    assert len(now.search(query, ["global", "web"], 10)) == 2
    assert seq in dict(now.search(query, ["global"], 10))


def test_a_view_answers_as_the_index_did_when_it_was_taken(store: Store) -> None:
    query = store.embedder.embed_query("webhook retries")
    with store.index.lock:
        view = store.index.vectors.view()
    expected = view.search(query, ["global"], 5)
    for text in ("Retry webhooks with backoff", "Webhooks retry five times at most"):
        store.remember(text)
    _refresh(store)

    assert view.search(query, ["global"], 5) == expected
    assert len(store.index.vectors.view().search(query, ["global"], 5)) == 3


def test_an_item_that_moves_project_is_searched_in_its_new_one_only(store: Store) -> None:
    query = store.embedder.embed_query(BEFORE)
    seq = _seq_of(store, COPY)
    with store.index.lock:
        before = store.index.vectors.view()
    _put(store, BEFORE, project="billing")
    _refresh(store)
    with store.index.lock:
        after = store.index.vectors.view()

    assert [hit for hit, _ in before.search(query, ["global"], 5)] == [seq]
    assert before.cosine(query, [seq]) == after.cosine(query, [seq])
    assert after.search(query, ["global"], 5) == []
    assert [hit for hit, _ in after.search(query, ["billing"], 5)] == [seq]
    assert [hit for hit, _ in after.search(query, ["billing", "web"], 5, only=[seq])] == [seq]
    assert after.search(query, ["billing"], 5, only=[seq + 100]) == []


def _rows_of_room(store: Store) -> dict[str, int]:
    """How many rows each project's arrays have room for, written or not."""
    return {project: len(block.seqs) for project, block in store.index.vectors._blocks.items()}


def test_a_project_has_room_for_about_its_rows_only(home: Path) -> None:
    """Anyone may name projects: one item in a project of its own, changed or not, costs
    about one row, never the room of hundreds (a flood of tiny projects once did)."""
    with Store(home, author="tester") as store:
        for index in range(40):
            store.put(
                item_id=f"01JC0PY{index:019d}", text=f"note {index}", kind="fact",
                project=f"p{index}", tags=(), author="bob", created_at=0.0, vector=None,
            )  # fmt: skip
        for index in range(300):
            store.remember(f"item number {index} of the web project", project="web")
        _refresh(store)
        for index in range(40):  # a new version of each: its project's arrays are copied
            _put_copy(store, index)
        _refresh(store)

        room = _rows_of_room(store)
        assert sum(room[f"p{index}"] for index in range(40)) <= 2 * 40
        assert 300 <= room["web"] <= 300 * 5 // 4 + 1
        matrix = store.index.vectors._blocks["p3"].matrix
        assert matrix.nbytes <= 2 * store.embedder.dim * 4


def _put_copy(store: Store, index: int) -> None:
    store.put(
        item_id=f"01JC0PY{index:019d}", text=f"note {index}, revised", kind="fact",
        project=f"p{index}", tags=(), author="bob", created_at=0.0, vector=None,
    )  # fmt: skip


def test_a_load_in_small_parts_answers_as_a_load_in_one(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memmesh.local import _vectors

    def refreshed(opened: Store, indexes: dict[int, _vectors.VectorIndex]) -> None:
        for part, index in indexes.items():
            monkeypatch.setattr(_vectors, "_PART_ROWS", part)
            with opened._db.reader() as conn:
                index.refresh(conn)

    with Store(home, author="tester") as store:
        indexes = {part: _vectors.VectorIndex(store.embedder.dim) for part in (3, 4096)}
        for number in range(20):
            store.remember(f"webhook retry note {number}", project=("web", "api")[number % 2])
        _put(store, BEFORE, project="web")
        refreshed(store, indexes)
        for number in range(4):  # the move below comes in the second part of three
            store.remember(f"deploy note {number}", project="api")
        _put(store, AFTER, project="api")  # the same row again, moved to another project
        store.forget(store.items(project="web")[0].id)
        store.remember("one more webhook note", project="web")
        refreshed(store, indexes)

        queries = [store.embedder.embed_query(q) for q in ("webhook retry", BEFORE, AFTER)]
        answers = [
            [index.view().search(q, ["web", "api", "global"], 30) for q in queries]
            for index in indexes.values()
        ]
        assert answers[0] == answers[1]
        assert len(answers[0][0]) == 25  # the forgotten one is out, the moved copy counted once


def _exact(store: Store, query: Vectors, projects: list[str]) -> list[tuple[int, float]]:
    """The exact scan of the store file's active rows of ``projects``, best first."""
    marks = ",".join("?" * len(projects))
    with store._db.read() as conn:
        rows = conn.execute(
            f"SELECT seq, vector FROM items WHERE status = 'active' AND project IN ({marks})",
            projects,
        ).fetchall()
    scored = [(-float(np.dot(np.frombuffer(blob, np.float32), query)), seq) for seq, blob in rows]
    return [(seq, -score) for score, seq in sorted(scored)]


def test_rows_answer_alike_in_the_base_in_the_tail_and_in_each_new_base(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows go to the tail and into a new base every few writes here; every answer is the
    exact scan's, and a view keeps answering as when it was taken."""
    from memmesh.local import _vectors

    monkeypatch.setattr(_vectors, "_TAIL_MIN", 4)
    with Store(home, author="tester") as store:
        queries = [store.embedder.embed_query(q) for q in ("webhook retry", BEFORE, AFTER)]
        for number in range(30):
            store.remember(f"webhook retry note {number}", project=("web", "api")[number % 2])
        _put(store, BEFORE, project="web")
        _refresh(store)
        with store.index.lock:
            first = store.index.vectors.view()
        kept = [first.search(query, ["web", "api"], 50) for query in queries]
        writes: list[Callable[[], object]] = [
            lambda: _put(store, AFTER, project="web"),  # a new vector for a base row
            lambda: _put(store, AFTER, project="api"),  # then another project
            lambda: store.forget(store.items(project="web")[0].id),
            lambda: store.purge(store.items(project="api")[-1].id),
            lambda: store.remember("one more webhook note", project="global"),
        ]
        for write in writes * 2:
            write()
            _refresh(store)
            with store.index.lock:
                view = store.index.vectors.view()
            for query in queries:
                for scope in (["web"], ["api", "global"], ["web", "api", "global"]):
                    assert view.search(query, scope, 100) == _exact(store, query, scope)
            seqs = [seq for seq, _ in _exact(store, queries[0], ["web", "api", "global"])]
            assert view.cosine(queries[0], seqs) == dict(
                _exact(store, queries[0], ["web", "api", "global"])
            )
            base = store.index.vectors._base
            assert base is not None
            assert len(base) <= len(store.items(status=None))  # one row per item at most
        assert [first.search(query, ["web", "api"], 50) for query in queries] == kept
