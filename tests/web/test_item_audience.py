"""Whom an item is for, on its pages: the publish page plans it for an audience and names who
could read it, the publish signs that audience, and the item's page then says whom it is for
and who may read it now (who was served it is the page's disclosures)."""

from pathlib import Path

from memmesh.local.items import Item
from memmesh.registry import Registry, load_identity
from memmesh.registry.envelopes import Audience, Publication, open_envelope
from tests.cli._signed_team import SignedTeam
from tests.team._team import Team
from tests.web._page import Page, serving


def _signed_trio(loopback_team: Team, root: Path) -> SignedTeam:
    team = SignedTeam(loopback_team, root)
    team.start("ada")
    team.join("bob")
    team.join("cy")
    path = root / "bob" / "team.yaml"
    path.write_text(path.read_text().replace("  kinds: []\n", "  kinds: [fact]\n"))
    assert team.mem("ada")("team", "group", "add", "backend", "ada", "bob").returncode == 0
    return team


def _audiences(page: Page, home: Path) -> list[Audience | None]:
    registry = Registry(page.store, load_identity(home), "acme")
    bodies = [open_envelope(e.envelope) for e in registry.entries()]
    return [b.audience for b in bodies if isinstance(b, Publication)]


def test_the_publish_page_plans_for_an_audience_and_the_item_page_says_whom_it_is_for(
    loopback_team: Team, tmp_path: Path
) -> None:
    team = _signed_trio(loopback_team, tmp_path / "homes")
    with serving(team.root / "bob") as page:
        item: Item
        item, _ = page.store.remember("the api gateway retries twice", kind="fact")

        everyone = page.get(f"/items/{item.id}/publish").text
        plan = page.get(f"/items/{item.id}/publish", to="backend").text
        done = page.post(f"/items/{item.id}/publish", {"to": "backend"})
        shown = page.get(f"/items/{item.id}").text

        assert "Readable by: every member of the team" not in everyone
        assert "Readable by: ada, bob, cy" in everyone
        assert '<td class="audience">backend</td>' in plan
        assert "Readable by: ada, bob" in plan
        assert '<input type="hidden" name="to" value="backend">' in plan
        assert done.status_code == 303
        assert _audiences(page, team.root / "bob") == [Audience(groups=("backend",))]
        assert "For <strong>backend</strong>: readable now by ada, bob." in shown


def test_an_audience_the_roster_lacks_is_refused_on_the_page_and_nothing_is_published(
    loopback_team: Team, tmp_path: Path
) -> None:
    team = _signed_trio(loopback_team, tmp_path / "homes")
    with serving(team.root / "bob") as page:
        item, _ = page.store.remember("the api gateway retries twice", kind="fact")

        refused = page.post(f"/items/{item.id}/publish", {"to": "frontend"})

        assert refused.status_code == 400
        assert "unknown audience &#39;frontend&#39;" in refused.text
        assert _audiences(page, team.root / "bob") == []
