"""Fuzzing the coordinator's POST routes on one real server: never a 5xx, whatever the body.

Bodies are random JSON values, random bytes, structural and byte-level mutations of valid
requests, valid requests padded past the small routes' limit, and (for the routes that take
envelopes) validly signed envelopes with random field values, which reach the service itself.
Integers are unbounded: counters past SQLite's 64-bit range must be refused, not overflow (the
regression tests at the end pin the cases that once were 500s).
"""

import copy
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memmesh.coordinator import Coordinator, coordinator_app, endpoints
from memmesh.coordinator.invites import new_secret, secret_digest
from memmesh.local.items import KINDS
from memmesh.net.app import PROTOCOL_HEADER
from memmesh.net.limits import QUERY_BODY_LIMIT
from memmesh.net.search import SearchResponse
from memmesh.net.signing import coordinator_audience
from memmesh.net.wire import PROTOCOL_VERSION
from memmesh.registry import roster_chain
from memmesh.registry.envelopes import (
    FORMAT_VERSION,
    Presence,
    Publication,
    Retraction,
    Tally,
    seal,
)
from memmesh.registry.identity import Identity
from tests._servers import running
from tests._signed import SignedAuth, make_admin
from tests.registry._helpers import publication as well_formed_publication
from tests.registry._helpers import retraction as well_formed_retraction
from tests.registry._helpers import tally

TEAM = "fuzzers"
TOKEN = "fuzz-token"
INT64 = 2**63
ALLOWED = {200, 400, 413}
MEMBER = Identity(Ed25519PrivateKey.from_private_bytes(bytes(range(32))))
NEWCOMER = Identity(Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33))))
SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,  # only the autouse environment cleaner
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
POST_PATHS = [
    "/v1/publish",
    "/v1/retract",
    "/v1/search",
    "/v1/presence",
    "/v1/changes",
    "/v1/disclosures",
    "/v1/tallies",
    "/v1/tallies/mine",
]
# The roster's routes refuse much on purpose (the fuzzer is the team's only admin); never 5xx.
ROSTER_PATHS = [
    "/v1/members/add",
    "/v1/members/revoke",
    "/v1/members/promote",
    "/v1/members/demote",
    "/v1/invites",
    "/v1/join",
    "/v1/roster/chain",
    "/v1/roster/statements",
]
ROSTER_ALLOWED = ALLOWED | {403, 404, 409}
# numpy warns when a huge vector overflows its float32 cast; in production that is a warning and
# the vector is then refused as not finite, but the suite turns warnings into errors, which the
# server thread would render as 500s.
pytestmark = [
    pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
]

JsonPath = tuple[str | int, ...]


def publication(**changes: Any) -> Publication:
    """The fuzzer's well-formed publication; ``changes`` override fields."""
    fuzzed: dict[str, Any] = {
        "team": TEAM,
        "item_id": "01JFUZZSEED000000000000000",
        "author": "fuzzer",
        "text": "The billing service retries webhooks five times",
        "tags": ("webhooks",),
        "embedder": "hashing-v1-d384",
    }
    return well_formed_publication(MEMBER, **{**fuzzed, **changes})


def retraction(**changes: Any) -> Retraction:
    """The fuzzer's well-formed retraction; ``changes`` override fields."""
    fuzzed = {"team": TEAM, "item_id": "01JFUZZRETRACTED0000000000"}
    return well_formed_retraction(MEMBER, **{**fuzzed, **changes})


def presence(**changes: Any) -> Presence:
    fields: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "team": TEAM,
        "item_id": "",
        "version": 1,
        "author_key": MEMBER.public_key_text,
        "key_id": MEMBER.key_id,
        "seq": 1,
        "name": "fuzzer",
        "peer_url": "http://127.0.0.1:8410",
        "embedder": "hashing-v1-d384",
        "expires_at": time.time() + 60,
    }
    fields.update(changes)
    return Presence(**fields)


def signed(body: Publication | Retraction | Presence | Tally) -> Any:
    """The envelope of ``body`` as JSON builtins (bytes as base64)."""
    return msgspec.to_builtins(seal(body, MEMBER))


