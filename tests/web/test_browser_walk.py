"""A member's path through the page in a real browser, on a real team on loopback: open with
the token, search and open an item, edit its tags, publish it with the dry run shown first,
retract it, accept an inbox candidate, and ask the team, where a teammate's hostile item
renders inert."""

from memmesh.local import inbox
from memmesh.local.store import Store
from memmesh.policy.redaction import redact_text
from tests.team._signed import SignedTeam
from tests.web._browser import Watched
from tests.web._launch import launched

# A teammate's item written to run in whoever's page shows it: a script, an event handler, a
# javascript: link, and one unbroken line as long as an item may be (8 KiB in all).
HOSTILE = (
    "Rollback runbook <script>window.__pwned = 1; alert('script')</script> "
    "<img src=x onerror=\"window.__pwned = 2; alert('onerror')\"> "
    '<a href="javascript:window.__pwned = 3">undo the rollout</a> ' + "x" * 7_900
)


def test_a_member_walks_from_search_to_publish_retract_inbox_and_the_team(
    signed: SignedTeam, tab: Watched
) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    bob.share(HOSTILE, kind="gotcha")
    mine = ada.remember("The staging database is reset every Sunday night", kind="gotcha")
    with Store(ada.home, author="ada") as store:
        proposal = inbox.Proposal("Run make db-reset after a schema change", "command")
        inbox.propose(store, [proposal], redact=redact_text)
    with launched(ada.home) as ui:
        page = tab.tab
        page.goto(ui.address)
        page.wait_for_url(ui.url + "/")

        # Search, and open the hit.
        page.get_by_role("searchbox", name="Search").fill("when is staging reset")
        page.get_by_role("button", name="Search").click()
        page.locator(f'article.hit[data-id="{mine}"] a[href="/items/{mine}"]').click()
        page.wait_for_url(f"{ui.url}/items/{mine}")
        assert "The staging database is reset every Sunday night" in page.content()

        # Edit its tags.
        page.locator('form.edit input[name="tags"]').fill("staging, ops")
        with page.expect_navigation():
            page.locator("form.edit").get_by_role("button", name="Save").click()
        with Store(ada.home, author="ada") as store:
            assert set(store.get(mine).tags) == {"staging", "ops"}

        # Publish: the dry run first, then for real.
        page.get_by_role("link", name="Publish…").click()
        assert "dry run: nothing has left" in page.content()
        assert "share.kinds" in page.content()
        with page.expect_navigation():
            page.get_by_role("button", name="Publish v1").click()
        assert page.locator(".chip.ok", has_text="published v1").count() == 1

        # Retract (the page asks first).
        tab.accept_confirms()
        with page.expect_navigation():
            page.locator(f'form[action="/items/{mine}/retract"] button').first.click()
        assert page.locator(".chip.ok", has_text="published v1").count() == 0

        # Accept the inbox's candidate.
        page.goto(ui.url + "/inbox")
        card = page.locator("article.candidate").first
        with page.expect_navigation():
            card.get_by_role("button", name="Accept", exact=True).click()
        with Store(ada.home, author="ada") as store:
            texts = [item.text for item in store.items()]
        assert "Run make db-reset after a schema change" in texts

        # Ask the team: bob's hostile item is his answer, shown as text.
        page.goto(ui.url + "/team/ask")
        page.get_by_role("searchbox", name="question").fill("rollback runbook")
        with page.expect_navigation():
            page.get_by_role("button", name="Ask").click()
        answer = page.locator("article.hit").first
        assert "bob" in answer.inner_text()
        assert "<script>" in answer.inner_text()  # shown, as text
        page.goto(ui.url + "/team/feed")
        page.wait_for_load_state()
        assert "Rollback runbook" in page.content()
        # The long line wraps: nothing runs off the side of the page.
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

        assert page.evaluate("window.__pwned") is None
        assert page.locator("a[href^='javascript:']").count() == 0
        assert page.locator("img[src='x']").count() == 0
    assert tab.dialogs == []
    assert tab.errors == []
