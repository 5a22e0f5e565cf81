"""The team section of the page: where the member's items stand, the registry log with its
verdict, a home with no team, a coordinator that does not answer, and input the page refuses."""

import re
import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import pytest

from memmesh.home import open_store
from memmesh.local.store import Store
from memmesh.policy import PolicyInvalid
from memmesh.web._team_status import current
from memmesh.web.app import create_app
from memmesh.web.security import new_token
from memmesh.web.team import warm
from tests.team._signed import SignedTeam
from tests.team._team import LOCKS, NOWHERE, Member, Team
from tests.web._page import Page, serving

SECTION_PAGES = (
    "/team",
    "/team/feed",
    "/team/members",
    "/team/sources",
    "/team/log",
    "/team/disclosures",
    "/team/ask",
)


def _row(html: str, attribute: str, value: str) -> str:
    """The table row (or list item) of ``html`` whose ``attribute`` is ``value``."""
    found = re.search(
        rf'<(tr|li|article)[^>]*{attribute}="{re.escape(value)}"[^>]*>(.*?)</\1>', html, re.S
    )
    assert found, f"no row with {attribute}={value}"
    return found.group(0)


def test_status_shows_per_project_what_is_published_and_what_the_policy_keeps_private(
    signed: SignedTeam,
) -> None:
    ada = signed.team.members["ada"]
    published = ada.share("We deploy billing with blue green switches", project="billing")
    kept = ada.remember("I like tabs over spaces", kind="preference", project="billing")
    eligible = ada.remember("Invoices go out on the first workday", project="billing")
    with serving(ada.home) as page:
        answer = page.get("/team")
        assert answer.status_code == 200
        billing = _row(answer.text, "data-project", "billing")
        cells = re.findall(r'<td class="num decision (\w+)[^"]*">(\d+)</td>', billing)
        assert cells == [("published", "1"), ("private", "2"), ("eligible", "1"), ("withheld", "0")]
        assert "share.kinds: preference is not shared" in billing

        items = page.get("/team", project="billing")
    assert items.status_code == 200
    assert 'data-state="published"' in _row(items.text, "data-item", published)
    assert "share.kinds: decision" in _row(items.text, "data-item", published)
    private = _row(items.text, "data-item", kept)
    assert 'data-state="private"' in private
    assert "share.kinds: preference is not shared" in private
    assert 'data-state="eligible"' in _row(items.text, "data-item", eligible)


def _cells(html: str, project: str) -> list[tuple[str, str]]:
    """The counts of ``project``'s row: published, private, eligible, withheld."""
    row = _row(html, "data-project", project)
    return re.findall(r'<td class="num decision (\w+)[^"]*">(\d+)</td>', row)


def _awaiting(html: str) -> str:
    found = re.search(r'<span class="value">(\d+)</span><span class="label">registry entries', html)
    assert found, "no count of entries awaiting sync"
    return found.group(1)


def test_the_status_follows_every_change_made_since_the_last_visit(signed: SignedTeam) -> None:
    ada = signed.team.members["ada"]
    first = ada.remember("Invoices go out on the first workday", project="billing")
    with serving(ada.home) as page:
        shown = page.get("/team").text
        assert _cells(shown, "billing") == [
            ("published", "0"), ("private", "1"), ("eligible", "1"), ("withheld", "0")
        ]  # fmt: skip
        ada.publish(first)  # in another process: the registry's head moves
        shown = page.get("/team").text
        assert _cells(shown, "billing") == [
            ("published", "1"), ("private", "0"), ("eligible", "0"), ("withheld", "0")
        ]  # fmt: skip
        assert _awaiting(shown) == "1"
        ada.sync()  # acknowledged, the head unmoved
        assert _awaiting(page.get("/team").text) == "0"
        second = ada.remember("Refunds need two approvals", project="billing")
        assert _cells(page.get("/team").text, "billing") == [
            ("published", "1"), ("private", "1"), ("eligible", "1"), ("withheld", "0")
        ]  # fmt: skip
        assert 'data-state="eligible"' in _row(
            page.get("/team", project="billing").text, "data-item", second
        )
        ada.write_policy(**{**ada.overrides, "share": {"kinds": ["convention"]}})
        shown = page.get("/team").text
        assert _cells(shown, "billing") == [
            ("published", "0"), ("private", "1"), ("eligible", "0"), ("withheld", "1")
        ]  # fmt: skip
        assert "the policy now withholds" in shown
        items = page.get("/team", project="billing").text
        assert 'data-state="withheld"' in _row(items, "data-item", first)
        assert 'data-state="private"' in _row(items, "data-item", second)
        page.follow(page.post(f"/items/{second}/forget", {}))  # the page's own change
        items = page.get("/team", project="billing").text
        assert f'data-item="{second}"' not in items
        assert _cells(items, "billing") == [
            ("published", "0"), ("private", "0"), ("eligible", "0"), ("withheld", "1")
        ]  # fmt: skip


