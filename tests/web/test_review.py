"""The review page: what consolidation found (contradictions, duplicate groups, items past
their use, items whose code changed) with a button for each action `mem resolve` and
`mem consolidate --apply` take, the journal with its undo; a post without the page's token,
from another origin, or naming what is not there (or changed since) changes nothing."""

import re
import subprocess
from html import escape
from html.parser import HTMLParser
from typing import Any

import pytest

from memmesh.consolidate.actions import Entry, history
from memmesh.local.store import Store
from tests.cli._output import json_of
from tests.conftest import MemRunner
from tests.team._team import Team
from tests.web._page import Page, serving
from tests.web.test_memory_publish import notice_of, problem_of

REDIS = "we use Redis locks for the job queue"
POSTGRES = "we use Postgres advisory locks for the job queue"
CACHE = "CI caches node_modules; bust it by bumping CACHE_VERSION"
CACHE_AGAIN = "to bust the CI cache of node_modules, bump CACHE_VERSION"
STAGING = "the staging database is reset every Monday at 06:00"
STAGING_AGAIN = "every Monday at 06:00 the staging database is reset"
FREEZE = "code freeze for the release branch"
ATTEMPTS = "attempts() gives up after 3 tries"
UNKNOWN = "01ZZZZZZZZZZZZZZZZZZZZZZZZ"

Fields = dict[str, list[str]]


def remember(mem: MemRunner, text: str, *options: str, author: str = "ada") -> str:
    """A new global item by ``author``, remembered by the real `mem`; its id."""
    result = mem("remember", text, "--global", *options, "--json", env={"MEM_AUTHOR": author})
    item_id: str = json_of(result)["id"]
    return item_id


class _Forms(HTMLParser):
    """Every form of a page: its action and its hidden fields."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[tuple[str, Fields]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "form":
            self.forms.append((named.get("action") or "", {}))
        elif tag == "input" and named.get("type") == "hidden" and self.forms:
            fields = self.forms[-1][1]
            fields.setdefault(named["name"] or "", []).append(named.get("value") or "")


def forms(html: str, action: str) -> list[Fields]:
    """The hidden fields of each form of ``html`` that posts to ``action``."""
    parser = _Forms()
    parser.feed(html)
    return [fields for posted, fields in parser.forms if posted == action]


def form_naming(html: str, action: str, item_id: str) -> Fields:
    """The one form posting to ``action`` whose fields name ``item_id``."""
    (found,) = [f for f in forms(html, action) if any(item_id in v for v in f.values())]
    return found


def _articles(html: str, kind: str) -> dict[str, str]:
    """The ``data-KIND`` value of each such article of the page, and its inside."""
    pattern = rf'<article class="[^"]*" data-{kind}="([^"]+)"[^>]*>(.*?)</article>'
    return dict(re.findall(pattern, html, re.S))


def _state(store: Store) -> list[tuple[str, str, float]]:
    """Every item's id, status and last change: what no refused post may move."""
    return sorted((i.id, i.status, i.updated_at) for i in store.items(status=None))


def _journal(store: Store) -> list[Entry]:
    return history(store)


def _stale_item(mem: MemRunner) -> str:
    """An item anchored to lines of a file in a git repository, which then changed."""
    subprocess.run(["git", "init", "-q", str(mem.cwd)], check=True)
    source = mem.cwd / "retry.py"
    source.write_text("def attempts():\n    return 3\n\n\ndef other():\n    pass\n")
    item_id = remember(mem, ATTEMPTS, "--about", "retry.py:1-2")
    source.write_text("def attempts():\n    return settings.ATTEMPTS\n")
    return item_id


def test_the_page_lists_each_finding_with_its_items_linked(mem: MemRunner) -> None:
    redis, postgres = remember(mem, REDIS), remember(mem, POSTGRES)
    cache, cache_again = remember(mem, CACHE, author="bob"), remember(mem, CACHE_AGAIN)
    freeze = remember(mem, FREEZE, "--until", "2020-01-02")
    attempts = _stale_item(mem)

    with serving(mem.home) as page:
        answer = page.get("/review")

    assert answer.status_code == 200, answer.text
    html = answer.text
    assert '<a href="/review" aria-current="page">Review</a>' in html
    ((pair, inside),) = _articles(html, "contradiction").items()
    assert set(pair.split()) == {redis, postgres}
    for item_id, text in ((redis, REDIS), (postgres, POSTGRES)):
        assert f'href="/items/{item_id}"' in inside
        assert escape(text) in inside
    assert "says redis locks" in inside  # the reason
    ((group, inside),) = _articles(html, "group").items()
    assert set(group.split()) == {cache, cache_again}
    assert re.findall(r'<li data-item="([^"]+)" data-kept="yes">', inside) == [cache_again]
    assert escape(CACHE) in inside
    assert escape(CACHE_AGAIN) in inside
    ((past, inside),) = _articles(html, "past").items()
    assert past == freeze
    assert "expired" in inside
    assert re.search(r"since 2020-01-0\d", inside)  # the day it ran out
    assert f'href="/items/{freeze}"' in inside
    ((stale, inside),) = _articles(html, "stale").items()
    assert stale == attempts
    assert f'href="/items/{attempts}"' in inside
    assert "retry.py:1-2" in inside
    assert re.search(r"changed \d+% of its lines since \d{4}-\d\d-\d\d", inside)
    assert "The journal is empty" in html
    assert forms(html, "/review/undo") == []


