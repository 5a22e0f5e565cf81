"""The health of the team's sources on the page, as `mem team status --check` and `mem doctor`
ask: the coordinator and each peer, reachable or not, how fast, when last reached."""

import re
import socket

from tests.team._signed import SignedTeam, revoke_member
from tests.web._page import serving


def _coordinator(html: str) -> str:
    found = re.search(r'<tr data-source="coordinator" data-status="(\w+)">(.*?)</tr>', html, re.S)
    assert found, html
    return f"{found.group(1)}: {found.group(2)}"


def test_a_reachable_coordinator_shows_its_latency_and_the_last_contact(
    signed: SignedTeam,
) -> None:
    ada = signed.team.members["ada"]
    with serving(ada.home) as page:
        answer = page.get("/team/sources")
    assert answer.status_code == 200
    row = _coordinator(answer.text)
    assert row.startswith("ok: ")
    assert "reachable" in row
    assert re.search(r"\d+ ms", row)
    assert "just now" in row
    assert "accepts you as ada" in row
    assert signed.team.coordinator is not None
    assert signed.team.coordinator in row
    assert "No teammate's peer daemon is online" in answer.text
    assert "not running" in answer.text


def test_a_coordinator_that_refuses_this_member_is_said_and_no_peer_is_asked(
    signed: SignedTeam,
) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    with serving(bob.home) as page:
        assert _coordinator(page.get("/team/sources").text).startswith("ok: ")
        revoke_member(signed.team, ada, bob)
        answer = page.get("/team/sources")
    assert answer.status_code == 200
    row = _coordinator(answer.text)
    assert row.startswith("refused: ")
    assert "was revoked from team acme" in row
    assert "just now" in row  # it answered, refusing
    assert "Peers not asked" in answer.text


def test_a_live_peer_is_listed_as_reachable_with_its_latency(signed: SignedTeam) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    signed.team.serve(bob)
    signed.team.wait_for_presence(bob)
    with serving(ada.home) as page:
        answer = page.get("/team/sources")
    assert answer.status_code == 200
    peer = re.search(
        rf'<tr data-source="peer" data-status="ok">(.*?{bob.key_id}.*?)</tr>', answer.text, re.S
    )
    assert peer, answer.text
    assert "<strong>bob</strong>" in peer.group(1)
    assert "reachable" in peer.group(1)
    assert re.search(r"\d+ ms", peer.group(1))
    assert "via presence" in peer.group(1)


def test_a_coordinator_that_never_answers_is_given_up_on_and_said(
    signed: SignedTeam,
) -> None:
    ada = signed.team.members["ada"]
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        ada.coordinator = f"http://127.0.0.1:{silent.getsockname()[1]}"
        ada.write_policy(**ada.overrides)
        with serving(ada.home) as page:
            feed = page.get("/team/feed")
            sources = page.get("/team/sources")
    assert feed.status_code == 200
    assert 'data-failure="unreachable"' in feed.text
    assert "no answer within" in feed.text
    assert _coordinator(sources.text).startswith("unreachable: ")
