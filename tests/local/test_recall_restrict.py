"""A restricted recall (the peer daemon's: only the owner's published items) costs about what an
unrestricted one does: the restriction filters the full-text matches instead of running the
full-text query once per allowed row."""

import random

from memmesh.local._recall import recall
from memmesh.local.store import Store

WORDS = (
    "deploy staging cache migration webhook retry queue schema index token build test lint "
    "docker postgres redis billing invoice auth session cron backup"
).split()


def test_a_restricted_recall_does_no_more_database_work_than_an_unrestricted_one(
    store: Store,
) -> None:
    rng = random.Random(3)
    ids = [
        store.remember(f"Item {n}: " + " ".join(rng.choice(WORDS) for _ in range(12)))[0].id
        for n in range(300)
    ]
    query = "deploy cache token redis"
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    def work(**options: object) -> tuple[int, list[str]]:
        steps[0] = 0
        answer = recall(store, query, k=15, mode="lexical", record=False, **options)  # type: ignore[arg-type]
        return steps[0], [hit.item.id for hit in answer.hits]

    with store.searching() as conn:
        # The lexical half runs on this thread's connection (handed to a worker thread).
        conn.set_progress_handler(count, 20)
        try:
            free, _ = work()
            restricted, mine = work(restrict=ids[:200])
        finally:
            conn.set_progress_handler(None, 0)
    assert mine
    assert set(mine) <= set(ids[:200])
    assert free > 0
    # Counted in SQLite virtual-machine steps, not in time: the same on any machine.
    assert restricted < 3 * free, (restricted, free)
