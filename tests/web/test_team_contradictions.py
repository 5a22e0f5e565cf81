"""The page names a teammate who says otherwise: under each of two contradicting answers when
the team is asked, and beside the member's own published item on the team status page, until
the teammate retracts theirs."""

import re
from html import escape

from tests.conftest import MemRunner
from tests.team._signed import SignedTeam
from tests.web._page import serving

REDIS = "We use Redis locks for the job queue"
POSTGRES = "We use Postgres advisory locks for the job queue"
BACKOFF = "The job queue retries a failed job with exponential backoff"
QUERY = "which locks does the job queue use"


def _hit(html: str, item_id: str) -> str:
    found = re.search(
        rf'<article class="hit" data-item="{item_id}"[^>]*>(.*?)</article>', html, re.S
    )
    assert found, f"no hit {item_id}"
    return found.group(1)


def _otherwise(hit: str) -> list[str]:
    """The ids of the items a hit is said to be contradicted by."""
    return re.findall(r'data-otherwise="([^"]+)"', hit)


def test_each_of_two_contradicting_answers_names_the_other_s_author(signed: SignedTeam) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    carol = signed.member("carol")
    signed.add(carol)
    redis, postgres, backoff = bob.share(REDIS), carol.share(POSTGRES), bob.share(BACKOFF)

    with serving(ada.home) as page:
        answer = page.post("/team/ask", {"q": QUERY, "k": "10", "scope": "*"})

    assert answer.status_code == 200, answer.text
    bob_s, carol_s = _hit(answer.text, redis), _hit(answer.text, postgres)
    assert _otherwise(bob_s) == [postgres]
    assert "<strong>carol</strong> says otherwise: " + escape(POSTGRES) in bob_s
    assert _otherwise(carol_s) == [redis]
    assert "<strong>bob</strong> says otherwise: " + escape(REDIS) in carol_s
    assert _otherwise(_hit(answer.text, backoff)) == []


def test_the_status_page_lists_an_own_item_a_teammate_contradicts(signed: SignedTeam) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    redis, postgres = ada.share(REDIS), bob.share(POSTGRES)
    mem = MemRunner(ada.home, ada.home.parent / "cwd")
    refreshed = mem("team", "cache", "refresh")
    assert refreshed.returncode == 0, refreshed.stderr

    with serving(ada.home) as page:
        shown = page.get("/team")
        assert shown.status_code == 200, shown.text
        [row] = re.findall(r'<tr data-contradicted="([^"]+)">(.*?)</tr>', shown.text, re.S)
        assert row[0] == redis
        assert escape(REDIS) in row[1]
        assert "<strong>bob</strong> says otherwise: " + escape(POSTGRES) in row[1]

        bob.retract(postgres)
        bob.sync()
        assert mem("team", "cache", "refresh").returncode == 0
        again = page.get("/team")

    assert again.status_code == 200, again.text
    assert "data-contradicted" not in again.text