@pytest.mark.parametrize(("keep", "archived"), [("a", "b"), ("b", "a"), ("both", None)])
def test_each_button_of_a_contradiction_settles_it_and_undo_takes_it_back(
    mem: MemRunner, keep: str, archived: str | None
) -> None:
    remember(mem, REDIS)
    remember(mem, POSTGRES)
    with serving(mem.home) as page:
        (form,) = forms(page.get("/review").text, "/review/resolve")
        sides = {"a": form["a"][0], "b": form["b"][0]}

        notice = notice_of(page, page.post("/review/resolve", {**form, "keep": keep}))

        statuses = {side: page.store.get(i).status for side, i in sides.items()}
        assert statuses == {s: "archived" if s == archived else "active" for s in sides}
        if archived is None:
            assert notice.startswith(f"kept both {sides['a'][:10]} and {sides['b'][:10]}")
        else:
            kept = "b" if archived == "a" else "a"
            said = f"kept {sides[kept][:10]}, archived {sides[archived][:10]}"
            assert notice.startswith(said)
        html = page.get("/review").text
        assert _articles(html, "contradiction") == {}
        (entry,) = _journal(page.store)
        assert entry.action == "resolve"
        (row,) = _articles(html, "entry").items()
        assert row[0] == entry.id
        assert "resolve" in row[1]
        assert forms(html, "/review/undo") == [{"csrf": [page.csrf], "entry": [entry.id]}]

        undone = notice_of(page, page.post("/review/undo", {"entry": entry.id}))

        assert undone.startswith(f"took back {entry.id}")
        assert {page.store.get(i).status for i in sides.values()} == {"active"}
        html = page.get("/review").text
        assert len(_articles(html, "contradiction")) == 1
        assert "taken back" in _articles(html, "entry")[entry.id]
        assert forms(html, "/review/undo") == []


def test_merge_merges_only_its_group_keeping_the_marked_text_and_undo_unmerges(
    mem: MemRunner,
) -> None:
    cache, cache_again = remember(mem, CACHE, author="bob"), remember(mem, CACHE_AGAIN)
    staging = remember(mem, STAGING, author="bob")
    staging_again = remember(mem, STAGING_AGAIN)
    with serving(mem.home) as page:
        html = page.get("/review").text
        assert len(_articles(html, "group")) == 2
        form = form_naming(html, "/review/merge", cache)
        assert sorted(form["item"]) == sorted([cache, cache_again])

        notice = notice_of(page, page.post("/review/merge", form))

        (entry,) = _journal(page.store)
        assert entry.action == "merge"
        assert entry.result_id is not None
        merged = page.store.get(entry.result_id)
        assert (merged.text, merged.status) == (CACHE_AGAIN, "active")
        assert {merged.author, *merged.coauthors} == {"ada", "bob"}
        assert notice.startswith(f"merged {cache[:10]}, {cache_again[:10]} into ")
        assert {page.store.get(i).status for i in (cache, cache_again)} == {"superseded"}
        assert {page.store.get(i).status for i in (staging, staging_again)} == {"active"}
        html = page.get("/review").text
        (group,) = _articles(html, "group")
        assert set(group.split()) == {staging, staging_again}
        assert f'href="/items/{merged.id}"' in _articles(html, "entry")[entry.id]

        notice_of(page, page.post("/review/undo", {"entry": entry.id}))

        assert {page.store.get(i).status for i in (cache, cache_again)} == {"active"}
        assert page.store.get(merged.id).status == "archived"


def test_archive_archives_an_item_past_its_use_and_undo_restores_it(mem: MemRunner) -> None:
    freeze = remember(mem, FREEZE, "--until", "2020-01-02")
    kept = remember(mem, REDIS)
    with serving(mem.home) as page:
        form = form_naming(page.get("/review").text, "/review/archive", freeze)

        notice = notice_of(page, page.post("/review/archive", form))

        assert notice.startswith(f"archived {freeze[:10]}: expired")
        assert page.store.get(freeze).status == "archived"
        assert page.store.get(kept).status == "active"
        html = page.get("/review").text
        assert _articles(html, "past") == {}
        (entry,) = _journal(page.store)
        assert (entry.action, entry.item_ids, entry.reason) == ("archive", (freeze,), "expired")

        notice_of(page, page.post("/review/undo", {"entry": entry.id}))

        assert page.store.get(freeze).status == "active"
        assert freeze in _articles(page.get("/review").text, "past")


