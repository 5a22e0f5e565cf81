"""The memory section: the member's items newest first, a page at a time, narrowed by
filters; and a search that runs the recall `mem recall --explain` runs, each hit with the parts
of its score."""

import json
import re

import pytest

from memmesh.local.store import Store
from tests.conftest import MemRunner
from tests.web._page import Page

HOSTILE = '<script>alert(1)</script><img src=x onerror=alert(1)><a href="javascript:alert(1)">x</a>'
FREEZE = "Deploys freeze on Fridays after 15:00; the release train leaves on Thursday"
RESET = "The staging database is reset every Monday at 06:00"


def _ids(html: str) -> list[str]:
    """The items a page lists (or the hits it shows), in order."""
    return re.findall(r'<article class="hit" data-id="([0-9A-Z]{26})"', html)


def _link(html: str, rel: str) -> str | None:
    """The address of the page's ``rel`` link (``next``: older, ``prev``: newer)."""
    match = re.search(rf'rel="{rel}" href="([^"]+)"', html)
    return match.group(1).replace("&amp;", "&") if match else None


def _open(page: Page, link: str) -> str:
    """The page a link of the page leads to (its query string as it is)."""
    answer = page.client.get(link)
    assert answer.status_code == 200, answer.text
    return answer.text


def _remember(store: Store, count: int) -> list[str]:
    """``count`` distinct items; their ids, oldest first."""
    return [
        store.remember(f"Service {n} listens on port {8000 + n} behind the gateway")[0].id
        for n in range(count)
    ]


def test_the_items_are_listed_newest_first_with_their_chips_and_a_link_each(page: Page) -> None:
    old, _ = page.store.remember(RESET, kind="gotcha", project="infra", tags=["db", "staging"])
    new, _ = page.store.remember(FREEZE, kind="convention", project="shop", tags=["deploy"])

    html = page.get("/").text

    assert _ids(html) == [new.id, old.id]
    assert f'href="/items/{new.id}"' in html
    assert FREEZE in html  # the one-line excerpt, whole when short
    for chip in ('<span class="chip kind">convention</span>', "#deploy", "#staging", ">infra<"):
        assert chip in html
    assert "tester" in html  # the author
    assert "updated just now" in html


def test_an_empty_memory_says_how_to_remember_the_first_item(page: Page) -> None:
    html = page.get("/").text
    assert _ids(html) == []
    assert "mem remember" in html


def test_each_filter_narrows_the_list(page: Page) -> None:
    store = page.store
    shop, _ = store.remember(FREEZE, kind="convention", project="shop", tags=["deploy"])
    infra, _ = store.remember(RESET, kind="gotcha", project="infra", tags=["db"])
    gone, _ = store.remember("The old VPN endpoint is vpn1.example.net", project="infra")
    store.forget(gone.id)

    assert _ids(page.get("/").text) == [infra.id, shop.id]
    assert _ids(page.get("/", project="shop").text) == [shop.id]
    assert _ids(page.get("/", kind="gotcha").text) == [infra.id]
    assert _ids(page.get("/", tag="deploy").text) == [shop.id]
    assert _ids(page.get("/", status="archived").text) == [gone.id]
    assert _ids(page.get("/", status="any").text) == [gone.id, infra.id, shop.id]
    assert _ids(page.get("/", author="tester", project="infra").text) == [infra.id]
    assert _ids(page.get("/", author="somebody").text) == []
    assert "No items match" in page.get("/", tag="nothing-has-it").text
    # The chips link to the filter they name.
    assert 'href="/?tag=deploy"' in page.get("/").text


def test_paging_goes_past_the_first_page_and_back_showing_each_item_once(page: Page) -> None:
    ids = _remember(page.store, 112)
    first = page.get("/").text
    assert len(_ids(first)) == 50
    assert _link(first, "prev") is None

    seen, html = [], first
    while True:
        seen += _ids(html)
        older = _link(html, "next")
        if older is None:
            break
        assert "offset" not in older
        html = _open(page, older)
    assert seen == ids[::-1]

    back: list[str] = []
    while True:
        back = _ids(html) + back
        newer = _link(html, "prev")
        if newer is None:
            break
        html = _open(page, newer)
    assert back == ids[::-1]
    assert _ids(html) == _ids(first)


def test_paging_keeps_the_filters(page: Page) -> None:
    ids = [page.store.remember(f"Job {n} runs at {n}:15", tags=["cron"])[0].id for n in range(55)]
    page.store.remember("Not a job: the office opens at 9")
    first = page.get("/", tag="cron").text
    older = _link(first, "next")
    assert older is not None
    assert "tag=cron" in older
    assert _ids(first) + _ids(_open(page, older)) == ids[::-1]