def test_an_item_the_tightened_policy_no_longer_allows_shows_as_withheld_with_its_rule(
    signed: SignedTeam,
) -> None:
    ada = signed.team.members["ada"]
    shared = ada.share("Staging deploys need a green pipeline", kind="convention")
    ada.write_policy(**{**ada.overrides, "share": {"kinds": ["decision"]}})
    with serving(ada.home) as page:
        answer = page.get("/team", project="global")
    row = _row(answer.text, "data-item", shared)
    assert 'data-state="withheld"' in row
    assert "share.kinds: convention is not shared" in row
    assert "the policy now withholds" in answer.text


def test_a_home_in_no_team_shows_how_to_start_or_join_one_on_every_team_page(
    page: Page,
) -> None:
    for path in SECTION_PAGES:
        answer = page.get(path)
        assert answer.status_code == 200, path
        assert 'data-standing="none"' in answer.text, path
        assert "mem team join CODE" in answer.text
        assert "mem team init" in answer.text
        assert 'class="tabs"' not in answer.text


def test_a_change_asked_of_a_home_in_no_team_is_refused_as_the_cli_refuses_it(
    page: Page,
) -> None:
    answer = page.post("/team/members/invite", {"name": "carol", "ttl": "24h"})
    assert answer.status_code == 403
    assert "no team policy at" in answer.text
    assert "mem team init --name NAME" in answer.text


def test_an_invalid_team_yaml_is_said_in_its_loader_s_words(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "team.yaml").write_text("version: 1\nteam: acme\nsurprise: yes\n", encoding="utf-8")
    with serving(home) as page:
        answer = page.get("/team")
    assert answer.status_code == 200
    assert 'data-standing="invalid"' in answer.text
    assert "surprise" in answer.text
    assert "mem team policy check" in answer.text


def test_a_home_with_team_yaml_and_no_key_is_told_to_make_one(tmp_path: Path) -> None:
    ada = Member("ada", tmp_path / "ada", team="acme", coordinator=NOWHERE)
    (ada.home / "identity.key").unlink()
    with serving(ada.home) as page:
        answer = page.get("/team/feed")
    assert answer.status_code == 200
    assert 'data-standing="no_key"' in answer.text
    assert "mem team init --name YOUR-NAME" in answer.text


def test_the_log_lists_the_signed_entries_with_verify_s_verdict(signed: SignedTeam) -> None:
    ada = signed.team.members["ada"]
    item = ada.share(LOCKS)
    ada.retract(item)
    with serving(ada.home) as page:
        answer = page.get("/team/log")
    assert answer.status_code == 200
    assert 'data-intact="yes"' in answer.text
    assert "ok: 2 entries, chain and signatures intact" in answer.text
    first, second = _row(answer.text, "data-seq", "1"), _row(answer.text, "data-seq", "2")
    assert "publication" in first
    assert "acknowledged" in first
    assert "retraction" in second
    assert "awaiting sync" in second


def test_a_log_whose_chain_was_altered_is_shown_as_broken(signed: SignedTeam) -> None:
    ada = signed.team.members["ada"]
    ada.share(LOCKS)
    with closing(sqlite3.connect(ada.home / "memory.db")) as db, db:
        db.execute("UPDATE registry SET recorded_at = recorded_at + 60 WHERE seq = 1")
    with serving(ada.home) as page:
        answer = page.get("/team/log")
    assert answer.status_code == 200
    assert 'data-intact="no"' in answer.text
    assert "the log does not verify" in answer.text


