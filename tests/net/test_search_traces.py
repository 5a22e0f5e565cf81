"""A search answered for someone else (the coordinator's, a peer's) leaves no trace of the query
in the answering store: only the member's own recalls are journaled."""

import sqlite3

from memmesh.local.store import Store
from memmesh.net.search import SearchRequest, answer_search


def test_answering_a_search_keeps_no_trace_of_the_query(store: Store) -> None:
    item, _ = store.remember("The billing service retries failed webhooks 5 times")
    query = "how often does billing retry webhooks"

    for restrict in (None, [item.id]):
        answer_search(store, SearchRequest(query=query), lambda ids: {}, restrict=restrict)

    conn = sqlite3.connect(store.path)
    try:
        assert conn.execute("SELECT count(*) FROM recall_traces").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM events WHERE kind = 'recall'").fetchone() == (0,)
        assert conn.execute(
            "SELECT count(*) FROM events WHERE data LIKE '%billing%'"
        ).fetchone() == (0,)
    finally:
        conn.close()
