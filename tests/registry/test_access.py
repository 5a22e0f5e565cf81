"""Who may read an item and who may publish in a project, as the signed roster says."""

import pytest

from memmesh.registry import Identity
from memmesh.registry.access import Access
from memmesh.registry.envelopes import Audience
from memmesh.registry.errors import PublishNotAllowed, UnknownAudience
from memmesh.registry.roster_chain import grant, group, join, revoke, set_role
from tests.registry._chain import Chain


@pytest.fixture
def team(with_bob: Chain, ada: Identity, bob: Identity, cy: Identity) -> Chain:
    """ada (admin), bob and cy; ada and bob are the backend group."""
    secret = with_bob.invited(ada, "cy")
    with_bob.append(join(with_bob.state, cy, invite_secret=secret, name="cy", at=with_bob.at()))
    with_bob.append(group(with_bob.state, ada, name="backend", add=[ada.key_id, bob.key_id]))
    return with_bob


def test_an_item_for_a_group_is_read_by_its_members_and_its_author_only(
    team: Chain, ada: Identity, bob: Identity, cy: Identity
) -> None:
    access = Access(team.state)
    audience = Audience.of(["backend"])
    reads = {
        who.key_id: access.may_read(who.key_id, author=cy.key_id, project="p", audience=audience)
        for who in (ada, bob, cy)
    }
    assert reads == {ada.key_id: True, bob.key_id: True, cy.key_id: True}
    mine = Audience.of(["backend"])
    assert not access.may_read(cy.key_id, author=ada.key_id, project="p", audience=mine)


def test_taking_a_member_out_of_the_group_stops_their_reading(
    team: Chain, ada: Identity, bob: Identity
) -> None:
    team.append(group(team.state, ada, name="backend", remove=[bob.key_id]))
    audience = Audience.of(["backend"])
    assert not Access(team.state).may_read(
        bob.key_id, author=ada.key_id, project="p", audience=audience
    )


def test_a_revoked_author_or_reader_reads_nothing_restricted(
    team: Chain, ada: Identity, bob: Identity
) -> None:
    team.append(revoke(team.state, ada, key=bob.public_key_text))
    access = Access(team.state)
    named = Audience.of(members=[bob.key_id])
    assert not access.may_read(bob.key_id, author=bob.key_id, project="p", audience=named)
    assert access.may_read(bob.key_id, author=ada.key_id, project="p", audience=None)


def test_a_project_read_grant_narrows_even_a_team_wide_item(
    team: Chain, ada: Identity, bob: Identity, cy: Identity
) -> None:
    team.append(grant(team.state, ada, project="api", read=Audience.of(["backend"]), publish=None))
    access = Access(team.state)
    assert access.may_read(bob.key_id, author=ada.key_id, project="api", audience=None)
    assert not access.may_read(cy.key_id, author=ada.key_id, project="api", audience=None)
    assert access.may_read(cy.key_id, author=ada.key_id, project="web", audience=None)
    only_cy = Audience.of(members=[cy.key_id])
    assert not access.may_read(cy.key_id, author=ada.key_id, project="api", audience=only_cy)


def test_a_reader_and_a_member_left_out_of_a_publish_grant_may_not_publish(
    team: Chain, ada: Identity, bob: Identity, cy: Identity
) -> None:
    team.append(set_role(team.state, ada, key=cy.public_key_text, role="reader"))
    only_ada = Audience.of(members=[ada.key_id])
    team.append(grant(team.state, ada, project="api", read=None, publish=only_ada))
    access = Access(team.state)
    assert access.publish_refusal(cy.key_id, "web") == "reader"
    assert access.publish_refusal(bob.key_id, "api") == "not_granted"
    assert access.publish_refusal(bob.key_id, "web") is None
    assert access.publish_refusal(ada.key_id, "api") is None
    with pytest.raises(PublishNotAllowed) as caught:
        access.check_publish(bob.key_id, "bob", "api")
    assert caught.value.reason == "not_granted"


def test_names_resolve_to_groups_and_members_and_unknown_ones_are_refused(
    team: Chain, bob: Identity, cy: Identity
) -> None:
    access = Access(team.state)
    assert access.resolve(["Backend", "CY"]) == Audience(groups=("backend",), members=(cy.key_id,))
    assert access.resolve([bob.key_id]) == Audience(members=(bob.key_id,))
    with pytest.raises(UnknownAudience) as caught:
        access.resolve(["backend", "frontend", "zed"])
    assert caught.value.names == ["frontend", "zed"]
    assert [
        m.name
        for m in access.readers(author=cy.key_id, project="p", audience=Audience.of(["backend"]))
    ] == ["ada", "bob", "cy"]


def test_without_a_signed_roster_an_item_with_an_audience_is_for_its_author_alone(
    bob: Identity, ada: Identity
) -> None:
    access = Access(None)
    audience = Audience.of(["backend"])
    assert not access.may_read(bob.key_id, author=ada.key_id, project="p", audience=audience)
    assert access.may_read(bob.key_id, author=ada.key_id, project="p", audience=None)
    with pytest.raises(UnknownAudience):
        access.resolve(["backend"])


def test_a_member_s_mark_moves_when_their_reach_does(
    team: Chain, ada: Identity, bob: Identity, cy: Identity
) -> None:
    before = Access(team.state)
    team.append(group(team.state, ada, name="backend", remove=[bob.key_id]))
    after = Access(team.state)
    assert before.mark(bob.key_id) != after.mark(bob.key_id)
    assert before.mark(cy.key_id) == after.mark(cy.key_id)
