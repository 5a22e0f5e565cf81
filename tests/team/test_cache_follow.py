"""The team cache follows the coordinator's feed from its cursor: a refresh after a few of many
items changed reads only those, one after nothing changed reads nothing, and a purge or a change
of the roster is read again whole. A real coordinator on 127.0.0.1 and real members."""

import pytest

from memmesh.local import teamcache
from memmesh.team.refresh import Refreshed, refresh_cache
from tests.team._signed import revoke_member
from tests.team._team import Member, Team

pytestmark = pytest.mark.usefixtures("team_token")

MANY = 60


def _refresh(member: Member) -> Refreshed:
    return refresh_cache(member.home, member.policy(), member.identity)


def _share_many(member: Member, count: int, *, start: int = 0) -> list[str]:
    ids = [
        member.remember(f"Service {n} deploys from the release-{n} branch", project="web")
        for n in range(start, start + count)
    ]
    member.publish(*ids)
    member.sync()
    return ids


def test_a_refresh_after_ten_of_many_items_changed_reads_only_those(roster_team: Team) -> None:
    ada, bob = roster_team.members["ada"], roster_team.members["bob"]
    ids = _share_many(bob, MANY)

    first = _refresh(ada)
    unchanged = _refresh(ada)
    bob.retract(*ids[:5])
    bob.sync()
    _share_many(bob, 5, start=MANY)
    after = _refresh(ada)

    assert (first.full, first.read, first.items) == (True, MANY, MANY)
    assert (unchanged.full, unchanged.read, unchanged.written, unchanged.removed) == (
        False, 0, 0, 0,
    )  # fmt: skip
    assert (after.full, after.read) == (False, 10)
    assert (after.written, after.removed, after.items) == (5, 5, MANY)
    cached = {i.item_id for i in teamcache.in_scope(ada.home, ["web"])[0]}
    assert not cached & set(ids[:5])


def test_a_revocation_on_the_roster_makes_the_next_refresh_read_the_feed_whole(
    roster_team: Team,
) -> None:
    ada, bob = roster_team.members["ada"], roster_team.members["bob"]
    carol = roster_team.add("carol")
    assert roster_team.host is not None
    from tests._signed import add_member

    add_member(roster_team.host, ada.identity, carol.identity, "carol")
    _share_many(bob, 3)
    _share_many(carol, 2, start=10)
    _refresh(ada)

    revoke_member(roster_team, ada, bob)
    after = _refresh(ada)

    assert after.full
    assert {i.author for i in teamcache.in_scope(ada.home, ["web"])[0]} == {"carol"}


def test_a_purge_makes_the_next_refresh_read_the_feed_whole(roster_team: Team) -> None:
    ada, bob = roster_team.members["ada"], roster_team.members["bob"]
    _share_many(bob, 3)
    _refresh(ada)
    assert roster_team.host is not None

    roster_team.host.holdings.purge(bob.identity.public_key_text)
    after = _refresh(ada)

    assert (after.full, after.items) == (True, 0)
