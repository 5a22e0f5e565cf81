"""Asking the team from the page: recall-team as `mem team recall-team` runs it, each answer
with its author and its source, and what it showed noted so that `mem outcome` credits it."""

import re
from html import unescape
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


def _asked_with_bob_live(signed: SignedTeam) -> tuple[str, str]:
    """bob's published item, and ada's page answering LOCKS_QUERY while bob's peer serves it."""
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    item = bob.share(LOCKS)
    signed.team.serve(bob)
    signed.team.wait_for_presence(bob)
    with serving(ada.home) as page:
        answer = page.post("/team/ask", {"q": LOCKS_QUERY})
    assert answer.status_code == 200, answer.text
    return item, answer.text


def test_an_answer_from_bob_s_live_peer_names_the_peer_as_its_source(
    signed: SignedTeam,
) -> None:
    item, html = _asked_with_bob_live(signed)
    hit = _hit(html, item)
    assert "<strong>bob</strong>" in hit
    assert 'via <span class="chip">peer bob</span>' in hit
    assert re.search(r'data-source="peer" data-status="ok"', html)


def _explained_on_page(html: str) -> dict[tuple[str, str], str]:
    """What the page's explanation says became of each hit: (source, item) -> its words."""
    said: dict[tuple[str, str], str] = {}
    for source, rows in re.findall(r"<h3>([^<]+?) <span.*?</h3>(.*?)</table>", html, re.S):
        for item, words in re.findall(
            r'<tr data-fate="[a-z_]+">\s*<td class="mono small">([^<]+)</td>.*?'
            r'<span class="chip[^"]*">([^<]+)</span>',
            rows,
            re.S,
        ):
            said[unescape(source), item] = unescape(words)
    return said


def _explained_by_command(stdout: str) -> dict[tuple[str, str], str]:
    """What `mem team recall-team --explain` says became of each hit (items by their first
    ten characters)."""
    said: dict[tuple[str, str], str] = {}
    source = ""
    for line in stdout.splitlines():
        heading = re.fullmatch(r"  (.+) returned \d+:", line)
        if heading:
            source = heading.group(1)
        hit = re.fullmatch(r"    (\S+)  .*? source score [0-9.]+: (.+)", line)
        if hit:
            said[source, hit.group(1)] = hit.group(2)
    return said


def test_the_page_says_why_each_hit_was_kept_or_cut_as_the_command_line_begins_to(
    signed: SignedTeam, tmp_path: Path
) -> None:
    item, html = _asked_with_bob_live(signed)
    on_page = _explained_on_page(html)
    ada = signed.team.members["ada"]
    cli = MemRunner(ada.home, tmp_path / "cwd")("team", "recall-team", LOCKS_QUERY, "--explain")
    assert cli.returncode == 0, cli.stderr
    by_command = _explained_by_command(cli.stdout)

    assert on_page[("coordinator", item)] == "cut, replaced by its live author's own copy"
    assert by_command[("coordinator", item[:10])] == (
        f"{on_page[('coordinator', item)]} (from peer bob)"
    )
    assert on_page[("bob", item)] == "kept"
    assert by_command[("bob", item[:10])].startswith("kept, hit #1, score ")


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