def _every_form(mem: MemRunner, page: Page) -> list[tuple[str, Fields]]:
    """One valid form of each action, an entry to undo among them."""
    freeze = remember(mem, "the old deploy script is kept for a week", "--until", "2020-01-02")
    archive = form_naming(page.get("/review").text, "/review/archive", freeze)
    page.follow(page.post("/review/archive", archive))
    html = page.get("/review").text
    return [
        (action, forms(html, action)[0])
        for action in ("/review/resolve", "/review/merge", "/review/archive", "/review/undo")
    ]


def _findings(mem: MemRunner) -> dict[str, str]:
    """A contradiction, a duplicate group and an expired item, by name."""
    return {
        "redis": remember(mem, REDIS),
        "postgres": remember(mem, POSTGRES),
        "cache": remember(mem, CACHE, author="bob"),
        "cache_again": remember(mem, CACHE_AGAIN),
        "freeze": remember(mem, FREEZE, "--until", "2020-01-02"),
    }


def test_a_forged_post_without_the_token_or_from_another_origin_changes_nothing(
    mem: MemRunner,
) -> None:
    _findings(mem)
    with serving(mem.home) as page:
        every = _every_form(mem, page)
        before, journal = _state(page.store), _journal(page.store)
        for action, form in every:
            fields = {**{k: v for k, v in form.items() if k != "csrf"}, "keep": "a"}
            assert page.post(action, fields, csrf=False).status_code == 403, action
            forged = page.post(action, {**fields, "csrf": "0" * 64}, csrf=False)
            assert forged.status_code == 403, action
            for origin in ("http://evil.example", "null"):
                foreign = page.post(action, fields, headers={"origin": origin})
                assert foreign.status_code == 403, (action, origin)
        assert _state(page.store) == before
        assert _journal(page.store) == journal


def test_bad_posts_are_refused_with_a_message_and_change_nothing(mem: MemRunner) -> None:
    found = _findings(mem)
    with serving(mem.home) as page:
        every = dict(_every_form(mem, page))
        resolve, merge = every["/review/resolve"], every["/review/merge"]
        archive, undo = every["/review/archive"], every["/review/undo"]
        page.store.edit(found["postgres"], add_tags=["locks"])  # changed since the page showed it
        before, journal = _state(page.store), _journal(page.store)
        cases: list[tuple[str, dict[str, Any], int, str]] = [
            ("/review/resolve", {**resolve, "keep": "a"}, 400, "changed since the review page"),
            ("/review/resolve", {**resolve, "keep": "neither"}, 400, "keep: must be one of"),
            ("/review/resolve", resolve, 400, "keep: is required"),
            ("/review/resolve", {**resolve, "b": UNKNOWN, "keep": "a"}, 404, "no item with id"),
            ("/review/resolve", {**resolve, "a": "x" * 65, "keep": "a"}, 400, "a: is 65"),
            ("/review/merge", {**merge, "item": merge["item"][:1]}, 400, "at least two items"),
            ("/review/merge", {**merge, "keep": found["redis"]}, 400, "keep: must be one of"),
            ("/review/merge", {**merge, "seen": "0" * 16}, 400, "changed since the review page"),
            ("/review/merge", {"seen": merge["seen"]}, 400, "item: is required"),
            ("/review/archive", {**archive, "item": "<b>01ZZ</b>"}, 404, "no item with id"),
            ("/review/archive", {**archive, "seen": ""}, 400, "seen: is required"),
            ("/review/undo", {"entry": "0123abcd"}, 400, "no consolidation entry"),
            ("/review/undo", {}, 400, "entry: is required"),
        ]
        for action, form, status, said in cases:
            answer = page.post(action, form)
            assert answer.status_code == status, (action, form, answer.text)
            assert said in problem_of(answer.text), (action, form)
            assert "<b>" not in answer.text
            assert "Traceback" not in answer.text
        assert _state(page.store) == before
        assert _journal(page.store) == journal

        page.follow(page.post("/review/undo", undo))
        again = page.post("/review/undo", undo)
        assert again.status_code == 400
        assert "taken back already" in problem_of(again.text)
        past = form_naming(page.get("/review").text, "/review/archive", found["freeze"])
        page.store.edit(found["freeze"], add_tags=["release"])
        stale = page.post("/review/archive", past)
        assert stale.status_code == 400
        assert "changed since the review page" in problem_of(stale.text)
        assert page.store.get(found["freeze"]).status == "active"


def test_keeping_one_side_retracts_the_other_s_publication_as_mem_resolve_does(
    loopback_team: Team,
) -> None:
    ada = loopback_team.add("ada", auto_sync=True)
    redis, postgres = ada.remember(REDIS), ada.remember(POSTGRES)
    ada.publish(postgres)
    ada.sync()
    with serving(ada.home) as page:
        (form,) = forms(page.get("/review").text, "/review/resolve")
        keep = "a" if form["a"] == [redis] else "b"

        notice = notice_of(page, page.post("/review/resolve", {**form, "keep": keep}))

        assert notice.startswith(f"kept {redis[:10]}, archived {postgres[:10]}")
        assert "; its publication is retracted" in notice
        assert page.store.get(postgres).status == "archived"
    with ada.registry() as registry:
        last = registry.entries()[-1]
    assert (last.kind, last.item_id, last.acked) == ("retraction", postgres, True)
