"""The memory section in a real browser, served by `mem ui` itself: hostile text stays text
on every page that shows it, and the item page's forms change the memory as `mem` would."""

import json

from tests.conftest import MemRunner
from tests.web._browser import Watched
from tests.web._launch import launched

HOSTILE = '<script>alert(1)</script><img src=x onerror=alert(1)><a href="javascript:alert(1)">x</a>'


def test_hostile_text_runs_nothing_in_the_list_the_search_or_the_item_page(
    tab: Watched, mem: MemRunner
) -> None:
    item = mem("remember", f"{HOSTILE} deploys freeze on Fridays", "--tag", "xss").stdout.split()[0]
    with launched(mem.home) as ui:
        tab.tab.goto(ui.address)
        tab.tab.wait_for_url(ui.url + "/")
        for path in ("/", "/?q=deploys+freeze+fridays", f"/items/{item}"):
            tab.tab.goto(ui.url + path)
            tab.tab.wait_for_load_state("networkidle")
            assert HOSTILE in tab.tab.locator("main").inner_text(), path
    assert tab.dialogs == []
    assert tab.errors == []


def test_the_item_page_s_buttons_record_an_outcome_and_forget_it_after_asking(
    tab: Watched, mem: MemRunner
) -> None:
    item = mem("remember", "the release train leaves on Thursdays").stdout.split()[0]
    with launched(mem.home) as ui:
        tab.tab.goto(ui.address)
        tab.tab.wait_for_url(ui.url + "/")
        tab.tab.locator('a[href^="/items/"]', has_text="release train").click()
        tab.tab.get_by_role("button", name="worked").click()
        tab.tab.wait_for_load_state("networkidle")
        assert "worked:" in tab.tab.locator(".notice").inner_text()
        tab.tab.get_by_role("button", name="Forget").click()  # asked, and refused
        tab.tab.wait_for_load_state("networkidle")
        assert json.loads(mem("show", item, "--json").stdout)["item"]["status"] == "active"
        tab.accept_confirms()
        tab.tab.get_by_role("button", name="Forget").click()
        tab.tab.wait_for_url("**/items/*notice=*")
        assert "archived" in tab.tab.locator(".notice").inner_text()
    shown = json.loads(mem("show", item, "--json").stdout)["item"]
    assert shown["status"] == "archived"
    assert shown["worked"] == 1.0
    assert tab.dialogs == [
        "confirm: Forget this item? It stays in history and can be brought back."
    ]
