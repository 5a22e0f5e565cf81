"""`mem team recall-team` end to end: the real command line against a real coordinator and
real peer daemons (`mem team serve` processes) on 127.0.0.1, plus tiny fakes where a source
must misbehave (too slow, tampered answers)."""

import json
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from memmesh.cli.main import main
from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.coordinator.protocol import PublishItem, PublishRequest, PublishResponse
from memmesh.local._recall import recall
from memmesh.local.store import Store
from memmesh.net.server import free_port
from memmesh.net.signing import peer_audience
from memmesh.registry import Envelope
from memmesh.team.recall import recall_team
from tests._servers import running
from tests._signed import signed_client
from tests.cli._output import error_line, json_error, json_of
from tests.conftest import MemRunner
from tests.team._team import (
    LOCKS,
    LOCKS_QUERY,
    NOWHERE,
    PARKED,
    PARKED_AGAIN,
    PARKED_QUERY,
    TEAM,
    TOKEN,
    FakeSource,
    Member,
    Team,
    answer,
    claim,
    serving,
    team_on_loopback,
)

REVIEW = "Decided to move the quarterly review of the job scheduler to Thursdays"
PRIVATE_LOCKS = "Decided the job scheduler locks expire after thirty seconds"
WEBHOOKS = "The billing service retries failed webhooks 5 times with exponential backoff"
INVOICES = "The billing service sends invoices on the first day of every month"
BILLING_QUERY = "what does the billing service do"
GYP = "npm install fails with node-gyp error E1234 unless python3-dev is installed"


pytestmark = pytest.mark.usefixtures("team_token")


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    """A coordinator on 127.0.0.1 and members using it; every daemon is stopped afterwards."""
    with team_on_loopback(tmp_path) as members:
        yield members


