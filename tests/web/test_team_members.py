"""The roster on the team page: both members listed as the team's signed roster says them;
an admin invites, promotes, demotes and revokes through the same functions as `mem team`, and
a member who is no admin sees no such button, and is refused by the roster's rules when a
forged form asks all the same."""

import json
import re
from html import unescape
from pathlib import Path

import pytest

from memmesh.coordinator.invites import JoinCode
from tests.conftest import MemRunner
from tests.team._signed import SignedTeam
from tests.web._page import serving

ADMIN_FORMS = ("/team/members/invite", "/team/members/revoke", "/team/members/promote")


def _roster(home: Path, tmp_path: Path) -> dict[str, dict[str, object]]:
    """The roster `mem team members --json` lists for ``home``, by name."""
    listed = MemRunner(home, tmp_path / "cwd")("team", "members", "--json")
    assert listed.returncode == 0, listed.stderr
    return {m["name"]: m for m in json.loads(listed.stdout)["members"]}


def _row(html: str, key_id: str) -> str:
    found = re.search(rf'<tr data-member="{key_id}">(.*?)</tr>', html, re.S)
    assert found, f"no row for {key_id}"
    return found.group(1)


def test_the_members_page_lists_both_members_with_their_roles(signed: SignedTeam) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    with serving(ada.home) as page:
        answer = page.get("/team/members")
    assert answer.status_code == 200
    mine, his = _row(answer.text, ada.key_id), _row(answer.text, bob.key_id)
    assert "<strong>ada</strong>" in mine
    assert ">admin<" in mine
    assert ">you<" in mine
    assert "<strong>bob</strong>" in his
    assert ">member<" in his
    assert ">active<" in his
    assert f"root <code>{ada.key_id}</code>" in answer.text
    for form in ADMIN_FORMS:
        assert f'action="{form}"' in answer.text


def test_an_admin_invites_from_the_page_and_the_code_lets_the_new_member_join(
    signed: SignedTeam, tmp_path: Path
) -> None:
    ada = signed.team.members["ada"]
    with serving(ada.home) as page:
        answer = page.post("/team/members/invite", {"name": "carol", "ttl": "7d"})
    assert answer.status_code == 200, answer.text
    found = re.search(r"<pre class=\"team-code\" data-join-code>([^<]+)</pre>", answer.text)
    assert found
    code = found.group(1)
    decoded = JoinCode.decode(code)
    assert (decoded.name, decoded.team, decoded.root) == ("carol", "acme", ada.key_id)
    assert "shown once" in answer.text
    carol = MemRunner(tmp_path / "carol", tmp_path / "cwd")
    joined = carol("team", "join", code)
    assert joined.returncode == 0, joined.stderr
    assert _roster(ada.home, tmp_path)["carol"]["revoked_at"] is None


def test_an_admin_promotes_and_demotes_from_the_page(signed: SignedTeam, tmp_path: Path) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    with serving(ada.home) as page:
        promoted = page.follow(page.post("/team/members/promote", {"member": bob.key_id}))
        assert f"bob ({bob.key_id}) is now an admin of team acme" in promoted.text
        assert ">admin<" in _row(promoted.text, bob.key_id)
        assert _roster(bob.home, tmp_path)["bob"]["admin"] is True
        demoted = page.follow(page.post("/team/members/demote", {"member": bob.key_id}))
    assert "is no longer an admin of team acme" in demoted.text
    assert _roster(bob.home, tmp_path)["bob"]["admin"] is False


def test_an_admin_revokes_from_the_page_and_the_signed_roster_refuses_the_key(
    signed: SignedTeam, tmp_path: Path
) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    with serving(ada.home) as page:
        revoked = page.follow(page.post("/team/members/revoke", {"member": bob.key_id}))
    assert f"revoked bob ({bob.key_id}) from team acme" in revoked.text
    assert ">revoked<" in _row(revoked.text, bob.key_id)
    assert _roster(ada.home, tmp_path)["bob"]["revoked_at"] is not None
    refused = MemRunner(bob.home, tmp_path / "cwd")("team", "feed")
    assert refused.returncode == 3
    assert "was revoked from team acme" in refused.stderr


