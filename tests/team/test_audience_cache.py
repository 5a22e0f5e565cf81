"""The team cache, and the feed, hold only what the member's verified roster lets it read: a
refresh drops the items of a group the member was taken out of, brings what a widened reach
skipped before, and takes out an item whose new version leaves the member out, without barring
it for good; whatever the coordinator feeds.

A real coordinator on 127.0.0.1 holding the admins' signed chain; members publish and sync
through the Python API and refresh their caches as `mem team cache refresh` does.
"""

import pytest

from memmesh.coordinator._audiences import Gate
from memmesh.local import teamcache
from memmesh.registry import roster_chain as chain
from memmesh.registry.envelopes import Audience
from memmesh.team.feed import team_feed
from memmesh.team.refresh import Refreshed, refresh_cache
from tests.team._audiences import publish_again_for, publish_for, regroup
from tests.team._signed import SignedTeam
from tests.team._team import LOCKS, Member

pytestmark = pytest.mark.usefixtures("team_token")

CORE = Audience.of(groups=["core"])
GYP = "npm install fails with node-gyp error E1234 unless python3-dev is installed"


def _refresh(member: Member) -> Refreshed:
    return refresh_cache(member.home, member.policy(), member.identity)


def _cached(member: Member) -> dict[str, int]:
    """The texts in ``member``'s cache, with the version of each."""
    items, _ = teamcache.in_scope(member.home, ["global"])
    return {item.text: item.version for item in items}


def _share_for(member: Member, text: str, audience: Audience | None) -> str:
    item_id = publish_for(member, text, audience)
    member.sync()
    return item_id


def test_the_cache_of_a_member_taken_out_of_a_group_drops_the_groups_items(
    signed: SignedTeam, carol: Member
) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    _share_for(ada, LOCKS, CORE)
    _share_for(ada, GYP, None)
    _refresh(bob)
    assert set(_cached(bob)) == {LOCKS, GYP}

    regroup(signed, "core", remove=(bob,))
    _refresh(bob)

    assert set(_cached(bob)) == {GYP}


def test_a_member_let_into_a_group_gets_what_it_skipped_before(
    signed: SignedTeam, carol: Member
) -> None:
    ada = signed.team.members["ada"]
    _share_for(ada, LOCKS, CORE)
    _refresh(carol)
    assert _cached(carol) == {}
    assert _refresh(carol).full is False  # nothing changed: it follows the feed

    regroup(signed, "core", add=(carol,))
    refreshed = _refresh(carol)

    assert refreshed.full is True
    assert _cached(carol) == {LOCKS: 1}


def test_a_readers_items_leave_the_cache(signed: SignedTeam, carol: Member) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    _share_for(bob, LOCKS, None)
    _share_for(ada, GYP, None)
    _refresh(carol)
    assert set(_cached(carol)) == {LOCKS, GYP}

    assert signed.admin is not None
    key = bob.identity.public_key_text
    signed.post(chain.set_role(signed.state, signed.admin.identity, key=key, role="reader"))
    _refresh(carol)

    assert set(_cached(carol)) == {GYP}


def test_a_new_version_that_leaves_the_member_out_takes_its_copy_out_but_not_for_good(
    signed: SignedTeam, carol: Member
) -> None:
    ada = signed.team.members["ada"]
    item_id = _share_for(ada, LOCKS, None)
    _share_for(ada, GYP, None)
    _refresh(carol)
    assert _cached(carol) == {LOCKS: 1, GYP: 1}

    # ada publishes the item again for core alone: a new version carol may not read.
    publish_again_for(ada, item_id, CORE)
    ada.sync()
    _refresh(carol)
    assert _cached(carol) == {GYP: 1}

    regroup(signed, "core", add=(carol,))
    _refresh(carol)

    assert _cached(carol) == {LOCKS: 2, GYP: 1}


@pytest.fixture
def bent(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on the coordinator feeds every caller every item, as an operator's own build
    of it that ignores audiences would."""
    monkeypatch.setattr(Gate, "admits", lambda self, author_key, project, audience: True)


@pytest.mark.usefixtures("bent")
def test_a_coordinator_that_feeds_what_a_member_may_not_read_does_not_get_it_cached(
    signed: SignedTeam, carol: Member
) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    _share_for(ada, LOCKS, CORE)
    _share_for(ada, GYP, None)

    refreshed = _refresh(carol)
    _refresh(bob)

    assert set(_cached(carol)) == {GYP}
    assert refreshed.dropped == {"not_in_audience": 1}
    assert set(_cached(bob)) == {LOCKS, GYP}
    regroup(signed, "core", remove=(bob,))
    _refresh(bob)
    assert set(_cached(bob)) == {GYP}


@pytest.mark.usefixtures("bent")
def test_a_new_version_fed_to_a_member_it_leaves_out_takes_the_copy_out(
    signed: SignedTeam, carol: Member
) -> None:
    ada = signed.team.members["ada"]
    item_id = _share_for(ada, LOCKS, None)
    _refresh(carol)
    assert _cached(carol) == {LOCKS: 1}

    publish_again_for(ada, item_id, CORE)
    ada.sync()
    refreshed = _refresh(carol)

    assert _cached(carol) == {}
    assert refreshed.full is True


@pytest.mark.usefixtures("bent")
def test_the_team_feed_shows_nothing_a_member_may_not_read_whatever_the_coordinator_sends(
    signed: SignedTeam, carol: Member
) -> None:
    ada = signed.team.members["ada"]
    _share_for(ada, LOCKS, CORE)
    _share_for(ada, GYP, None)

    feed = team_feed(carol.policy(), carol.identity, home=carol.home)

    assert [entry.text for entry in feed.entries] == [GYP]
    assert feed.dropped == {"not_in_audience": 1}


def test_the_cache_keeps_whom_each_item_is_for_and_the_brief_names_it(
    signed: SignedTeam, carol: Member
) -> None:
    from memmesh.agents.teampart import author_line

    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    _share_for(ada, LOCKS, CORE)
    _share_for(ada, GYP, None)
    _refresh(bob)

    items, _ = teamcache.in_scope(bob.home, ["global"])
    by_text = {item.text: item for item in items}

    assert by_text[LOCKS].audience == ("core",)
    assert by_text[GYP].audience == ()
    assert author_line(by_text[LOCKS]).startswith("- [decision] ada (for core): ")