def _recall_team(member: Member, query: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`mem --home H team recall-team QUERY ARGS --json`, run for real."""
    return MemRunner(member.home, Path.cwd())("team", "recall-team", query, *args, "--json")


def _ask(member: Member, query: str, *args: str) -> dict[str, Any]:
    """The JSON answer of a recall-team that must succeed."""
    data = json_of(_recall_team(member, query, *args))
    assert data["query"] == query
    return data


def _hits(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(hit["id"], hit["author"], hit["source"]) for hit in data["hits"]]


def _python_hits(member: Member, query: str) -> list[tuple[str, str, str]]:
    """The same question through the Python API: a cheaper control than another process."""
    with Store(member.home, author=member.name) as store:
        result = recall_team(store, member.policy(), query, identity=member.identity, deadline=10)
    return [(hit.id, hit.author, hit.source) for hit in result.hits]


def _source(data: dict[str, Any], name: str) -> dict[str, Any]:
    [source] = [s for s in data["sources"] if s["name"] == name]
    assert isinstance(source, dict)
    return source


def _outcomes(data: dict[str, Any]) -> dict[str, tuple[str, int]]:
    return {s["name"]: (s["status"], s["hits"]) for s in data["sources"]}


def test_answer_json_has_the_documented_shape(team: Team) -> None:
    ada, bob = team.add("ada"), team.add("bob")
    locks = ada.share(LOCKS, project="shop", tags=("postgres",))

    data = _ask(bob, LOCKS_QUERY, "--project", "shop", "-k", "3")

    assert set(data) == {
        "query", "hits", "abstained", "sources", "dropped", "warnings", "scope",
    }  # fmt: skip
    assert data["scope"] == {
        "projects": ["shop", "global"], "all_projects": False, "project_from": "--project",
        "author": None,
    }  # fmt: skip
    assert data["abstained"] is False
    assert (data["dropped"], data["warnings"]) == ({}, [])
    [hit] = data["hits"]
    assert {"id", "text", "score", "author", "source"} <= set(hit)
    assert (hit["id"], hit["text"], hit["author"], hit["source"]) == (
        locks, LOCKS, "ada", "coordinator"
    )  # fmt: skip
    assert (hit["kind"], hit["project"], hit["tags"], hit["version"]) == (
        "decision", "shop", ["postgres"], 1
    )  # fmt: skip
    assert hit["key_id"] == ada.key_id
    assert (hit["authors"], hit["also"]) == ([{"name": "ada", "key_id": ada.key_id}], [])
    assert isinstance(hit["score"], float)
    assert hit["score"] > 0
    assert hit["score"] == round(hit["score"], 4)
    # An ISO 8601 UTC time, like every other time a --json document gives.
    assert datetime.fromisoformat(hit["published_at"]).utcoffset() == timedelta(0)
    [source] = data["sources"]
    assert {"name", "kind", "url", "status", "error", "hits"} <= set(source)
    assert (source["name"], source["kind"], source["url"]) == (
        "coordinator", "coordinator", team.coordinator
    )  # fmt: skip
    assert (source["status"], source["error"], source["hits"]) == ("ok", "", 1)


def test_published_item_is_found_through_the_live_peer_then_the_coordinator(team: Team) -> None:
    ada, bob = team.add("ada"), team.add("bob")
    locks = ada.share(LOCKS)
    # Just as relevant and eligible by the policy, but never published.
    private = ada.remember(PRIVATE_LOCKS, kind="decision")
    with Store(ada.home) as store:  # the control: ada's own recall finds both
        assert {h.item.id for h in recall(store, LOCKS_QUERY, record=False).hits} == {
            locks, private
        }  # fmt: skip
    [daemon] = team.serve(ada)
    team.wait_for_presence(ada)

    live = _ask(bob, LOCKS_QUERY, "-k", "10")
    assert _hits(live) == [(locks, "ada", "peer ada")]
    assert _outcomes(live) == {"coordinator": ("ok", 1), "ada": ("ok", 1)}
    assert _source(live, "ada")["url"] == daemon.url
    assert _source(live, "ada")["learned_from"] == "presence"

    daemon.kill()  # a crash: its presence is still listed, but it answers no more
    cached = _ask(bob, LOCKS_QUERY, "-k", "10")
    assert _hits(cached) == [(locks, "ada", "coordinator")]
    assert _source(cached, "ada")["status"] == "failed"
    assert _source(cached, "ada")["error"]
    for data in (live, cached):
        assert private not in json.dumps(data)
        assert PRIVATE_LOCKS not in json.dumps(data)


def test_retracted_item_is_gone_from_every_answer_and_never_comes_back(team: Team) -> None:
    ada, bob = team.add("ada"), team.add("bob")
    gyp = ada.share(GYP, kind="gotcha")
    publication = ada.envelope(gyp)
    [daemon] = team.serve(ada)
    team.wait_for_presence(ada)
    assert _python_hits(bob, "node-gyp E1234") == [(gyp, "ada", "peer ada")]  # the control

    # Retracted but not synced: the coordinator still holds a copy, and the live author's
    # word (confirm) withdraws it.
    ada.retract(gyp)
    stale_copy = _ask(bob, "node-gyp E1234")
    assert stale_copy["hits"] == []
    assert stale_copy["abstained"] is True
    assert _outcomes(stale_copy) == {"coordinator": ("ok", 1), "ada": ("ok", 0)}
    assert stale_copy["dropped"] == {"withdrawn_by_author": 1}

    # One sync: the tombstone reaches the coordinator; nobody serves the item any more.
    assert ada.sync().accepted == 1
    assert _python_hits(bob, "node-gyp E1234") == []

    # A replay of the old, validly signed publication is stale against the tombstone.
    assert team.coordinator is not None
    with signed_client(team.coordinator, ada.identity, team=team.team, token=TOKEN) as client:
        replay = client.post(
            "/v1/publish",
            PublishRequest(items=[PublishItem(envelope=publication)]),
            PublishResponse,
        )
    assert [(r.item_id, r.status) for r in replay.results] == [(gyp, "stale")]

    daemon.stop()  # without the author online, only the coordinator's word is left
    offline = _ask(bob, "node-gyp E1234")
    assert offline["hits"] == []
    assert _source(offline, "coordinator")["status"] == "ok"
    assert _source(offline, "coordinator")["hits"] == 0
    assert "E1234" not in json.dumps(offline["hits"])


def test_slow_peer_is_reported_and_the_answer_still_comes(tmp_path: Path, team: Team) -> None:
    ada = team.add("ada")
    locks = ada.share(LOCKS)
    carol = Member("carol", tmp_path / "carol", team=team.team, coordinator=NOWHERE)
    slow = FakeSource()
    slow.stall = True  # /v1/recall answers only when released, long after --timeout
    with serving(slow) as url:
        slow.present_as(carol, url)
        bob = team.add("bob", peers=[url])
        bob.trust(ada, bob, carol)
        # The runner's own timeout (60 s) bounds this call; the command must return by itself.
        data = _ask(bob, LOCKS_QUERY, "--timeout", "1")

    assert _hits(data) == [(locks, "ada", "coordinator")]
    carol_source = _source(data, "carol")
    assert carol_source["status"] in ("timeout", "failed")
    assert carol_source["error"]
    assert carol_source["hits"] == 0
    assert slow.audiences("/v1/recall") == [peer_audience(carol.key_id)]  # asked, verified first


def test_live_peers_answer_while_the_coordinator_is_down(tmp_path: Path) -> None:
    coordinator = Coordinator(tmp_path / "coordinator", team=TEAM)
    with ExitStack() as stack:
        stack.callback(coordinator.close)
        up = stack.enter_context(ExitStack())
        team = Team(tmp_path, up.enter_context(running(coordinator_app(coordinator, token=TOKEN))))
        stack.callback(team.close)
        ada, carol = team.add("ada"), team.add("carol")
        locks = ada.share(LOCKS)
        review = carol.share(REVIEW)
        ports = {"ada": free_port(), "carol": free_port()}
        bob = team.add("bob", peers=[f"http://127.0.0.1:{port}" for port in ports.values()])
        team.serve(ada, carol, ports=ports)
        up.close()  # the coordinator goes down; the peers' heartbeats now fail
        assert team.coordinator is not None
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{team.coordinator}/healthz", timeout=2)

        data = _ask(bob, "the job scheduler")

    assert sorted(_hits(data)) == sorted(
        [(locks, "ada", "peer ada"), (review, "carol", "peer carol")]
    )
    assert _source(data, "coordinator")["status"] == "failed"
    assert _source(data, "coordinator")["error"]
    for name in ("ada", "carol"):
        assert (_source(data, name)["status"], _source(data, name)["learned_from"]) == (
            "ok", "team.yaml"
        )  # fmt: skip


@pytest.mark.parametrize(
    ("query", "problem"),
    [("", "the query is empty"), ("x" * 12 * 1024, "the query is longer than 8192 bytes")],
)
def test_a_query_local_recall_refuses_is_refused_alike_and_never_sent(
    tmp_path: Path, query: str, problem: str
) -> None:
    fake = FakeSource()
    with serving(fake) as url:
        member = Team(tmp_path, url).add("ada")
        mem = MemRunner(member.home, Path.cwd())
        local = mem("recall", query)
        team = mem("team", "recall-team", query)

    assert (team.returncode, local.returncode) == (2, 2)
    assert error_line(team) == error_line(local) == f"mem: error: {problem}"
    assert fake.heard == []


def test_a_query_no_recall_takes_is_refused_before_the_team_is_even_looked_for(
    mem: MemRunner,
) -> None:
    result = mem("team", "recall-team", "  ")

    assert result.returncode == 2
    assert error_line(result) == "mem: error: the query is empty"


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"coordinator": NOWHERE, "peers": ["http://127.0.0.1:7"]}, "no team source answered"),
        ({"coordinator": None, "peers": []}, "no team source is configured"),
    ],
    ids=["unreachable", "none-configured"],
)
def test_no_source_reachable_exits_4_with_one_line(
    tmp_path: Path, policy: dict[str, Any], message: str
) -> None:
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    bob.write_policy(**policy)

    result = _recall_team(bob, LOCKS_QUERY, "--timeout", "1")

    assert result.returncode == 4
    error = json_error(result)
    assert error["code"] == "unreachable"
    line = error["error"]
    assert line.startswith(message)
    if policy["coordinator"]:
        assert f"coordinator: {NOWHERE} is unreachable" in line


def test_items_signed_outside_the_roster_are_dropped_and_counted(team: Team) -> None:
    ada, bob, carol = team.add("ada"), team.add("bob"), team.add("carol")
    webhooks = ada.share(WEBHOOKS, kind="gotcha")
    invoices = bob.share(INVOICES)
    # Without a roster, both items answer.
    assert {hit[0] for hit in _python_hits(carol, BILLING_QUERY)} == {webhooks, invoices}

    carol.write_policy(
        members=[
            {"name": "ada", "key": ada.identity.public_key_text},
            {"name": "carol", "key": carol.identity.public_key_text},
        ]
    )
    data = _ask(carol, BILLING_QUERY)

    assert _hits(data) == [(webhooks, "ada", "coordinator")]
    assert data["dropped"] == {"outside_roster": 1}
    assert _source(data, "coordinator")["hits"] == 2


def _tampered(envelope: Envelope, old: bytes, new: bytes) -> Envelope:
    """The envelope with ``old`` replaced by ``new`` in its payload, the signature kept."""
    assert old in envelope.payload
    return Envelope(payload=envelope.payload.replace(old, new), signature=envelope.signature)


def test_hit_with_a_bad_signature_is_dropped_and_counted(tmp_path: Path) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    webhooks, invoices = ada.remember(WEBHOOKS), ada.remember(INVOICES)
    ada.publish(webhooks, invoices)
    fake = FakeSource()
    fake.hits = answer(
        ada.envelope(webhooks), _tampered(ada.envelope(invoices), b"first day", b"fifth day")
    )
    with serving(fake) as url:
        bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=url)
        bob.trust(ada)
        data = _ask(bob, BILLING_QUERY)

    assert _hits(data) == [(webhooks, "ada", "coordinator")]
    assert data["dropped"] == {"bad_signature": 1}
    assert _outcomes(data) == {"coordinator": ("ok", 2)}
    assert "fifth day" not in json.dumps(data)
    assert fake.authorized("/v1/search") == [f"Bearer {TOKEN}"]


def test_a_peers_higher_version_under_another_authors_id_is_a_hit_of_its_own(
    team: Team,
) -> None:
    ada, mallory = team.add("ada"), team.add("mallory")
    locks = ada.share(LOCKS)
    fake = FakeSource()  # mallory's own peer, answering with her key's claim on ada's id
    fake.hits = answer(claim(mallory, REVIEW, item_id=locks, version=999))
    with serving(fake) as url:
        fake.present_as(mallory, url)
        data = _ask(team.add("bob", peers=[url]), LOCKS_QUERY, "-k", "10")

    seen = {(h["id"], h["key_id"], h["version"], h["text"], h["source"]) for h in data["hits"]}
    assert seen == {
        (locks, ada.key_id, 1, LOCKS, "coordinator"),
        (locks, mallory.key_id, 999, REVIEW, "peer mallory"),
    }
    assert data["dropped"] == {}


def test_one_fact_from_two_members_is_one_hit_naming_both_authors(
    team: Team, capsys: pytest.CaptureFixture[str]
) -> None:
    ada, carol, bob = team.add("ada"), team.add("carol"), team.add("bob")
    parked, again = ada.share(PARKED), carol.share(PARKED_AGAIN)
    invoices = ada.share(INVOICES)  # not about failing deliveries: no hit

    data = _ask(bob, PARKED_QUERY)
    assert main(["--home", str(bob.home), "team", "recall-team", PARKED_QUERY]) == 0
    text = capsys.readouterr().out

    [hit] = data["hits"]
    [also] = hit["also"]
    # Whichever statement ranks first stands for the fact; the other is in ``also``.
    by_author = {"ada": (parked, PARKED, ada.key_id), "carol": (again, PARKED_AGAIN, carol.key_id)}
    assert {hit["author"], also["author"]} == set(by_author)
    assert (hit["id"], hit["text"], hit["key_id"]) == by_author[hit["author"]]
    assert (also["id"], also["text"], also["key_id"]) == by_author[also["author"]]
    assert sorted(a["name"] for a in hit["authors"]) == ["ada", "carol"]
    assert also["score"] <= hit["score"]
    first, other = by_author[hit["author"]], by_author[also["author"]]
    [line] = [line for line in text.splitlines() if first[0] in line]
    assert line.endswith(f"(via coordinator)  also said by: {also['author']} {other[0]}")
    assert other[1] not in text
    assert invoices not in text
