"""Signed requests over a real server: who may ask, and what an attacker holding a captured
request, another audience's request or a stale one gets (401), and a stranger's key (403)."""

from collections.abc import Iterator
from pathlib import Path

import httpx
import msgspec
import pytest
from starlette.types import ASGIApp

from memmesh.net.app import Endpoint, create_app
from memmesh.net.client import Client
from memmesh.net.errors import Forbidden, Overloaded, Refused
from memmesh.net.signing import (
    SIGNATURE_HEADER,
    TIME_HEADER,
    Caller,
    RequestVerifier,
    peer_audience,
    sign_request,
)
from memmesh.registry.identity import Identity, create_identity
from tests._servers import running

# A daemon named by its audience alone (as a peer is); coordinators' bound audiences are
# tests/net/test_audience.py's.
AUDIENCE = peer_audience("alices-daemon")


class Said(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    words: str


class Heard(msgspec.Struct, frozen=True, kw_only=True):
    by: str
    words: str = ""


@pytest.fixture(scope="module")
def alice(tmp_path_factory: pytest.TempPathFactory) -> Identity:
    return create_identity(Path(tmp_path_factory.mktemp("alice")))


@pytest.fixture(scope="module")
def mallory(tmp_path_factory: pytest.TempPathFactory) -> Identity:
    return create_identity(Path(tmp_path_factory.mktemp("mallory")))


def _alices_app(alice: Identity, verifier: RequestVerifier) -> ASGIApp:
    """An app for ``AUDIENCE`` that admits only alice; ``/join`` takes any signer."""

    def admit(caller: Caller) -> None:
        if caller.key != alice.public_key_text:
            raise Forbidden("not a member of this team")

    routes = [
        Endpoint(
            path="/say",
            handler=lambda caller, said: Heard(by=caller.key_id, words=said.words),
            request=Said,
            response=Heard,
            caller=True,
        ),
        Endpoint(path="/who", handler=lambda c: Heard(by=c.key_id), response=Heard, caller=True),
        Endpoint(
            path="/join",
            handler=lambda c: Heard(by=c.key_id),
            response=Heard,
            caller=True,
            access="signed",
        ),
    ]
    return create_app(routes, token=None, verifier=verifier, admit=admit)


@pytest.fixture(scope="module")
def url(alice: Identity) -> Iterator[str]:
    with running(_alices_app(alice, RequestVerifier(AUDIENCE))) as served:
        yield served


def test_a_signed_request_reaches_the_handler_with_its_signer(url: str, alice: Identity) -> None:
    with Client(url, token=None, identity=alice, audience=AUDIENCE) as client:
        heard = client.post("/say", Said(words="hello"), Heard)
        assert heard == Heard(by=alice.key_id, words="hello")
        assert client.get("/who", Heard).by == alice.key_id  # a fresh nonce every time


def test_an_unsigned_request_is_refused_with_401(url: str) -> None:
    with Client(url, token=None) as client, pytest.raises(Refused) as refused:
        client.get("/who", Heard)
    assert refused.value.http_status == 401


def test_a_key_the_daemon_does_not_admit_gets_403(url: str, mallory: Identity) -> None:
    with Client(url, token=None, identity=mallory, audience=AUDIENCE) as client:
        with pytest.raises(Refused) as refused:
            client.get("/who", Heard)
        assert refused.value.http_status == 403
        # A route open to any signer (joining) still knows who signed.
        assert client.get("/join", Heard).by == mallory.key_id


def test_a_replayed_request_is_refused(url: str, alice: Identity) -> None:
    body = b'{"words":"pay me"}'
    headers = sign_request(alice, "POST", "/say", body, AUDIENCE)
    first = httpx.post(url + "/say", content=body, headers=headers)
    again = httpx.post(url + "/say", content=body, headers=headers)
    assert first.status_code == 200
    assert again.status_code == 401


def test_a_request_signed_for_another_daemon_is_refused(url: str, alice: Identity) -> None:
    # What a member's own peer receives from alice is worthless at the coordinator.
    headers = sign_request(alice, "GET", "/who", b"", peer_audience("somebody"))
    assert httpx.get(url + "/who", headers=headers).status_code == 401


def test_an_expired_or_future_request_is_refused(url: str, alice: Identity) -> None:
    import time

    for skew in (-600, 600):
        headers = sign_request(alice, "GET", "/who", b"", AUDIENCE, now=time.time() + skew)
        assert httpx.get(url + "/who", headers=headers).status_code == 401


def test_a_changed_body_path_or_method_breaks_the_signature(url: str, alice: Identity) -> None:
    signed = sign_request(alice, "POST", "/say", b'{"words":"a"}', AUDIENCE)
    assert httpx.post(url + "/say", content=b'{"words":"b"}', headers=signed).status_code == 401
    signed = sign_request(alice, "GET", "/join", b"", AUDIENCE)
    assert httpx.get(url + "/who", headers=signed).status_code == 401


def test_mangled_signature_headers_are_refused_not_crashed(url: str, alice: Identity) -> None:
    good = sign_request(alice, "GET", "/who", b"", AUDIENCE)
    for name, value in [
        (SIGNATURE_HEADER, "!!!"),
        (SIGNATURE_HEADER, ""),
        (TIME_HEADER, "12e3"),
        (TIME_HEADER, "9" * 40),
        ("x-memmesh-key", "AAAA"),
        ("x-memmesh-nonce", "zz"),
    ]:
        headers = {**sign_request(alice, "GET", "/who", b"", AUDIENCE), name: value}
        assert httpx.get(url + "/who", headers=headers).status_code == 401, (name, value)
    assert httpx.get(url + "/who", headers=good).status_code == 200


def test_the_verifier_forgets_no_nonce_while_it_is_still_fresh(alice: Identity) -> None:
    now = [1_000_000.0]
    verifier = RequestVerifier(AUDIENCE, clock=lambda: now[0], max_nonces=2)
    for _ in range(2):
        headers = sign_request(alice, "GET", "/who", b"", AUDIENCE, now=now[0])
        verifier.verify("GET", "/who", [(k.encode(), v.encode()) for k, v in headers.items()], b"")
    third = sign_request(alice, "GET", "/who", b"", AUDIENCE, now=now[0])
    raw = [(k.encode(), v.encode()) for k, v in third.items()]
    with pytest.raises(Overloaded):
        verifier.verify("GET", "/who", raw, b"")

    now[0] += 1000  # the first two are past any window now: room again
    fresh = sign_request(alice, "GET", "/who", b"", AUDIENCE, now=now[0])
    caller = verifier.verify(
        "GET", "/who", [(k.encode(), v.encode()) for k, v in fresh.items()], b""
    )
    assert caller.key == alice.public_key_text


def test_a_strangers_flood_of_signed_requests_never_turns_members_away(
    alice: Identity, mallory: Identity
) -> None:
    # Signatures are checked before the roster: a stranger's fresh signed requests must not
    # fill the nonces the members' requests need (they would get 503).
    verifier = RequestVerifier(AUDIENCE, max_nonces=8)
    with running(_alices_app(alice, verifier)) as served:
        with Client(served, token=None, identity=mallory, audience=AUDIENCE) as stranger:
            for _ in range(10):
                with pytest.raises(Refused) as refused:
                    stranger.get("/who", Heard)
                assert refused.value.http_status == 403
            for _ in range(8):  # the route open to any signer (joining): its share fills
                assert stranger.get("/join", Heard).by == mallory.key_id
            with pytest.raises(Refused) as refused:
                stranger.get("/join", Heard)
            assert refused.value.http_status == 503
        with Client(served, token=None, identity=alice, audience=AUDIENCE) as member:
            for _ in range(4):
                assert member.get("/who", Heard).by == alice.key_id
