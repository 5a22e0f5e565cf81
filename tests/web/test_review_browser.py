"""The review page in a real browser, served by `mem ui` itself: keeping one side of a
contradiction settles it, and the journal shows what was done."""

import json

from tests.conftest import MemRunner
from tests.web._browser import Watched
from tests.web._launch import launched
from tests.web.test_review import POSTGRES, REDIS, remember


def test_keeping_one_side_of_a_contradiction_settles_it_and_journals_it(
    tab: Watched, mem: MemRunner
) -> None:
    redis, postgres = remember(mem, REDIS), remember(mem, POSTGRES)
    with launched(mem.home) as ui:
        tab.tab.goto(ui.address)
        tab.tab.wait_for_url(ui.url + "/")
        tab.tab.get_by_role("link", name="Review").click()
        tab.tab.wait_for_url(ui.url + "/review")
        pair = tab.tab.locator("article[data-contradiction]")
        assert pair.count() == 1
        kept = "a" if pair.get_attribute("data-contradiction") == f"{redis} {postgres}" else "b"

        pair.get_by_role("button", name=f"Keep {kept.upper()}").click()

        tab.tab.wait_for_url("**/review?notice=*")
        assert "kept " + redis[:10] in tab.tab.locator(".notice").inner_text()
        assert tab.tab.locator("article[data-contradiction]").count() == 0
        entry = tab.tab.locator("article[data-entry]")
        assert entry.count() == 1
        assert "resolve" in entry.inner_text()
        assert entry.get_by_role("button", name="Undo").count() == 1
    shown = {
        i: json.loads(mem("show", i, "--json").stdout)["item"]["status"] for i in (redis, postgres)
    }
    assert shown == {redis: "active", postgres: "archived"}
    assert tab.dialogs == []
    assert tab.errors == []