def publish_request(**changes: Any) -> dict[str, Any]:
    return {"items": [{"envelope": signed(publication(**changes))}]}


def retract_request(**changes: Any) -> dict[str, Any]:
    return {"envelopes": [signed(retraction(**changes))]}


def presence_request(**changes: Any) -> dict[str, Any]:
    return {"envelope": signed(presence(**changes))}


def seeds(embedder: str, dim: int) -> dict[str, dict[str, Any]]:
    """A valid request for every POST route."""
    return {
        "/v1/publish": publish_request(),
        "/v1/retract": retract_request(),
        "/v1/search": {
            "query": "billing webhooks",
            "k": 5,
            "project": "billing",
            "authors": ["fuzzer"],
            "vector": [0.05] * dim,
            "embedder": embedder,
        },
        "/v1/presence": presence_request(),
        "/v1/changes": {"cursor": 0, "limit": 10},
        "/v1/disclosures": {"item_id": "01JFUZZSEED000000000000000", "limit": 10},
        "/v1/tallies": {"envelopes": [signed(tally(MEMBER, NEWCOMER, team=TEAM))]},
        "/v1/tallies/mine": {"cursor": 0, "limit": 10},
        "/v1/members/add": {"name": "newcomer", "key": NEWCOMER.public_key_text},
        "/v1/members/revoke": {"member": "newcomer", "purge": True},
        "/v1/members/promote": {"member": "newcomer"},
        "/v1/members/demote": {"member": "newcomer"},
        "/v1/invites": {
            "name": "invited",
            "digest": secret_digest(new_secret()),
            "expires_at": time.time() + 3600,
        },
        "/v1/join": {"secret": new_secret()},
        "/v1/roster/chain": {
            "start": 0,
            "invite": {"invite_key": NEWCOMER.public_key_text, "signature": "A" * 86 + "=="},
        },
        # The fuzzer's signing of its team's roster as it stands: it alone, named so.
        "/v1/roster/statements": {
            "statements": [msgspec.to_builtins(roster_chain.genesis(MEMBER, TEAM, name="fuzzer"))],
            "purge": True,
        },
    }


@dataclass
class Target:
    http: httpx.Client
    seeds: dict[str, dict[str, Any]]
    embedder: str
    dim: int


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """One real coordinator for the whole module, holding one seed publication."""
    coordinator = Coordinator(tmp_path_factory.mktemp("fuzz") / "data", team=TEAM)
    embedder = coordinator.store.embedder
    make_admin(coordinator, MEMBER, "fuzzer")
    try:
        with (
            running(coordinator_app(coordinator, token=TOKEN)) as url,
            httpx.Client(
                base_url=url,
                headers={"authorization": f"Bearer {TOKEN}"},
                auth=SignedAuth(MEMBER, coordinator_audience(TEAM)),
            ) as http,
        ):
            valid = seeds(embedder.fingerprint, embedder.dim)
            answer = http.post("/v1/publish", content=encode(valid["/v1/publish"]))
            assert answer.json()["results"][0]["status"] == "accepted"
            yield Target(http=http, seeds=valid, embedder=embedder.fingerprint, dim=embedder.dim)
    finally:
        coordinator.close()


def encode(value: Any) -> bytes:
    return json.dumps(value).encode()


def post(target: Target, path: str, body: bytes) -> httpx.Response:
    # A fresh connection each time: a 500 makes uvicorn drop the connection it came on.
    return target.http.post(
        path, content=body, headers={"content-type": "application/json", "connection": "close"}
    )


# -- strategies ----------------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=25,
)


def json_paths(value: Any, prefix: JsonPath = ()) -> list[JsonPath]:
    """Every place in ``value``, the root included."""
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += json_paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += json_paths(child, (*prefix, index))
    return found


def parent_of(value: Any, path: JsonPath) -> Any:
    for step in path[:-1]:
        value = value[step]
    return value


