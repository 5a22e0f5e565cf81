"""Invites, from an attacker's side, over a real server: a secret joins one key once, under the
name and admin flag the invite says, until it expires; nothing else joins anyone."""

import threading
from dataclasses import dataclass

import pytest

from memmesh.coordinator.invites import new_secret, secret_digest
from memmesh.coordinator.protocol import (
    Info,
    Invite,
    InviteRequest,
    JoinRequest,
    JoinResponse,
    MemberRevoke,
    RevokeResponse,
    Roster,
    RosterMember,
)
from memmesh.net.client import Client
from memmesh.net.errors import Refused
from memmesh.registry import Identity
from tests._clock import START
from tests._signed import make_admin
from tests.coordinator._served import TOKEN, Served
from tests.registry._helpers import TEAM

DAY = 24 * 3600.0


@dataclass
class Inviting(Served):
    """The served coordinator and its first admin, who makes the invites."""

    admin: Identity

    def invite(self, name: str, *, admin: bool = False, expires_at: float = START + DAY) -> str:
        """A secret for a new invite for ``name``, made by the admin."""
        secret = new_secret()
        request = InviteRequest(
            name=name, digest=secret_digest(secret), expires_at=expires_at, admin=admin
        )
        with self.client(self.admin) as client:
            client.post("/v1/invites", request, Invite)
        return secret

    def join(self, identity: Identity, secret: str) -> JoinResponse:
        # A newcomer has no token yet: joining needs only the signature.
        with self.client(identity, token=None) as client:
            return client.post("/v1/join", JoinRequest(secret=secret), JoinResponse)

    def refused(self, identity: Identity, secret: str) -> tuple[int, str]:
        with pytest.raises(Refused) as caught:
            self.join(identity, secret)
        return caught.value.http_status, caught.value.message


@pytest.fixture
def served(served: Inviting) -> Inviting:
    ada = served.key("ada")
    make_admin(served.coordinator, ada, "ada")
    return Inviting(served.coordinator, served.url, served.clock, served.root, ada)


def _names(served: Inviting) -> list[str]:
    return [m.name for m in served.coordinator.membership.roster().members]


def test_an_invite_joins_the_signer_under_its_name_and_admin_flag(served: Inviting) -> None:
    carol = served.key("carol")
    secret = served.invite("carol", admin=True)
    served.clock.now = START + 5

    joined = served.join(carol, secret)

    assert joined == JoinResponse(
        member=RosterMember(
            name="carol", key=carol.public_key_text, key_id=carol.key_id, admin=True,
            added_at=START + 5,
        ),
        team=TEAM,
        coordinator_key=served.coordinator.identity.public_key_text,
        embedder=served.coordinator.store.embedder.name,  # the team's space, for its team.yaml
    )  # fmt: skip
    with served.client(carol) as client:
        assert client.get("/v1/info", Info).coordinator_key == joined.coordinator_key
        roster = client.get("/v1/members", Roster)
    assert [(m.name, m.admin) for m in roster.members] == [("ada", True), ("carol", True)]
    # Only the secret's SHA-256 ever reached the coordinator's file.
    files = served.coordinator.store.cache.path.parent.glob("memory.db*")
    assert all(secret.encode() not in path.read_bytes() for path in files)


def test_an_invite_used_once_is_refused_to_the_next_key(served: Inviting) -> None:
    secret = served.invite("carol")
    served.join(served.key("carol"), secret)
    served.clock.now = START + 60

    refused = served.refused(served.key("mallory"), secret)

    assert refused == (
        403,
        "this invite was used on 2023-11-14 22:13 UTC; ask for a new one (HTTP 403)",
    )
    assert _names(served) == ["ada", "carol"]


def test_an_expired_invite_is_refused(served: Inviting) -> None:
    secret = served.invite("carol", expires_at=START + 60)
    served.clock.now = START + 60

    refused = served.refused(served.key("carol"), secret)

    assert refused == (
        403,
        "this invite expired on 2023-11-14 22:14 UTC; ask for a new one (HTTP 403)",
    )
    assert _names(served) == ["ada"]


