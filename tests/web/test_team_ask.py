"""Asking the team from the page: recall-team as `mem team recall-team` runs it, each answer
with its author and its source, and what it showed noted so that `mem outcome` credits it."""

import re
from pathlib import Path

import pytest

from memmesh.team.last import last_team_recall
from tests.conftest import MemRunner
from tests.team._signed import SignedTeam
from tests.team._team import LOCKS, LOCKS_QUERY
from tests.web._page import serving

HOSTILE = (
    "Rollback runbook: <script>alert('ask')</script> run <img src=x onerror=alert(1)> then "
    '<a href="javascript:alert(2)">undo the rollout</a>'
)


def _hit(html: str, item_id: str) -> str:
    found = re.search(
        rf'<article class="hit" data-item="{item_id}"[^>]*>(.*?)</article>', html, re.S
    )
    assert found, f"no hit {item_id}"
    return found.group(1)


def test_asking_the_team_shows_bob_s_answer_with_his_name_and_source(
    signed: SignedTeam, tmp_path: Path
) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    item = bob.share(LOCKS)
    with serving(ada.home) as page:
        answer = page.post("/team/ask", {"q": LOCKS_QUERY, "k": "3", "scope": "*"})
        assert answer.status_code == 200, answer.text
        hit = _hit(answer.text, item)
        assert LOCKS in hit
        assert "<strong>bob</strong>" in hit
        assert f'<code class="small">{bob.key_id}</code>' in hit
        assert 'via <span class="chip">coordinator</span>' in hit
        assert "searched: every project" in answer.text
        assert re.search(r'data-source="coordinator" data-status="ok"', answer.text)
        assert "What each source returned" in answer.text
        noted = last_team_recall(page.store)
    assert noted is not None
    assert noted.query == LOCKS_QUERY
    assert noted.team == (f"{bob.key_id}/{item}",)
    credited = MemRunner(ada.home, tmp_path / "cwd")("outcome", "--last", "worked")
    assert credited.returncode == 0, credited.stderr
    assert item[:10] in credited.stdout + credited.stderr


def test_an_answer_from_bob_s_live_peer_names_the_peer_as_its_source(
    signed: SignedTeam,
) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    item = bob.share(LOCKS)
    signed.team.serve(bob)
    signed.team.wait_for_presence(bob)
    with serving(ada.home) as page:
        answer = page.post("/team/ask", {"q": LOCKS_QUERY})
    hit = _hit(answer.text, item)
    assert "<strong>bob</strong>" in hit
    assert 'via <span class="chip">peer bob</span>' in hit
    assert re.search(r'data-source="peer" data-status="ok"', answer.text)


def test_a_project_scope_is_searched_with_global_and_said(signed: SignedTeam) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    bob.share(LOCKS)
    ada.remember("Invoices go out on the first workday", project="billing")
    with serving(ada.home) as page:
        form = page.get("/team/ask")
        assert '<option value="billing">billing + global</option>' in form.text
        answer = page.post("/team/ask", {"q": LOCKS_QUERY, "scope": "billing"})
    assert "searched: project billing + global" in answer.text
    assert '<option value="billing" selected>' in answer.text


def test_a_teammate_s_hostile_text_is_escaped_in_answers(signed: SignedTeam) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    item = bob.share(HOSTILE, kind="command")
    with serving(ada.home) as page:
        answer = page.post("/team/ask", {"q": "rollback runbook undo the rollout"})
    hit = _hit(answer.text, item)
    assert "&lt;script&gt;alert(&#39;ask&#39;)&lt;/script&gt;" in hit
    assert "<script>alert" not in answer.text
    assert "<img" not in answer.text
    assert 'href="javascript:' not in answer.text


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"q": "   "}, "q: is required"),
        ({"q": LOCKS_QUERY, "k": "0"}, "k: must be between 1 and 100"),
        ({"q": LOCKS_QUERY, "k": "lots"}, "k: must be a whole number"),
        ({"q": LOCKS_QUERY, "scope": "../etc"}, "is not a valid name"),
        ({"q": LOCKS_QUERY, "author": "<i>bob</i>"}, "is not a valid name"),
        ({"q": "x" * 9000}, "longer than 8192 bytes"),
    ],
)
def test_an_ask_the_page_cannot_take_is_a_400(
    signed: SignedTeam, fields: dict[str, str], problem: str
) -> None:
    ada = signed.team.members["ada"]
    with serving(ada.home) as page:
        answer = page.post("/team/ask", fields)
        assert answer.status_code == 400
        assert problem in answer.text
        assert "<i>bob</i>" not in answer.text
        assert last_team_recall(page.store) is None