@st.composite
def structural_mutations(draw: st.DrawFn, seed: dict[str, Any]) -> bytes:
    """``seed`` with one place replaced, removed, or given an unknown sibling."""
    value = copy.deepcopy(seed)
    path = draw(st.sampled_from(json_paths(value)))
    action = draw(st.sampled_from(["replace", "remove", "add"]))
    if not path:
        return encode(draw(json_values)) if action == "replace" else encode(value)
    parent = parent_of(value, path)
    if action == "replace":
        parent[path[-1]] = draw(json_values)
    elif action == "remove":
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[draw(st.text(min_size=1, max_size=12))] = draw(json_values)
    else:
        parent.insert(int(path[-1]), draw(json_values))
    return encode(value)


@st.composite
def byte_mutations(draw: st.DrawFn, seed: dict[str, Any]) -> bytes:
    """The encoded ``seed`` with a few bytes flipped, dropped or inserted, or cut short."""
    body = bytearray(encode(seed))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        at = draw(st.integers(min_value=0, max_value=len(body) - 1))
        action = draw(st.sampled_from(["flip", "drop", "insert", "truncate"]))
        if action == "flip":
            body[at] ^= 1 << draw(st.integers(min_value=0, max_value=7))
        elif action == "drop":
            del body[at]
        elif action == "insert":
            body.insert(at, draw(st.integers(min_value=0, max_value=255)))
        else:
            del body[at:]
        if not body:
            break
    return bytes(body)


names = st.text(max_size=70)
counters = st.integers(min_value=-5) | st.sampled_from([2**53, 2**53 + 1, INT64, 2**64])
finite = st.floats(allow_nan=False, allow_infinity=False)


@st.composite
def signed_publications(draw: st.DrawFn) -> bytes:
    """A validly signed publication with random fields (the content hash matches, mostly)."""
    text = draw(st.text(max_size=200))
    changes = {
        "text": text,
        "item_id": draw(st.text(max_size=40)),
        "version": draw(counters),
        "seq": draw(counters),
        "team": draw(st.sampled_from([TEAM, "other-team"])),
        "author": draw(names),
        "published_at": draw(finite),
        "kind": draw(st.sampled_from([*KINDS, "bogus", ""])),
        "project": draw(names),
        "tags": tuple(draw(st.lists(names, max_size=4))),
        "embedder": draw(st.sampled_from(["hashing-v1-d384", "other"])),
    }
    if draw(st.booleans()):
        changes["content_hash"] = draw(st.text(max_size=64))
    item: dict[str, Any] = {"envelope": signed(publication(**changes))}
    if draw(st.booleans()):
        item["vector"] = draw(st.lists(finite, min_size=1, max_size=8))
    return encode({"items": [item]})


@st.composite
def signed_retractions(draw: st.DrawFn) -> bytes:
    body = retraction(
        item_id=draw(st.sampled_from(["01JFUZZSEED000000000000000", "01JFUZZRETRACTED0000000000"]))
        if draw(st.booleans())
        else draw(st.text(max_size=40)),
        version=draw(counters),
        seq=draw(counters),
        retracted_at=draw(finite),
    )
    return encode({"envelopes": [signed(body)]})


@st.composite
def signed_presences(draw: st.DrawFn) -> bytes:
    body = presence(
        name=draw(names),
        peer_url=draw(names),
        embedder=draw(names),
        expires_at=draw(finite),
        version=draw(counters),
        seq=draw(counters),
    )
    return encode({"envelope": signed(body)})


SIGNED = {
    "/v1/publish": signed_publications(),
    "/v1/retract": signed_retractions(),
    "/v1/presence": signed_presences(),
}


