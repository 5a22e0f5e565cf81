"""Promoting and demoting admins on a real served coordinator: only admins may, the last admin
is never demoted, and each refusal carries its own code over the wire."""

import httpx
import pytest

from memmesh.coordinator.protocol import (
    MemberAdd,
    MemberAdmin,
    MemberRevoke,
    RevokeResponse,
    RosterMember,
)
from memmesh.net.errors import Refused
from memmesh.net.signing import coordinator_audience
from memmesh.net.wire import encode
from memmesh.registry import Identity
from tests._clock import START
from tests._signed import SignedAuth
from tests.coordinator._served import TOKEN, Served
from tests.registry._helpers import TEAM


def _refusal(served: Served, signer: Identity, path: str, member: str) -> tuple[int, str, str]:
    """The status, code and message of the coordinator's refusal of ``path`` for ``member``."""
    answer = httpx.post(
        f"{served.url}{path}",
        content=encode(MemberAdmin(member=member)),
        headers={"Authorization": f"Bearer {TOKEN}"},
        auth=SignedAuth(signer, coordinator_audience(TEAM)),
        timeout=10,
    )
    error = answer.json()["error"]
    return answer.status_code, error["code"], error["message"]


def _admins(served: Served) -> list[str]:
    roster = served.coordinator.membership.roster().members
    return [m.name for m in roster if m.admin and m.revoked_at is None]


def test_an_admin_promotes_a_member_who_may_then_revoke_the_first_admin(
    served: Served, ada: Identity, bob: Identity
) -> None:
    with served.client(ada) as client:
        promoted = client.post("/v1/members/promote", MemberAdmin(member="bob"), RosterMember)
    with served.client(bob) as client:
        revoked = client.post("/v1/members/revoke", MemberRevoke(member="ada"), RevokeResponse)

    assert (promoted.name, promoted.key, promoted.admin) == ("bob", bob.public_key_text, True)
    assert revoked.member.revoked_at == START
    assert _admins(served) == ["bob"]


def test_an_admin_demotes_another_but_never_the_last(
    served: Served, ada: Identity, bob: Identity
) -> None:
    with served.client(ada) as client:
        client.post("/v1/members/promote", MemberAdmin(member=bob.key_id), RosterMember)
        demoted = client.post("/v1/members/demote", MemberAdmin(member="ada"), RosterMember)
    last = _refusal(served, bob, "/v1/members/demote", "bob")

    assert (demoted.name, demoted.admin) == ("ada", False)
    assert last == (409, "last_admin", "bob is the team's last admin; make another admin first")
    assert _admins(served) == ["bob"]


@pytest.mark.parametrize(
    ("path", "member", "status", "code"),
    [
        ("/v1/members/promote", "zed", 404, "no_such_member"),
        ("/v1/members/demote", "zed", 404, "no_such_member"),
        ("/v1/members/promote", "ada", 409, "already_admin"),
        ("/v1/members/demote", "bob", 409, "no_admin_to_demote"),
        ("/v1/members/promote", "cy", 409, "member_revoked"),
        ("/v1/members/demote", "cy", 409, "member_revoked"),
    ],
)
def test_each_refusal_of_an_admin_has_its_code(
    served: Served, ada: Identity, bob: Identity, path: str, member: str, status: int, code: str
) -> None:
    cy = served.key("cy")
    with served.client(ada) as client:
        add = MemberAdd(name="cy", key=cy.public_key_text, admin=True)
        client.post("/v1/members/add", add, RosterMember)
        client.post("/v1/members/revoke", MemberRevoke(member="cy"), RevokeResponse)
    before = served.coordinator.membership.roster()

    refused = _refusal(served, ada, path, member)

    assert refused[:2] == (status, code)
    assert served.coordinator.membership.roster() == before


@pytest.mark.parametrize("path", ["/v1/members/promote", "/v1/members/demote"])
def test_a_member_who_is_no_admin_may_not_change_roles(
    served: Served, ada: Identity, bob: Identity, path: str
) -> None:
    refused = _refusal(served, bob, path, "bob" if "promote" in path else "ada")

    assert refused == (403, "not_an_admin", f"only an admin of team {TEAM!r} may do this")
    assert _admins(served) == ["ada"]


def test_a_promote_is_signed_like_every_roster_change(served: Served, bob: Identity) -> None:
    with served.client(bob, token=None) as client, pytest.raises(Refused) as refused:
        client.post("/v1/members/promote", MemberAdmin(member="bob"), RosterMember)

    assert refused.value.http_status == 401
