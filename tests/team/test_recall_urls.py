"""recall-team and `mem team peers` contact only sound URLs: an unsound one is dropped and
counted as its source's failure, never an error for the whole answer, and never receives the
team token."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from memmesh.net.client import Client
from memmesh.net.urls import SoundUrl
from memmesh.peer.protocol import PeerPresence
from memmesh.registry import create_identity
from memmesh.team._calls import Calls, Outcome, Target, member_clients
from memmesh.team.recall import list_peers
from tests._servers import running
from tests.team._team import (
    LOCKS,
    NOWHERE,
    TEAM,
    FakeSource,
    Member,
    ask,
    peer_in_thread,
    presence_for,
    serving,
)

pytestmark = pytest.mark.usefixtures("team_token")


@contextmanager
def _recorder() -> Iterator[tuple[str, list[tuple[str, str | None]]]]:
    """A server on 127.0.0.1 that answers 404 to anything and records every request's path
    and Authorization header; yields its URL and the records."""
    seen: list[tuple[str, str | None]] = []

    async def anything(request: Request) -> Response:
        seen.append((request.url.path, request.headers.get("authorization")))
        return Response(b"{}", status_code=404, media_type="application/json")

    methods = ["GET", "POST", "PUT", "DELETE"]
    app = Starlette(routes=[Route("/{rest:path}", anything, methods=methods)])
    with running(app) as url:
        yield url, seen


def test_a_listed_presence_with_an_unclosed_bracket_is_dropped_and_the_rest_answers(
    tmp_path: Path,
) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    locks = ada.remember(LOCKS)
    ada.publish(locks)  # served by her peer only
    carol = create_identity(tmp_path / "carol")
    coordinator = FakeSource()
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    bob.trust(ada)
    ada.trust(bob)
    with peer_in_thread(ada) as ada_url, serving(coordinator) as url:
        coordinator.presences = [
            presence_for(carol, "http://[::1", team=TEAM, name="carol"),
            presence_for(ada.identity, ada_url, team=TEAM, name="ada"),
        ]
        bob.write_policy(coordinator=url)
        result = ask(bob)

    assert [(h.id, h.source) for h in result.hits] == [(locks, "peer ada")]
    assert [(s.name, s.status) for s in result.sources] == [("coordinator", "ok"), ("ada", "ok")]
    assert result.dropped == {"bad_peer_url": 1}


@pytest.mark.parametrize(
    "shape", ["http://ada:secret@127.0.0.1:{port}", "http://127.0.0.1:{port}/collect"]
)
def test_a_presence_naming_a_url_with_userinfo_or_a_path_never_gets_the_token(
    tmp_path: Path, shape: str
) -> None:
    carol = create_identity(tmp_path / "carol")
    coordinator = FakeSource()
    with _recorder() as (listener, seen), serving(coordinator) as url:
        port = httpx.URL(listener).port
        coordinator.presences = [
            presence_for(carol, shape.format(port=port), team=TEAM, name="carol")
        ]
        result = ask(Member("bob", tmp_path / "bob", team=TEAM, coordinator=url))

    assert seen == []
    assert [s.name for s in result.sources] == ["coordinator"]
    assert result.dropped == {"bad_peer_url": 1}


def test_a_hinted_peer_whose_presence_names_an_unsound_url_is_not_asked(
    tmp_path: Path,
) -> None:
    carol = create_identity(tmp_path / "carol")
    fake, coordinator = FakeSource(), FakeSource()
    with serving(fake) as url, serving(coordinator) as coordinator_url:
        fake.set_presence(presence_for(carol, f"{url}/collect", team=TEAM, name="carol"))
        bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=coordinator_url)
        bob.write_policy(peers=[url])
        result = ask(bob)

    assert fake.authorized("/v1/presence") == [None]
    assert fake.authorized("/v1/recall") == []
    assert [s.name for s in result.sources] == ["coordinator"]
    assert result.dropped == {"bad_peer_url": 1}


def test_mem_team_peers_reports_an_unsound_listed_url_as_a_dropped_presence(
    tmp_path: Path,
) -> None:
    carol = create_identity(tmp_path / "carol")
    coordinator = FakeSource()
    with serving(coordinator) as url:
        coordinator.presences = [presence_for(carol, "http://[::1", team=TEAM, name="carol")]
        bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=url)
        seen, problems = list_peers(bob.policy(), own_key=bob.key_id)

    assert seen == []
    assert problems == ["dropped 1 presence(s): bad_peer_url"]


def test_a_call_to_an_unsound_url_is_that_call_s_failure_not_an_exception(
    tmp_path: Path,
) -> None:
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    calls = Calls(member_clients(bob.policy(), bob.identity), timeout=1.0)
    # Forced past the type that only peer_url() makes, as a bug elsewhere would.
    unsound = SoundUrl("http://[::1")
    hint = Target(kind="hint", url=unsound)
    peer = Target(kind="peer", url=unsound, key_id=bob.key_id)

    async def both() -> tuple[Outcome, Outcome]:
        got = await calls.get(hint, "/v1/presence", PeerPresence)
        posted = await calls.post(peer, "/v1/recall", {}, PeerPresence)
        return got, posted

    try:
        got, posted = anyio.run(both)
    finally:
        calls.close()

    problem = "'http://[::1' is not a usable URL: Invalid IPv6 URL"
    assert (got.value, got.error, posted.value, posted.error) == (None, problem, None, problem)


def test_a_client_factory_that_cannot_build_a_client_fails_only_that_call() -> None:
    def picky(target: Target, timeout: float) -> Client:
        raise httpx.InvalidURL("Invalid port: '0'")

    calls = Calls(picky, timeout=1.0)
    try:
        outcome = anyio.run(
            lambda: calls.get(
                Target(kind="hint", url=SoundUrl("http://127.0.0.1:8")), "/healthz", dict
            )
        )
    finally:
        calls.close()

    assert outcome.error == "'http://127.0.0.1:8' is not a usable URL: Invalid port: '0'"


@pytest.mark.parametrize(
    "advertised", ["http://169.254.169.254", "http://0.0.0.0:8410", "http://[fe80::1]:8410"]
)
def test_a_listed_presence_at_a_metadata_or_unspecified_address_is_never_contacted(
    tmp_path: Path, advertised: str
) -> None:
    # A coordinator that lists such a presence anyway (an older one, or a hostile operator):
    # the asker checks the URL itself before it sends anything there.
    carol = create_identity(tmp_path / "carol")
    coordinator = FakeSource()
    with serving(coordinator) as url:
        coordinator.presences = [presence_for(carol, advertised, team=TEAM, name="carol")]
        result = ask(Member("bob", tmp_path / "bob", team=TEAM, coordinator=url))

    assert [s.name for s in result.sources] == ["coordinator"]
    assert result.dropped == {"bad_peer_url": 1}