def bodies(path: str, seed: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """Every kind of body, for the route at ``path`` whose valid request is ``seed``."""
    valid = encode(seed)
    options = [
        json_values.map(encode),
        st.binary(max_size=300),
        structural_mutations(seed),
        byte_mutations(seed),
        st.just(valid),
        # Valid JSON, but past the small routes' limit.
        st.just(b" " * (QUERY_BODY_LIMIT + 1) + valid),
    ]
    if path in SIGNED:
        options.append(SIGNED[path])
    return st.one_of(options)


# -- the properties ------------------------------------------------------------------------------


def test_every_post_route_is_fuzzed(tmp_path: Path) -> None:
    coordinator = Coordinator(tmp_path / "data", team=TEAM)
    try:
        routes = {e.path for e in endpoints(coordinator) if e.request is not None}
    finally:
        coordinator.close()
    assert routes == set(POST_PATHS + ROSTER_PATHS)


@pytest.mark.parametrize("path", POST_PATHS)
def test_seed_request_is_accepted(target: Target, path: str) -> None:
    answer = post(target, path, encode(target.seeds[path]))
    assert answer.status_code == 200


@pytest.mark.parametrize("path", POST_PATHS + ROSTER_PATHS)
@SETTINGS
@given(data=st.data())
def test_fuzzed_body_never_gets_a_server_error(
    target: Target, path: str, data: st.DataObject
) -> None:
    body = data.draw(bodies(path, target.seeds[path]), label="body")
    answer = post(target, path, body)
    assert answer.status_code in (ROSTER_ALLOWED if path in ROSTER_PATHS else ALLOWED), answer.text
    assert answer.headers[PROTOCOL_HEADER] == PROTOCOL_VERSION
    if answer.status_code != 200:
        error = answer.json()["error"]
        assert set(error) == {"code", "message"}
        assert error["message"]


def test_server_is_healthy_after_the_fuzzing(target: Target) -> None:
    assert target.http.get("/healthz").json() == {"status": "ok"}
    info = target.http.get("/v1/info")
    assert info.status_code == 200
    assert info.json()["published"] + info.json()["tombstones"] >= 1


# -- regressions: counters past 64 bits, and vectors that are not unit length -------------------


@pytest.mark.parametrize("cursor", [INT64, 2**64, 10**30])
def test_changes_cursor_past_int64_is_not_a_server_error(target: Target, cursor: int) -> None:
    answer = post(target, "/v1/changes", encode({"cursor": cursor}))
    assert answer.status_code in {200, 400}


def test_publication_version_past_int64_is_not_a_server_error(target: Target) -> None:
    body = publish_request(item_id="01JFUZZOVERFLOW00000000000", version=INT64)
    answer = post(target, "/v1/publish", encode(body))
    assert answer.status_code in {200, 400}


def test_retraction_version_past_int64_is_not_a_server_error(target: Target) -> None:
    body = retract_request(item_id="01JFUZZOVERFLOW00000000001", version=INT64)
    answer = post(target, "/v1/retract", encode(body))
    assert answer.status_code in {200, 400}


def test_search_with_a_huge_query_vector_answers_in_protocol(target: Target) -> None:
    item = publish_request(
        item_id="01JFUZZVECTOR0000000000000", project="vectors", text="vector overflow probe"
    )
    assert post(target, "/v1/publish", encode(item)).json()["results"][0]["status"] == "accepted"
    query = {
        "query": "vector overflow probe",
        "project": "vectors",
        "vector": [3e38] * target.dim,
        "embedder": target.embedder,
    }
    answer = post(target, "/v1/search", encode(query))
    assert answer.status_code == 200
    result = msgspec.json.decode(answer.content, type=SearchResponse, strict=True)
    # A vector pointing nowhere in particular may well find nothing relevant; what it finds
    # has a cosine in range, and an empty answer says it abstained.
    assert result.abstained == (not result.hits)
    assert all(-1.0 <= hit.cosine <= 1.0 for hit in result.hits)


@pytest.mark.parametrize(("project", "scale"), [("overflowing", 3e38), ("scaled", 1e3)])
def test_published_vector_cannot_poison_search(target: Target, project: str, scale: float) -> None:
    item = publish_request(
        item_id=project,
        project=project,
        text="poisoned vector probe",
    )
    item["items"][0]["vector"] = [scale] * target.dim
    published = post(target, "/v1/publish", encode(item))
    assert published.json()["results"][0]["status"] == "accepted"
    # No vector: the source embeds the text itself, so the item is found by both halves.
    query = {"query": "poisoned vector probe", "project": project}
    answer = post(target, "/v1/search", encode(query))
    assert answer.status_code == 200
    result = msgspec.json.decode(answer.content, type=SearchResponse, strict=True)
    assert result.hits
    assert all(-1.0 <= hit.cosine <= 1.0 for hit in result.hits)
