"""Zeroconf discovery on loopback: what is heard is a hint, verified (and its key found on the
roster) before anything signed is sent there.

Advertisers and browsers are real zeroconf instances bound to 127.0.0.1. This module's team
has a name of its own, so that other advertisers on this machine cannot pass for its members.
Two are announced for the whole module (announcing and withdrawing take seconds): ada's real
peer, and a fake "carol" whose presence each test chooses.
"""

import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

import memmesh.team._sources as sources_module
from memmesh.net.errors import Unreachable
from memmesh.net.server import free_port
from memmesh.net.signing import peer_audience
from memmesh.peer.discovery import Advertiser, Hint, browse
from memmesh.team.recall import TeamAnswer
from tests.team._team import (
    NOWHERE,
    FakeSource,
    Member,
    ask,
    peer_in_thread,
    presence_for,
    serving,
    team_on_loopback,
)

LOOPBACK = ["127.0.0.1"]
LOCKS = "We chose Postgres advisory locks over Redis for the job scheduler"
QUERY = "which locks does the job scheduler use"
# The first browse answer on loopback arrives after about 1.2 s (zeroconf's second query);
# a busy machine needs some slack on top.
PATIENCE = 2.0


@dataclass
class Lan:
    team: str
    ada: Member
    ada_item: str
    ada_url: str
    carol: Member
    fake: FakeSource
    fake_url: str


@contextmanager
def _advertised(name: str, key_id: str, url: str) -> Iterator[None]:
    port = int(url.rsplit(":", 1)[1])
    advertiser = Advertiser(interfaces=LOOPBACK, name=name, key_id=key_id, port=port).start()
    try:
        yield
    finally:
        advertiser.stop()


@pytest.fixture(scope="module")
def lan(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lan]:
    root = tmp_path_factory.mktemp("lan")
    team = f"zc-{uuid.uuid4().hex[:10]}"
    # A coordinator must be named for anything to be shareable; ada's peer never calls it.
    ada = Member("ada", root / "ada", team=team, coordinator=NOWHERE)
    item = ada.remember(LOCKS, kind="decision")
    ada.publish(item)
    fake = FakeSource()
    with ExitStack() as stack:
        ada_url = stack.enter_context(peer_in_thread(ada))
        fake_url = stack.enter_context(serving(fake))
        carol = Member("carol", root / "carol", team=team, coordinator=NOWHERE)
        stack.enter_context(_advertised("ada", ada.key_id, ada_url))
        stack.enter_context(_advertised("carol", carol.key_id, fake_url))
        yield Lan(
            team=team, ada=ada, ada_item=item, ada_url=ada_url, carol=carol, fake=fake,
            fake_url=fake_url,
        )  # fmt: skip


@pytest.fixture
def patient_browse(monkeypatch: pytest.MonkeyPatch) -> None:
    """recall-team listens on zeroconf long enough to hear a loopback answer (see the xfail)."""
    monkeypatch.setattr(
        sources_module, "browse", lambda interfaces, seconds: browse(interfaces, PATIENCE)
    )


pytestmark = pytest.mark.usefixtures("team_token")


def _ask(member: Member) -> TeamAnswer:
    return ask(member, QUERY, interfaces=LOOPBACK, deadline=5)


def _zeroconf_only(tmp_path: Path, lan: Lan) -> Member:
    """Bob knows no coordinator and no peer address: only zeroconf can lead him to ada (and
    ada's peer answers him)."""
    bob = Member("bob", tmp_path / "bob", team=lan.team, coordinator=None)
    bob.trust(lan.ada)
    bob.write_policy(discovery=True, peers=[])
    lan.ada.trust(bob)
    return bob


def test_advertiser_is_found_by_browse_with_its_key_id(lan: Lan) -> None:
    heard: list[Hint] = []
    for _ in range(3):  # multicast may lose an answer; what is heard must still be exact
        heard += browse(LOOPBACK, PATIENCE)
        if {lan.ada_url, lan.fake_url} <= {h.url for h in heard}:
            break

    assert Hint(url=lan.ada_url, key_id=lan.ada.key_id, name="ada") in heard
    assert Hint(url=lan.fake_url, key_id=lan.carol.key_id, name="carol") in heard


@pytest.mark.usefixtures("patient_browse")
def test_recall_team_asks_a_peer_heard_only_on_zeroconf(tmp_path: Path, lan: Lan) -> None:
    answer = _ask(_zeroconf_only(tmp_path, lan))

    assert [(h.id, h.author, h.source) for h in answer.hits] == [(lan.ada_item, "ada", "peer ada")]
    [source] = [s for s in answer.sources if s.url == lan.ada_url]
    assert (source.kind, source.status, source.learned_from) == ("peer", "ok", "zeroconf")
    assert source.hits == 1


def test_recall_team_hears_a_zeroconf_peer_within_its_own_listening_window(
    tmp_path: Path, lan: Lan
) -> None:
    bob = _zeroconf_only(tmp_path, lan)
    # Multicast may lose an answer, and then nothing is heard in that window (recall-team
    # says no source answered); a later ask hears it, as a user's next ask would.
    for attempt in range(3):
        try:
            answer = _ask(bob)
            break
        except Unreachable:
            if attempt == 2:
                raise

    assert [h.id for h in answer.hits] == [lan.ada_item]


@pytest.mark.usefixtures("patient_browse")
@pytest.mark.parametrize("presence", ["valid", "for_another_url", "outside_roster"])
def test_a_zeroconf_peer_is_asked_only_once_its_presence_verifies_and_its_key_is_a_member(
    tmp_path: Path, lan: Lan, presence: str
) -> None:
    fake = lan.fake
    if presence == "for_another_url":
        # Carol's real signature, but for an address other than where it was heard.
        elsewhere = f"http://127.0.0.1:{free_port()}"
        fake.set_presence(presence_for(lan.carol.identity, elsewhere, team=lan.team, name="carol"))
    else:
        fake.present_as(lan.carol, lan.fake_url)
    fake.heard.clear()
    with team_on_loopback(tmp_path, team=lan.team) as members:
        bob = members.add("bob", discovery=True)
        if presence != "outside_roster":
            bob.trust(bob, lan.carol)
        answer = _ask(bob)

    # The presence was fetched, with nothing signed and no token.
    fetched = [h for h in fake.heard if h.path == "/v1/presence"]
    assert fetched
    assert all(h.credentials == {} for h in fetched)
    assert [s.status for s in answer.sources if s.kind == "coordinator"] == ["ok"]
    if presence == "valid":
        assert fake.authorized("/v1/recall") == [None]  # never the token, to a peer
        assert fake.audiences("/v1/recall") == [peer_audience(lan.carol.key_id)]
        [source] = [s for s in answer.sources if s.url == lan.fake_url]
        assert (source.name, source.status, source.learned_from) == ("carol", "ok", "zeroconf")
        return
    assert [h.path for h in fake.heard] == [h.path for h in fetched]  # nothing else at all
    assert all(s.url != lan.fake_url for s in answer.sources)
    reason = "presence_url_mismatch" if presence == "for_another_url" else "outside_roster"
    assert answer.dropped.get(reason, 0) >= 1