def test_a_search_shows_the_hit_and_the_parts_of_its_score_as_mem_recall_does(
    page: Page, mem: MemRunner
) -> None:
    hit, _ = page.store.remember(FREEZE, kind="convention")
    page.store.remember(RESET, kind="gotcha")
    query = "when do deploys freeze"

    html = page.get("/", q=query).text

    assert _ids(html) == [hit.id]
    cli = json.loads(mem("recall", query, "--explain", "--json", "-k", "10").stdout)
    (expected,) = cli["hits"]
    parts = expected["parts"]
    assert expected["id"] == hit.id
    score = re.search(r'<span class="score"[^>]*>([0-9.]+)</span>', html)
    assert score
    assert float(score.group(1)) == pytest.approx(expected["score"], abs=6e-4)
    for label in ("vector", "lexical", "exact", "words", "fusion", "outcome", "score"):
        assert f"<dt>{label}</dt>" in html
    shown = {
        name: float(value)
        for name, value in re.findall(r"(cosine|bm25|relevance|&times;)\s?(-?[0-9.]+)", html)
    }
    # The page shows 3 places, --json rounds to 4: the same numbers, each as precise as shown.
    assert shown["cosine"] == pytest.approx(parts["cosine"], abs=6e-4)
    assert shown["bm25"] == pytest.approx(parts["bm25"], abs=6e-3)
    assert shown["relevance"] == pytest.approx(parts["relevance"], abs=6e-4)
    assert shown["&times;"] == pytest.approx(parts["record"]["factor"], abs=6e-3)
    assert f"{parts['words_covered']} of {parts['query_words']}" in html
    # The near miss and why it was left out, as --explain lists it.
    assert "Left out: 1 near miss" in html
    assert cli["explanation"]["left_out"][0]["reason"].replace("_", " ") in html


def test_a_search_in_a_project_is_mem_recall_in_that_project_and_global(
    page: Page, mem: MemRunner
) -> None:
    shop, _ = page.store.remember(FREEZE, project="shop")
    elsewhere, _ = page.store.remember(
        "Deploys of the billing service freeze on Fridays too", project="billing"
    )
    query = "when do deploys freeze"

    html = page.get("/", q=query, project="shop").text

    assert _ids(html) == [shop.id]
    assert elsewhere.id not in _ids(html)
    cli = json.loads(mem("recall", query, "--project", "shop", "--json", "-k", "10").stdout)
    assert [h["id"] for h in cli["hits"]] == _ids(html)
    assert "in shop + global" in html
    trace = re.search(r"mem why --trace ([0-9a-f]{12})", html)
    assert trace, "a recall in one project is recorded, as mem recall records it"
    # Without a project, every project is searched.
    assert set(_ids(page.get("/", q=query).text)) == {shop.id, elsewhere.id}


def test_filters_narrow_a_search_s_hits_and_say_how_many_they_hid(page: Page) -> None:
    page.store.remember(FREEZE, kind="convention")
    page.store.remember("Deploys freeze on Fridays for the mobile apps as well", kind="fact")
    query = "when do deploys freeze"
    both = _ids(page.get("/", q=query).text)
    assert len(both) == 2

    html = page.get("/", q=query, kind="fact").text

    assert len(_ids(html)) == 1
    assert "1 more hit hidden by the kind, tag or author filter" in html


def test_a_query_nothing_answers_says_the_recall_abstained(page: Page) -> None:
    page.store.remember(FREEZE)
    html = page.get("/", q="quantum chromodynamics lattice gauge").text
    assert _ids(html) == []
    assert "abstained" in html


def test_text_from_anywhere_is_escaped_in_the_list_and_the_hits(page: Page) -> None:
    page.store.remember(f"{HOSTILE} deploys freeze on Fridays", tags=["xss"])
    for html in (page.get("/").text, page.get("/", q="deploys freeze fridays").text):
        assert "<script>alert(1)</script>" not in html
        assert "<img src=x" not in html
        assert 'href="javascript:' not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    query = page.get("/", q=HOSTILE).text
    assert "<script>alert(1)</script>" not in query
    assert "&lt;script&gt;" in query  # the query itself, in the search box


@pytest.mark.parametrize(
    "params",
    [
        {"kind": "rumour"},
        {"status": "forgotten-ish"},
        {"project": "no such project"},
        {"tag": "two words"},
        {"author": "<b>"},
        {"before": "abc"},
        {"before": "\u00b2"},
        {"after": "-5"},
        {"before": "5", "after": "3"},
        {"k": "0", "q": "deploys"},
        {"k": "many", "q": "deploys"},
        {"k": "101", "q": "deploys"},
        {"q": "x" * 9000},
    ],
)
def test_a_bad_filter_or_position_is_a_400_page_not_a_failure(
    page: Page, params: dict[str, str]
) -> None:
    page.store.remember(FREEZE)
    answer = page.get("/", **params)
    assert answer.status_code == 400, answer.text
    assert "Traceback" not in answer.text
    assert 'class="problem"' in answer.text