def test_the_last_admin_cannot_be_demoted_and_the_roster_says_why(signed: SignedTeam) -> None:
    ada = signed.team.members["ada"]
    with serving(ada.home) as page:
        answer = page.post("/team/members/demote", {"member": ada.key_id})
    assert answer.status_code == 409
    assert "last admin" in answer.text


def test_a_member_who_is_no_admin_sees_no_admin_buttons(signed: SignedTeam) -> None:
    bob = signed.team.members["bob"]
    with serving(bob.home) as page:
        answer = page.get("/team/members")
    assert answer.status_code == 200
    assert "<strong>ada</strong>" in answer.text
    for form in (*ADMIN_FORMS, "/team/members/demote"):
        assert form not in answer.text
    assert "Only the team's admins invite, promote and revoke members" in answer.text


def _problem(html: str) -> tuple[str, str]:
    """The error page's sentence, unescaped, and its code."""
    found = re.search(r'<p class="problem" data-code="([^"]*)">(.*?)</p>', html, re.S)
    assert found, "no problem on the page"
    return unescape(found.group(2)), found.group(1)


@pytest.mark.parametrize(
    ("path", "fields", "command"),
    [
        (
            "/team/members/invite",
            {"name": "mallory", "ttl": "24h", "admin": "on"},
            ("team", "invite", "mallory", "--ttl", "24h", "--admin"),
        ),
        ("/team/members/promote", {"member": "bob"}, ("team", "members", "promote", "bob")),
        ("/team/members/revoke", {"member": "ada"}, ("team", "revoke", "ada", "--yes")),
    ],
)
def test_a_forged_admin_form_from_a_member_who_is_no_admin_is_refused_in_the_cli_s_words(
    signed: SignedTeam,
    tmp_path: Path,
    path: str,
    fields: dict[str, str],
    command: tuple[str, ...],
) -> None:
    bob = signed.team.members["bob"]
    before = _roster(bob.home, tmp_path)
    refused = MemRunner(bob.home, tmp_path / "cwd")(*command, "--json")
    assert refused.returncode == 3
    said = json.loads(refused.stderr.strip().splitlines()[-1])["error"]
    assert said.startswith(f"this key ({bob.key_id}) may not ")
    with serving(bob.home) as page:
        answer = page.post(path, fields)
    assert answer.status_code == 403
    assert _problem(answer.text)[0] == said
    assert _roster(bob.home, tmp_path) == before


@pytest.mark.parametrize(
    ("path", "fields", "problem"),
    [
        ("/team/members/invite", {"name": "carol smith", "ttl": "24h"}, "is not a valid name"),
        ("/team/members/invite", {"name": "carol", "ttl": "forever"}, "ttl: must be one of"),
        ("/team/members/invite", {"ttl": "24h"}, "name: is required"),
        ("/team/members/revoke", {}, "member: is required"),
        ("/team/members/promote", {"member": "<b>bob</b>"}, "is not a valid name"),
    ],
)
def test_a_roster_form_the_page_cannot_take_is_a_400_and_changes_nothing(
    signed: SignedTeam, tmp_path: Path, path: str, fields: dict[str, str], problem: str
) -> None:
    ada = signed.team.members["ada"]
    before = _roster(ada.home, tmp_path)
    with serving(ada.home) as page:
        answer = page.post(path, fields)
    assert answer.status_code == 400
    assert problem in answer.text
    assert "<b>bob</b>" not in answer.text
    assert _roster(ada.home, tmp_path) == before


def test_a_roster_form_without_the_csrf_token_is_refused(signed: SignedTeam) -> None:
    ada = signed.team.members["ada"]
    with serving(ada.home) as page:
        answer = page.post("/team/members/invite", {"name": "carol", "ttl": "24h"}, csrf=False)
    assert answer.status_code == 403
    assert "CSRF" in answer.text
