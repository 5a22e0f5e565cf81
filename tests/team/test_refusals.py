"""A roster change refused, by the coordinator or by the signed roster, said once in words
that say what it means and what to do: `mem team` and the page both say them."""

from pathlib import Path

import msgspec
import pytest

from memmesh.coordinator.errors import NotAnAdmin
from memmesh.errors import MemmeshError
from memmesh.net.errors import Refused
from memmesh.policy import Policy, parse_policy
from memmesh.registry import Identity, create_identity
from memmesh.registry.errors import RosterChainBroken
from memmesh.team.errors import KeyRevoked, NotOnRoster
from memmesh.team.refusals import Refusal, refusal_of


@pytest.fixture
def policy() -> Policy:
    return parse_policy("team: acme\n")


@pytest.fixture
def identity(tmp_path: Path) -> Identity:
    return create_identity(tmp_path / "bob")


@pytest.mark.parametrize(
    ("error", "what", "said"),
    [
        pytest.param(
            NotAnAdmin("acme"),
            "invite members",
            Refusal(
                message="this key ({key}) may not invite members in team acme: only its admins "
                "may (the team's signed roster lists it as no admin)",
                http_status=403,
                error_code="not_an_admin",
            ),
            id="the signed roster refuses a member who is no admin",
        ),
        pytest.param(
            Refused(403, "only an admin of team 'acme' may do this", "not_an_admin"),
            "revoke members",
            Refusal(
                message="this key ({key}) may not revoke members in team acme: only its admins "
                "may (the coordinator said: only an admin of team 'acme' may do this (HTTP 403))",
                http_status=403,
                error_code="not_an_admin",
            ),
            id="the coordinator refuses a member who is no admin, in its words",
        ),
        pytest.param(
            Refused(409, "the roster is signed", "roster_signed"),
            "add members",
            Refusal(
                message="team acme's roster is signed, and team.yaml does not pin its root yet: "
                "`mem team members` reads the signed roster and pins it; then run this again",
                http_status=409,
                error_code="roster_signed",
            ),
            id="a signed roster not pinned here says how to pin it",
        ),
        pytest.param(
            RosterChainBroken(3, "name_taken", "carol is an active member"),
            "invite members",
            Refusal(
                message="another active member or a group has that name: carol is an active member",
                http_status=400,
                error_code="name_taken",
                usage=True,
            ),
            id="a name the chain holds already is bad input",
        ),
    ],
)
def test_a_refused_roster_change_is_said_in_words_that_say_what_to_do(
    policy: Policy, identity: Identity, error: MemmeshError, what: str, said: Refusal
) -> None:
    expected = msgspec.structs.replace(said, message=said.message.format(key=identity.key_id))
    assert refusal_of(error, "admin", what, policy, identity) == expected


def test_a_key_off_the_roster_is_said_as_every_team_command_says_it(
    policy: Policy, identity: Identity
) -> None:
    refused = Refused(403, f"key {identity.key_id} is not a member of team 'acme'", "forbidden")
    said = refusal_of(refused, "admin", "invite members", policy, identity)
    assert isinstance(said, NotOnRoster)
    assert said.key_id == identity.key_id


def test_a_chain_that_breaks_for_another_reason_is_left_as_it_is(
    policy: Policy, identity: Identity
) -> None:
    broken = RosterChainBroken(3, "prev_mismatch", "statement 3 follows no statement")
    assert refusal_of(broken, "admin", "invite members", policy, identity) is broken


def test_a_coordinator_without_the_route_says_so_itself(policy: Policy, identity: Identity) -> None:
    refused = Refused(404, "no route POST /v1/roster/statements", "not_found")
    assert refusal_of(refused, "admin", "invite members", policy, identity) is refused


def test_a_join_from_a_revoked_key_says_to_join_from_a_new_home(tmp_path: Path) -> None:
    home = tmp_path / "bob"
    said = refusal_of(KeyRevoked("k3f9", "acme", "2026-01-02"), "join", "join", home=home)
    assert isinstance(said, Refusal)
    assert said.message.startswith(
        "this home's key was revoked from the team on 2026-01-02 and stays refused; "
        "the join code was not used"
    )
    assert f"`mem --home {home}-new team join CODE`" in said.message
    assert (said.http_status, said.error_code) == (403, "key_revoked")


def test_a_revoked_key_is_no_join_refusal_for_any_other_request(
    policy: Policy, identity: Identity
) -> None:
    revoked = KeyRevoked(identity.key_id, "acme", "2026-01-02")
    assert refusal_of(revoked, "member", "list members", policy, identity) is revoked