def test_with_the_coordinator_down_every_page_renders_and_says_it_is_unreachable(
    tmp_path: Path, team_token: None
) -> None:
    ada = Team(tmp_path, NOWHERE).add("ada")
    ada.remember(LOCKS)
    with serving(ada.home) as page:
        for path in ("/team/feed", "/team/members", "/team/disclosures"):
            answer = page.get(path)
            assert answer.status_code == 200, path
            assert 'data-failure="unreachable"' in answer.text, path
            assert "The coordinator cannot be reached" in answer.text
        sources = page.get("/team/sources")
        assert sources.status_code == 200
        coordinator = _row(sources.text, "data-source", "coordinator")
        assert 'data-status="unreachable"' in coordinator
        assert "not since this page started" in coordinator
        asked = page.post("/team/ask", {"q": "which locks does the job scheduler use"})
        assert asked.status_code == 200
        assert 'data-failure="unreachable"' in asked.text
        assert page.get("/team").status_code == 200
        assert page.get("/team/log").status_code == 200


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/team", {"project": "no such/project"}),
        ("/team/feed", {"limit": "many"}),
        ("/team/feed", {"limit": "501"}),
        ("/team/feed", {"limit": "²"}),
        ("/team/disclosures", {"limit": "0"}),
        ("/team/disclosures", {"per_asker": "-1"}),
        ("/team/disclosures", {"item": "<script>"}),
    ],
)
def test_a_query_string_the_section_cannot_take_is_a_400(
    signed: SignedTeam, path: str, params: dict[str, str]
) -> None:
    with serving(signed.team.members["ada"].home) as page:
        answer = page.get(path, **params)
    assert answer.status_code == 400, answer.text
    assert "<script>" not in answer.text


def test_a_page_warmed_at_start_counts_as_a_visit_would_and_then_follows_changes(
    signed: SignedTeam,
) -> None:
    ada = signed.team.members["ada"]
    gone = ada.remember("Invoices go out on the first workday", project="billing")
    kept = ada.remember("Refunds need two approvals", project="billing")
    ada.publish(gone)
    with Store(ada.home, author="ada") as store:
        store.forget(gone)  # outside any command: nothing retracted it yet
    with open_store(ada.home, serving=True) as store:
        warmed = warm(create_app(store, token=new_token()))
        warmed.join(timeout=60)
        assert not warmed.is_alive()
        # As `mem team status` does, the count retracted what was forgotten first.
        with ada.registry() as registry:
            assert [entry.kind for entry in registry.entries()] == ["publication", "retraction"]
        with serving(ada.home, store) as page:
            assert _cells(page.get("/team").text, "billing") == [
                ("published", "0"), ("private", "1"), ("eligible", "1"), ("withheld", "0")
            ]  # fmt: skip
            ada.publish(kept)
            assert _cells(page.get("/team").text, "billing") == [
                ("published", "1"), ("private", "0"), ("eligible", "0"), ("withheld", "0")
            ]  # fmt: skip


def test_warming_a_page_in_no_team_counts_nothing_and_fails_nothing(home: Path) -> None:
    with open_store(home, serving=True) as store:
        warmed = warm(create_app(store, token=new_token()))
        warmed.join(timeout=60)
        assert not warmed.is_alive()
        with serving(home, store) as page:
            assert 'data-standing="none"' in page.get("/team").text


def test_a_kept_count_is_never_shown_once_team_yaml_is_broken(signed: SignedTeam) -> None:
    ada = signed.team.members["ada"]
    ada.remember("Invoices go out on the first workday", project="billing")
    changing = threading.Lock()
    with open_store(ada.home, serving=True) as store:
        assert list(current(store, ada.home, changing).status.projects) == ["billing"]
        (ada.home / "team.yaml").write_text("version: 1\nteam: [not, a, name]\n", "utf-8")
        for _ in range(2):  # the first refusal keeps nothing that a second visit would show
            with pytest.raises(PolicyInvalid):
                current(store, ada.home, changing)
