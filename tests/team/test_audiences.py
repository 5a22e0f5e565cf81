"""recall-team keeps only what the asker's verified roster lets it read, whoever served it, and
says whom each hit was published for.

A real coordinator on 127.0.0.1 holding the admins' signed chain; the members' peers are real
`mem team serve` processes, or, where a peer must serve what it should not, a stand-in that
answers with the author's genuine signed envelope (:class:`~tests.team._team.FakeSource`).
"""

import time

import pytest

from memmesh.registry import roster_chain as chain
from memmesh.registry.envelopes import Audience
from tests.team._audiences import publish_for
from tests.team._signed import SignedTeam
from tests.team._team import (
    LOCKS,
    LOCKS_QUERY,
    FakeSource,
    Member,
    PeerDaemon,
    answer,
    ask,
    peer_status,
    serving,
)

pytestmark = pytest.mark.usefixtures("team_token")

LOCKS_TOO = "The job scheduler takes Postgres advisory locks, never Redis ones"


def _serving(signed: SignedTeam, member: Member, asker: Member) -> None:
    daemon = PeerDaemon(member, heartbeat=0.5)
    signed.team.daemons.append(daemon)
    daemon.launch()
    daemon.wait_ready()
    deadline = time.monotonic() + 10
    while peer_status(asker, member, daemon.url) != 200:
        assert time.monotonic() < deadline, daemon.log.read_text(encoding="utf-8")
        time.sleep(0.1)
    signed.team.wait_for_presence(member)


def test_a_hit_names_whom_its_author_published_it_for(signed: SignedTeam, carol: Member) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    publish_for(ada, LOCKS, Audience.of(groups=["core"], members=[carol.key_id]))
    publish_for(ada, LOCKS_TOO, None)
    _serving(signed, ada, bob)

    hits = {hit.text: hit for hit in ask(bob, LOCKS_QUERY).hits}
    hits.update({also.text: also for hit in hits.values() for also in hit.also})

    assert hits[LOCKS].audience == ("core", "carol")
    assert hits[LOCKS_TOO].audience == ()


def _bent_peer(fake: FakeSource, author: Member, url: str, *item_ids: str) -> None:
    """``fake`` answers at ``url`` as ``author``'s peer, serving the items ``item_ids``
    whatever the asker may read: their genuine envelopes, as ``author`` signed them."""
    fake.present_as(author, url)
    fake.hits = answer(*(author.envelope(item_id) for item_id in item_ids))


def test_a_peer_that_serves_an_item_outside_its_audience_is_not_believed(
    signed: SignedTeam, carol: Member
) -> None:
    ada = signed.team.members["ada"]
    secret = publish_for(ada, LOCKS, Audience.of(groups=["core"]))
    fake = FakeSource()
    with serving(fake) as url:
        _bent_peer(fake, ada, url, secret)
        carol.write_policy(roster_root=signed.root, peers=[url])

        result = ask(carol, LOCKS_QUERY)

    assert [s.status for s in result.sources if s.kind == "peer"] == ["ok"]
    assert result.hits == []
    assert result.dropped.get("not_in_audience") == 1


def test_a_readers_item_that_a_peer_still_serves_is_not_believed(
    signed: SignedTeam, carol: Member
) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    published = publish_for(bob, LOCKS, None)
    assert signed.admin is not None
    key = bob.identity.public_key_text
    signed.post(chain.set_role(signed.state, signed.admin.identity, key=key, role="reader"))
    fake = FakeSource()
    with serving(fake) as url:
        _bent_peer(fake, bob, url, published)
        ada.write_policy(roster_root=signed.root, peers=[url])

        result = ask(ada, LOCKS_QUERY)

    assert result.hits == []
    assert result.dropped.get("author_may_not_publish") == 1
