"""The page in a real browser, against what a hostile web page in the same browser, or a
rebound DNS name, would try (docs/security.md, "The local page")."""

from pathlib import Path

from tests.conftest import MemRunner
from tests.web._browser import REBOUND, Watched
from tests.web._launch import launched


def test_a_visit_without_the_token_gets_the_sign_in_page(tab: Watched, mem: MemRunner) -> None:
    with launched(mem.home) as ui:
        answer = tab.tab.goto(ui.url + "/")
        assert answer is not None
        assert answer.status == 401
        assert tab.tab.locator("h1").inner_text() == "Sign in"


def test_the_printed_address_signs_in_with_a_cookie_no_script_can_read(
    tab: Watched, mem: MemRunner
) -> None:
    mem("remember", "the release train leaves on Thursdays")
    with launched(mem.home) as ui:
        tab.tab.goto(ui.address)
        tab.tab.wait_for_url(ui.url + "/")
        assert "the release train leaves on Thursdays" in tab.tab.content()
        assert tab.tab.evaluate("document.cookie") == ""
        (cookie,) = tab.context.cookies()
        assert cookie["httpOnly"] is True
        assert cookie["sameSite"] == "Strict"
        assert "token=" not in tab.tab.url


def test_a_name_rebound_to_loopback_gets_nothing_even_signed_in(
    tab: Watched, mem: MemRunner
) -> None:
    mem("remember", "the staging password rotates monthly")
    with launched(mem.home) as ui:
        tab.tab.goto(ui.address)
        tab.tab.wait_for_url(ui.url + "/")
        answer = tab.tab.goto(f"http://{REBOUND}:{ui.port}/")
        assert answer is not None
        assert answer.status == 400
        assert "staging" not in tab.tab.content()


def test_a_hostile_page_in_the_same_browser_can_neither_read_nor_change_the_memory(
    tab: Watched, mem: MemRunner, tmp_path: Path
) -> None:
    item = mem("remember", "the billing service owns the invoices table").stdout.split()[0]
    with launched(mem.home) as ui:
        tab.tab.goto(ui.address)
        tab.tab.wait_for_url(ui.url + "/")
        # The attacker's page, on another origin, tries a read and a forged change with the
        # member's browser, which holds the page's cookie.
        attack = f"""<!doctype html><title>cute cats</title>
<form id=f method=post action="{ui.url}/items/{item}/forget"><input name=csrf value=x></form>
<script>
fetch("{ui.url}/", {{credentials: "include"}})
  .then(r => r.text()).then(t => {{ document.title = "read:" + t.length; }})
  .catch(() => {{ document.title = "read refused"; document.getElementById("f").submit(); }});
</script>"""
        evil = tmp_path / "evil.html"
        evil.write_text(attack, encoding="utf-8")
        tab.tab.goto(f"http://{REBOUND}:{ui.port}/")  # any page of another origin will do
        tab.tab.goto(evil.as_uri())
        tab.tab.wait_for_load_state("networkidle")
        tab.tab.wait_for_timeout(500)
        assert "billing" not in tab.tab.content()
    shown = mem("show", item)
    assert shown.returncode == 0
    assert "forgotten" not in shown.stdout.lower()
    assert "the billing service owns the invoices table" in mem("list").stdout