def test_a_secret_no_invite_was_made_for_is_refused(served: Inviting) -> None:
    served.invite("carol")

    refused = served.refused(served.key("mallory"), new_secret())

    assert refused == (403, f"this invite is not one of team {TEAM!r}'s (HTTP 403)")
    assert _names(served) == ["ada"]


def test_a_key_already_a_member_is_a_conflict_and_leaves_the_invite_unused(
    served: Inviting,
) -> None:
    secret = served.invite("carol")

    refused = served.refused(served.admin, secret)
    carol = served.join(served.key("carol"), secret)

    assert refused == (409, f"this key is a member of team {TEAM!r} already, as ada (HTTP 409)")
    assert carol.member.name == "carol"


def test_a_revoked_key_cannot_join_again_with_a_new_invite(served: Inviting) -> None:
    bob = served.key("bob")
    served.join(bob, served.invite("bob"))
    with served.client(served.admin) as client:
        client.post("/v1/members/revoke", MemberRevoke(member="bob"), RevokeResponse)

    refused = served.refused(bob, served.invite("bobby"))

    assert refused == (403, "this key was revoked on 2023-11-14 22:13 UTC (HTTP 403)")


def test_an_invite_for_a_name_an_active_member_has_is_a_conflict(served: Inviting) -> None:
    request = InviteRequest(name="ada", digest=secret_digest(new_secret()), expires_at=START + 60)
    with served.client(served.admin) as client, pytest.raises(Refused) as refused:
        client.post("/v1/invites", request, Invite)

    assert refused.value.http_status == 409


def test_an_invite_that_has_already_expired_is_refused(served: Inviting) -> None:
    request = InviteRequest(name="carol", digest=secret_digest(new_secret()), expires_at=START)
    with served.client(served.admin) as client, pytest.raises(Refused) as refused:
        client.post("/v1/invites", request, Invite)

    assert refused.value.http_status == 400


def test_joining_needs_a_signed_request(served: Inviting) -> None:
    secret = served.invite("carol")
    with Client(served.url, token=TOKEN) as client, pytest.raises(Refused) as refused:
        client.post("/v1/join", JoinRequest(secret=secret), JoinResponse)

    assert refused.value.http_status == 401
    assert _names(served) == ["ada"]


def test_an_invite_lasting_longer_than_thirty_days_is_refused(served: Inviting) -> None:
    # The admin's `mem team invite` caps its --ttl; the coordinator holds the same line for any
    # client: a leaked code must not join someone a century later.
    for expires_at in (START + 100 * 365 * DAY, START + 30 * DAY + 1):
        request = InviteRequest(
            name="carol", digest=secret_digest(new_secret()), expires_at=expires_at
        )
        with served.client(served.admin) as client, pytest.raises(Refused) as refused:
            client.post("/v1/invites", request, Invite)
        assert refused.value.http_status == 400
        assert "30 days" in refused.value.message
    assert served.invite("carol", expires_at=START + 30 * DAY)  # the longest allowed


def test_an_invite_expiring_past_any_date_is_a_400_not_a_500(served: Inviting) -> None:
    # Found by bench/fuzz.py: such a time overflowed while the refusal was being worded.
    for expires_at in (9223372036854775808.0, 1e300):
        request = InviteRequest(
            name="carol", digest=secret_digest(new_secret()), expires_at=expires_at
        )
        with served.client(served.admin) as client, pytest.raises(Refused) as refused:
            client.post("/v1/invites", request, Invite)
        assert refused.value.http_status == 400
        assert "expires_at" in refused.value.message


def test_one_invite_presented_by_two_keys_at_once_joins_exactly_one(served: Inviting) -> None:
    secret = served.invite("carol")
    keys = [served.key(f"rival{n}") for n in range(6)]
    outcomes: list[str | int] = []

    def present(identity: Identity) -> None:
        try:
            outcomes.append(served.join(identity, secret).member.key)
        except Refused as exc:
            outcomes.append(exc.http_status)

    threads = [threading.Thread(target=present, args=(key,)) for key in keys]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    joined = [o for o in outcomes if isinstance(o, str)]
    assert len(joined) == 1
    assert [o for o in outcomes if isinstance(o, int)] == [403] * 5
    assert _names(served) == ["ada", "carol"]
