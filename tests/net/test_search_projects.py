"""The projects a search covers: the request's project plus global, or with ``all_projects``
every project the answering store holds, each item once; a real store in tmp_path."""

from pathlib import Path

import msgspec

from memmesh.local.store import Store
from memmesh.net.search import SearchRequest, answer_search
from memmesh.registry.envelopes import Envelope

QUERY = "how do the billing and shop services retry webhooks"
ITEMS = {
    "billing": "The billing service retries failed webhooks 5 times with exponential backoff",
    "shop": "The shop service retries failed webhooks twice, then gives up",
    "global": "Every service retries failed webhooks with jittered exponential backoff",
}


def _store(tmp_path: Path) -> tuple[Store, dict[str, str]]:
    store = Store(tmp_path / "home", author="ada")
    ids = {}
    for project, text in ITEMS.items():
        item, _ = store.remember(text, kind="decision", project=project)
        ids[item.id] = project
    return store, ids


def _projects(store: Store, ids: dict[str, str], request: SearchRequest) -> list[str]:
    """The projects of the items the search answers with (each envelope stands for its id)."""

    def envelopes(item_ids: list[str]) -> dict[str, Envelope]:
        return {i: Envelope(payload=i.encode(), signature=bytes(64)) for i in item_ids}

    answer = answer_search(store, request, envelopes)
    return sorted(ids[hit.envelope.payload.decode()] for hit in answer.hits)


def test_a_search_covers_its_project_and_global_or_every_project(tmp_path: Path) -> None:
    store, ids = _store(tmp_path)
    with store:
        one = _projects(store, ids, SearchRequest(query=QUERY, project="billing"))
        every = _projects(store, ids, SearchRequest(query=QUERY, all_projects=True))
        # all_projects wins over a project that names none of the items.
        regardless = _projects(
            store, ids, SearchRequest(query=QUERY, project="web", all_projects=True)
        )

    assert one == ["billing", "global"]
    assert every == regardless == ["billing", "global", "shop"]  # the global item once


def test_only_a_request_for_every_project_carries_the_field() -> None:
    plain = msgspec.json.decode(msgspec.json.encode(SearchRequest(query=QUERY, project="web")))
    every = msgspec.json.decode(msgspec.json.encode(SearchRequest(query=QUERY, all_projects=True)))

    assert plain == {"query": QUERY, "project": "web"}
    assert every == {"query": QUERY, "all_projects": True}
