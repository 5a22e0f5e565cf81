"""Fuzzing a real coordinator at volume: every route, hostile requests, and never a 5xx.

Run from the repository root::

    .venv/bin/python bench/fuzz.py                          # 1000 requests per route
    .venv/bin/python bench/fuzz.py --requests 5000 --seed 7

A coordinator over a temporary data folder is served by uvicorn in a thread of this process,
on 127.0.0.1 and a free port, with a team token and the daemons' own concurrency settings.
Every route gets at least ``--requests`` requests, interleaved at random (so publications,
retractions and searches see each other's effects):

* POST routes: valid requests; random JSON values (with boundary integers and floats, odd
  strings); random bytes; hand-made malformed JSON (NaN, deep nesting, duplicate keys,
  invalid UTF-8, huge integers, BOMs, comments ...); structural and byte-level mutations of
  valid requests; validly signed envelopes with random fields (publish, retract, presence);
  now and then a body just past the route's limit.
* GET routes: junk query strings, junk headers, and stray bodies.
* Any route: now and then a missing, wrong or oddly-shaped token.

Each answer is counted per route: 2xx, 4xx, 5xx, and crashes (no answer: a connection error or
a timeout). An answer is also "off-protocol" when a 2xx does not decode strictly as the route's
response struct, or any answer lacks the protocol header or (for errors) the error document.
The causes of 5xx (logged by the harness) and one request body per failing route are printed.

Then the attack section (``_sockets.py``): while ``--attack-sockets`` connections that send
nothing, then as many that send a request head a byte at a time, are held open for
``--attack-seconds`` each, an authorised request (the member's signed search, with the token,
on a fresh connection) is made six times; each attack's row says how many were answered, how
fast, and how many of the attack's connections the coordinator had closed by its end.

Then the attack sections (``_attack_sections.py``, each bounded by its own module): recall-team
under presence and hint floods, a coordinator's resident memory under random-vocabulary
publications, hostile team.yaml files against the real command, and the bytes of retracted text
found on the coordinator's disk (goal 0). ``--sections`` picks them.

The run is bounded: ``--requests`` per route and ``--max-seconds`` overall, and the attacks'
sockets and seconds. Exit status: 0 when no request got a 5xx or a crash, every authorised
request under attack was answered and every section held, 1 otherwise (2 when the time budget
ran out first).
"""

import argparse
import copy
import hashlib
import json
import logging
import random
import sys
import tempfile
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from _attack_sections import SECTIONS, run_sections
from _common import table
from _sockets import HEADERS as ATTACK_HEADERS
from _sockets import MORE_BODY, MORE_HEAD, SLOW_BODY, SLOW_HEAD, AttackResult, attack, baseline
from memmesh.coordinator import Coordinator, coordinator_app, endpoints
from memmesh.coordinator.protocol import JoinRequest
from memmesh.local.items import KINDS
from memmesh.net.app import PROTOCOL_HEADER, Endpoint
from memmesh.net.audience import client_audience
from memmesh.net.server import Server, ServeSettings, listen
from memmesh.net.signing import Caller, coordinator_audience, sign_request
from memmesh.net.wire import PROTOCOL_VERSION
from memmesh.registry import roster_chain
from memmesh.registry.envelopes import (
    FORMAT_VERSION,
    Presence,
    Publication,
    Retraction,
    seal,
    text_hash,
)
from memmesh.registry.envelopes import Tally as TallyBody
from memmesh.registry.identity import Identity

TOKEN = "bench-fuzz-token"
TEAM = "fuzzers"
SEED_ITEM = "01JBENCHFUZZSEED0000000000"
RETRACTED_ITEM = "01JBENCHFUZZRETRACTED00000"
REQUEST_TIMEOUT = 15.0
MEMBER_ADDRESS = "127.0.0.2"  # where the member's request comes from under attack

INTEGERS = [0, 1, -1, 2, 100, 101, 500, 501, 2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, -(2**63)]
INTEGERS += [-(2**63) - 1, 10**30]
FLOATS = [
    0.0,
    -0.0,
    0.5,
    1e-320,
    5e-324,
    1e-45,
    3.4e38,
    3.5e38,
    1e308,
    -1e308,
    1.7976931348623157e308,
]
STRINGS = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\u202e\u202d",
    "\ufeff",
    "😀" * 10,
    "' OR 1=1 --",
    '"; DROP TABLE coord_envelopes; --',
    "NEAR(a b)",
    '"unbalanced',
    "*",
    "a" * 9000,
    "../../etc/passwd",
    "%00%ff",
    "\\ud800",
    "global",
    "billing",
    "hashing-v1-d384",
]


# -- what we send --------------------------------------------------------------------------------


class Fuzzer:
    """Makes request bodies, query strings and headers from one seeded random source."""

    def __init__(self, rng: random.Random, member: Identity, embedder: str, dim: int) -> None:
        self.rng = rng
        self.member = member
        self.embedder = embedder
        self.dim = dim
        # What its signatures are for: the coordinator it is sent to, once that is serving.
        self.audience = coordinator_audience(TEAM)

    # Building blocks.

    def text(self, longest: int = 40) -> str:
        rng = self.rng
        if rng.random() < 0.3:
            return rng.choice(STRINGS)
        alphabet = rng.choice(
            [
                "abcdefghijklmnopqrstuvwxyz0123456789-_. ",
                "".join(chr(c) for c in range(0x20)),
                "ü日本語\u0301\u200b\U0001f600\ufffd",
            ]
        )
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, longest)))

    def scalar(self) -> Any:
        rng = self.rng
        kind = rng.randrange(7)
        if kind == 0:
            return None
        if kind == 1:
            return rng.random() < 0.5
        if kind == 2:
            return rng.choice(INTEGERS)
        if kind == 3:
            return rng.randint(-(10**6), 10**6)
        if kind == 4:
            return rng.choice(FLOATS)
        if kind == 5:
            return rng.uniform(-1e3, 1e3)
        return self.text()

    def value(self, depth: int = 0) -> Any:
        rng = self.rng
        roll = rng.random()
        if depth > 4 or roll < 0.5:
            return self.scalar()
        if roll < 0.75:
            return [self.value(depth + 1) for _ in range(rng.randint(0, 5))]
        return {self.text(12): self.value(depth + 1) for _ in range(rng.randint(0, 5))}

    def signed(self, body: Publication | Retraction | Presence | TallyBody) -> Any:
        return msgspec.to_builtins(seal(body, self.member))

    def publication(self, **changes: Any) -> Publication:
        text = changes.pop("text", "The billing service retries webhooks five times")
        fields: dict[str, Any] = {
            "format": FORMAT_VERSION,
            "team": TEAM,
            "item_id": SEED_ITEM,
            "version": 1,
            "author_key": self.member.public_key_text,
            "key_id": self.member.key_id,
            "seq": 1,
            "author": "fuzzer",
            "published_at": 1_700_000_000.0,
            "text": text,
            "kind": "gotcha",
            "project": "billing",
            "tags": ("webhooks",),
            "content_hash": text_hash(text),
            "embedder": self.embedder,
        }
        fields.update(changes)
        return Publication(**fields)

    def tally(self) -> TallyBody:
        """The fuzzer's word on a teammate's item (whose key the rng makes)."""
        subject = Identity(Ed25519PrivateKey.from_private_bytes(self.rng.randbytes(32)))
        return TallyBody(
            format=FORMAT_VERSION, team=TEAM, item_id=SEED_ITEM, version=1,
            author_key=self.member.public_key_text, key_id=self.member.key_id, seq=1,
            subject_key_id=subject.key_id, worked=1, failed=0, partial=0,
            reported_at=1_700_000_200.0,
        )  # fmt: skip

    def retraction(self, **changes: Any) -> Retraction:
        fields: dict[str, Any] = {
            "format": FORMAT_VERSION,
            "team": TEAM,
            "item_id": RETRACTED_ITEM,
            "version": 1,
            "author_key": self.member.public_key_text,
            "key_id": self.member.key_id,
            "seq": 2,
            "retracted_at": 1_700_000_100.0,
        }
        fields.update(changes)
        return Retraction(**fields)

    def presence(self, **changes: Any) -> Presence:
        fields: dict[str, Any] = {
            "format": FORMAT_VERSION,
            "team": TEAM,
            "item_id": "",
            "version": 1,
            "author_key": self.member.public_key_text,
            "key_id": self.member.key_id,
            "seq": 1,
            "name": "fuzzer",
            "peer_url": "http://127.0.0.1:8410",
            "embedder": self.embedder,
            "expires_at": time.time() + 60,
        }
        fields.update(changes)
        return Presence(**fields)

    def seed(self, path: str) -> dict[str, Any]:
        """A valid request for the POST route at ``path``."""
        if path == "/v1/publish":
            return {"items": [{"envelope": self.signed(self.publication())}]}
        if path == "/v1/retract":
            return {"envelopes": [self.signed(self.retraction())]}
        if path == "/v1/search":
            return {
                "query": "billing webhooks",
                "k": 5,
                "project": "billing",
                "authors": ["fuzzer"],
                "vector": [1 / self.dim**0.5] * self.dim,
                "embedder": self.embedder,
            }
        if path == "/v1/presence":
            return {"envelope": self.signed(self.presence())}
        if path == "/v1/changes":
            return {"cursor": 0, "limit": 10}
        if path == "/v1/disclosures":
            return {"item_id": SEED_ITEM, "limit": 10}
        if path == "/v1/members/add":
            newcomer = Identity(Ed25519PrivateKey.from_private_bytes(self.rng.randbytes(32)))
            return {"name": "newcomer", "key": newcomer.public_key_text}
        if path == "/v1/members/revoke":
            return {"member": "newcomer", "purge": True}
        if path in ("/v1/members/promote", "/v1/members/demote"):
            return {"member": "newcomer"}
        if path == "/v1/invites":
            digest = hashlib.sha256(self.text(20).encode()).hexdigest()
            return {"name": "invited", "digest": digest, "expires_at": time.time() + 3600}
        if path == "/v1/join":
            return {"secret": "s" * 43}
        if path == "/v1/tallies":
            return {"envelopes": [self.signed(self.tally())]}
        if path == "/v1/tallies/mine":
            return {"cursor": 0, "limit": 10}
        if path == "/v1/roster/chain":
            return {"start": 0}
        if path == "/v1/roster/statements":
            # A well-formed statement the chain refuses (a second genesis): its shape is fuzzed.
            again = roster_chain.genesis(self.member, TEAM, name="fuzzer")
            return {"statements": [msgspec.to_builtins(again)]}
        raise KeyError(path)

    # Bodies.

    def resigned(self, path: str) -> dict[str, Any]:
        """A validly signed envelope with random fields, for the routes that take envelopes."""
        rng = self.rng
        number = rng.choice([*INTEGERS, rng.randint(-5, 50)])
        if path == "/v1/publish":
            # Often in the searched project, about the searched words: a bad vector shows there.
            text = rng.choice([self.text(200), "billing webhooks " + self.text(40)])
            changes: dict[str, Any] = {
                "text": text,
                "item_id": rng.choice([SEED_ITEM, RETRACTED_ITEM, self.text(30)]),
                "version": number,
                "seq": rng.choice(INTEGERS),
                "team": rng.choice([TEAM, "other"]),
                "author": self.text(70),
                "published_at": rng.choice(FLOATS),
                "kind": rng.choice([*KINDS, "bogus"]),
                "project": rng.choice(["billing", "billing", "global", self.text(70)]),
                "tags": tuple(self.text(20) for _ in range(rng.randint(0, 4))),
                "embedder": rng.choice([self.embedder, "other"]),
            }
            if rng.random() < 0.2:
                changes["content_hash"] = self.text(64)
            item: dict[str, Any] = {"envelope": self.signed(self.publication(**changes))}
            if rng.random() < 0.5:
                size = rng.choice([1, self.dim, self.dim + 1])
                item["vector"] = [rng.choice([*FLOATS, rng.gauss(0, 1)]) for _ in range(size)]
            return {"items": [item]}
        if path == "/v1/retract":
            body = self.retraction(
                item_id=rng.choice([SEED_ITEM, RETRACTED_ITEM, self.text(30)]),
                version=number,
                seq=rng.choice(INTEGERS),
                retracted_at=rng.choice(FLOATS),
            )
            return {"envelopes": [self.signed(body)]}
        presence = self.presence(
            name=self.text(70),
            peer_url=self.text(70),
            embedder=self.text(20),
            expires_at=rng.choice([*FLOATS, time.time() + rng.uniform(-600, 600)]),
            version=number,
        )
        return {"envelope": self.signed(presence)}

    def mutated(self, seed: dict[str, Any]) -> bytes:
        """``seed`` with one place replaced, removed or given an unknown sibling."""
        rng = self.rng
        value = copy.deepcopy(seed)
        places = _places(value)
        path = rng.choice(places)
        if not path:
            return _encode(self.value())
        parent: Any = value
        for step in path[:-1]:
            parent = parent[step]
        action = rng.randrange(4)
        if action == 0:
            parent[path[-1]] = self.value()
        elif action == 1:
            del parent[path[-1]]
        elif action == 2 and isinstance(parent, dict):
            parent[self.text(12) or "x"] = self.value()
        else:
            parent[path[-1]] = self.scalar()
        return _encode(value)

    def corrupted(self, body: bytes) -> bytes:
        """``body`` with a few bytes flipped, dropped, inserted, or cut short."""
        rng = self.rng
        data = bytearray(body)
        for _ in range(rng.randint(1, 4)):
            if not data:
                break
            at = rng.randrange(len(data))
            action = rng.randrange(4)
            if action == 0:
                data[at] ^= 1 << rng.randrange(8)
            elif action == 1:
                del data[at]
            elif action == 2:
                data.insert(at, rng.randrange(256))
            else:
                del data[at:]
        return bytes(data)

    def malformed(self, seed: dict[str, Any]) -> bytes:
        """Hand-made bodies that no strict decoder should take, nor choke on."""
        rng = self.rng
        valid = _encode(seed)
        key = next(iter(seed))
        depth = rng.choice([31, 32, 33, 40, 1000, 10_000, 100_000])
        choices: list[Callable[[], bytes]] = [
            lambda: valid.replace(b"{", b'{"x": NaN, ', 1),
            lambda: valid.replace(b"{", b'{"x": -Infinity, ', 1),
            lambda: valid.replace(b"{", b'{"x": 1e400, ', 1),
            lambda: valid.replace(b"{", b'{"x": ' + b"9" * rng.choice([20, 400, 5000]) + b", ", 1),
            lambda: b"[" * depth + b"]" * depth,
            lambda: b'{"a":' * depth + b"1" + b"}" * depth,
            lambda: valid[:-1] + b', "' + key.encode() + b'": ' + _encode(seed[key]) + b"}",
            lambda: valid.replace(b"{", b'{"\xff\xfe": 1, ', 1),
            lambda: b"\xef\xbb\xbf" + valid,
            lambda: valid[:-1] + b",}",
            lambda: b"/* hi */" + valid,
            lambda: valid + b"\x00",
            lambda: valid + valid,
            lambda: b"",
            lambda: b"null",
            lambda: b'"' + valid.replace(b'"', b'\\"') + b'"',
            lambda: _encode([seed]),
            lambda: valid.replace(b'"', b"'"),
            lambda: valid.decode().encode("utf-16"),
        ]
        return rng.choice(choices)()

    def body(self, path: str, seed: dict[str, Any], limit: int) -> bytes:
        """One body for the POST route at ``path``."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.004:
            return b" " * (limit + 1 - len(b"{}")) + b"{}"  # just past the limit
        if roll < 0.10:
            return _encode(seed)
        if roll < 0.25:
            return _encode(self.value())
        if roll < 0.32:
            return rng.randbytes(rng.randint(0, 400))
        if roll < 0.47:
            return self.malformed(seed)
        if roll < 0.67:
            return self.mutated(seed)
        if roll < 0.80:
            return self.corrupted(_encode(seed))
        if path in ("/v1/publish", "/v1/retract", "/v1/presence"):
            return _encode(self.resigned(path))
        return self.mutated(seed)

    # Query strings and headers.

    def query(self) -> str:
        rng = self.rng
        pieces = []
        for _ in range(rng.randint(0, 6)):
            name = self.text(10)
            value = rng.choice([self.text(30), "%" + rng.randbytes(1).hex(), "%zz", "a" * 4000])
            pieces.append(f"{httpx.URL(params={name: value}).query.decode()}")
        if rng.random() < 0.2:
            pieces.append("".join(rng.choice("&=;%?#/") for _ in range(rng.randint(1, 20))))
        return "&".join(pieces)

    def signature(self, method: str, path: str, body: bytes | None) -> dict[str, str]:
        """The member's signature of the request, mostly; sometimes none, or a broken one
        (every request is checked before its body is decoded, so most must be signed to
        reach the routes)."""
        headers = sign_request(self.member, method, path, body or b"", self.audience)
        roll = self.rng.random()
        if roll < 0.03:
            return {}
        if roll < 0.06:
            headers[self.rng.choice(list(headers))] = self.rng.randbytes(20).hex()
        return headers

    def headers(self, authorized: bool = True) -> dict[str, str]:
        rng = self.rng
        headers = {"authorization": f"Bearer {TOKEN}"} if authorized else {}
        if rng.random() < 0.05:
            headers["authorization"] = rng.choice(
                [
                    "",
                    "Bearer",
                    f"Basic {TOKEN}",
                    f"bearer {TOKEN}x",
                    f"Bearer {TOKEN[:-1]}",
                    "Bearer " + "a" * 4000,
                    TOKEN,
                ]
            )
        for _ in range(rng.randint(0, 3)):
            name = rng.choice(
                ["x-junk", "accept", "accept-encoding", "content-type", "range", "x-forwarded-for"]
            )
            headers[name] = rng.choice(
                [
                    "*/*",
                    "application/json; charset=latin-1",
                    "text/plain",
                    "gzip, br",
                    "bytes=0-1",
                    "1.2.3.4, 5.6.7.8",
                    "x" * 2000,
                    "".join(rng.choice("abc;=,/ ") for _ in range(30)).strip() or "x",
                ]
            )
        return headers


def _encode(value: Any) -> bytes:
    return json.dumps(value).encode()


def _places(value: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _places(child, (*prefix, key))
    elif isinstance(value, list):
        # A 384-dimensional vector would drown every other place: sample a few elements.
        for index in sorted(
            {0, len(value) - 1, len(value) // 2} if len(value) > 8 else range(len(value))
        ):
            found += _places(value[index], (*prefix, index))
    return found


# -- what we count -------------------------------------------------------------------------------


@dataclass
class Tally:
    """Outcomes of one route."""

    requests: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    crashes: int = 0
    off_protocol: int = 0
    first_failure: str = ""
    first_off_protocol: str = ""

    def count(self, answer: httpx.Response | None, response_type: type, body: bytes) -> None:
        self.requests += 1
        if answer is None:
            self.crashes += 1
            self.remember(f"no answer to {body[:160]!r}")
            return
        self.statuses[answer.status_code] += 1
        if answer.status_code >= 500:
            self.remember(f"{answer.status_code} for {body[:160]!r}")
        if not _in_protocol(answer, response_type):
            self.off_protocol += 1
            if not self.first_off_protocol:
                self.first_off_protocol = (
                    f"{answer.status_code} {answer.content[:120]!r} for {body[:120]!r}"
                )

    def remember(self, what: str) -> None:
        if not self.first_failure:
            self.first_failure = what

    def band(self, low: int) -> int:
        return sum(n for status, n in self.statuses.items() if low <= status < low + 100)


def _in_protocol(answer: httpx.Response, response_type: type) -> bool:
    if answer.headers.get(PROTOCOL_HEADER) != PROTOCOL_VERSION:
        # uvicorn's own 503 (over the concurrency limit) is not the app's to stamp.
        return answer.status_code == 503
    try:
        if answer.status_code < 300:
            msgspec.json.decode(answer.content, type=response_type, strict=True)
        else:
            error = json.loads(answer.content)["error"]
            return isinstance(error["code"], str) and isinstance(error["message"], str)
    except (msgspec.MsgspecError, ValueError, KeyError, TypeError):
        return False
    return True


class _Causes(logging.Handler):
    """Collects the exceptions the harness logs for its 500s."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.seen: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        where = " ".join(str(arg) for arg in record.args or ())
        cause = "?"
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            cause = f"{type(error).__name__}: {str(error)[:90]}"
        self.seen[f"{where}: {cause}"] += 1


# -- running it ----------------------------------------------------------------------------------


class _Server:
    """The coordinator served as `mem coordinator serve` serves it (the daemons' own limits), in
    a thread, on 127.0.0.1."""

    def __init__(self, app: Any) -> None:
        # The harness's own log gives the causes of 5xx.
        settings = ServeSettings(port=0, log_level="critical")
        self.sock = listen(settings)
        self.port = int(self.sock.getsockname()[1])
        self.url = f"http://{settings.host}:{self.port}"
        self.server = Server(app, settings)
        self.thread = threading.Thread(target=self.server.run, args=([self.sock],), daemon=True)

    def __enter__(self) -> "_Server":
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the coordinator did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)
        self.sock.close()


def _send(
    http: httpx.Client, method: str, url: str, headers: dict[str, str], body: bytes | None
) -> httpx.Response | None:
    try:
        return http.request(method, url, headers=headers, content=body)
    except httpx.LocalProtocolError:
        raise  # the fuzzer made a request httpx will not send: a bug here, not in the server
    except httpx.HTTPError:
        return None


@dataclass
class Outcome:
    """What a run found."""

    tallies: dict[str, Tally]
    causes: Counter[str]
    healthy: bool
    finished: bool
    attacks: list[AttackResult]


def fuzz(
    requests: int, seed: int, max_seconds: float, attack_sockets: int, attack_seconds: float
) -> Outcome:
    """Run the whole campaign, then the attacks."""
    rng = random.Random(seed)
    member = Identity(Ed25519PrivateKey.from_private_bytes(rng.randbytes(32)))
    causes = _Causes()
    logging.getLogger("memmesh.net").addHandler(causes)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="memmesh-fuzz-") as folder:
        coordinator = Coordinator(Path(folder) / "data", team=TEAM)
        try:
            # The fuzzer is the team's admin, so that the admins' routes are reached too.
            made = coordinator.membership.bootstrap("fuzzer")
            assert made is not None
            coordinator.membership.join(
                Caller(key=member.public_key_text, key_id=member.key_id),
                JoinRequest(
                    secret=made[0], genesis=roster_chain.genesis(member, TEAM, name="fuzzer")
                ),
            )
            routes: list[Endpoint] = endpoints(coordinator)
            embedder = coordinator.store.embedder
            fuzzer = Fuzzer(rng, member, embedder.fingerprint, embedder.dim)
            types: dict[str, type] = {e.path: e.response for e in routes}
            types["/v1/openapi.json"] = dict
            limits = {e.path: e.limit.max_bytes for e in routes}
            names = {e.path: f"{e.method} {e.path}" for e in routes}
            names["/v1/openapi.json"] = "GET /v1/openapi.json"
            posts = [e.path for e in routes if e.request is not None]
            seeds = {path: fuzzer.seed(path) for path in posts}
            tallies = {path: Tally() for path in names}
            plan = [path for path in names for _ in range(requests)]
            rng.shuffle(plan)
            finished = True
            with (
                _Server(coordinator_app(coordinator, token=TOKEN)) as server,
                httpx.Client(base_url=server.url, timeout=REQUEST_TIMEOUT) as http,
            ):
                fuzzer.audience = client_audience(coordinator_audience(TEAM), server.url)
                # The seed publication goes first, so that searches have something to find.
                first = _encode(seeds["/v1/publish"])
                signed = {**fuzzer.headers(), **fuzzer.signature("POST", "/v1/publish", first)}
                http.post("/v1/publish", content=first, headers=signed)
                for done, path in enumerate(plan):
                    if time.monotonic() - started > max_seconds:
                        finished = False
                        print(f"time budget spent after {done} of {len(plan)} requests")
                        break
                    # A fresh connection each time: one request's fate must not be another's.
                    headers = {**fuzzer.headers(), "connection": "close"}
                    if path in posts:
                        body: bytes | None = fuzzer.body(path, seeds[path], limits[path])
                        headers.setdefault("content-type", "application/json")
                        headers.update(fuzzer.signature("POST", path, body))
                        answer = _send(http, "POST", path, headers, body)
                    else:
                        query = fuzzer.query()
                        body = rng.randbytes(rng.randint(1, 64)) if rng.random() < 0.1 else None
                        target = f"{path}?{query}" if query else path
                        headers.update(fuzzer.signature("GET", path, body))
                        answer = _send(http, "GET", target, headers, body)
                    tallies[path].count(answer, types[path], body or b"")
                health = _send(http, "GET", "/healthz", {"connection": "close"}, None)
                healthy = health is not None and health.status_code == 200
            search = _encode(seeds["/v1/search"])
            attacks = _attacks(coordinator, member, search, attack_sockets, attack_seconds)
        finally:
            coordinator.close()
            logging.getLogger("memmesh.net").removeHandler(causes)
    tallied = {names[path]: tally for path, tally in tallies.items()}
    return Outcome(tallied, causes.seen, healthy, finished, attacks)


def _attacks(
    coordinator: Coordinator, member: Identity, search: bytes, count: int, seconds: float
) -> list[AttackResult]:
    """The socket attacks, each timing the member's signed search (``count`` 0: none).

    They are made on the coordinator served without a token, as it may be beyond loopback
    over https, where the members' signed keys are the gate: a stranger's request body is
    then read before its signature can be checked.
    """
    if count == 0:
        return []
    # The attacker is 127.0.0.1, the member another host (127.0.0.2): each address has its own
    # cap on connections, and an attacker's own are closed past it.
    member_host = httpx.HTTPTransport(local_address=MEMBER_ADDRESS)
    with (
        _Server(coordinator_app(coordinator, token=None)) as server,
        httpx.Client(base_url=server.url, timeout=5, transport=member_host) as http,
    ):

        def ask() -> tuple[int, float]:
            audience = client_audience(coordinator_audience(TEAM), server.url)
            headers = {
                "content-type": "application/json",
                "connection": "close",  # a fresh connection: the one an attack would keep out
                **sign_request(member, "POST", "/v1/search", search, audience),
            }
            started = time.perf_counter()
            try:
                status = http.post("/v1/search", content=search, headers=headers).status_code
            except httpx.HTTPError:
                status = -1
            return status, (time.perf_counter() - started) * 1000

        port = server.port
        return [
            baseline(ask),
            attack("idle sockets", port, ask, count=count, seconds=seconds),
            attack(
                "slow headers",
                port,
                ask,
                count=count,
                seconds=seconds,
                start=SLOW_HEAD,
                drip=MORE_HEAD,
            ),
            attack(
                "slow bodies",
                port,
                ask,
                count=count,
                seconds=seconds,
                start=SLOW_BODY,
                drip=MORE_BODY,
            ),
        ]


def print_table(tallies: dict[str, Tally]) -> None:
    header = [
        "endpoint",
        "requests",
        "2xx",
        "4xx",
        "5xx",
        "crashes",
        "off-protocol",
        "4xx by status",
    ]
    rows: list[list[Any]] = []
    for name, tally in tallies.items():
        detail = " ".join(
            f"{status}:{n}" for status, n in sorted(tally.statuses.items()) if 400 <= status < 500
        )
        rows.append(
            [
                name,
                tally.requests,
                tally.band(200),
                tally.band(400),
                tally.band(500),
                tally.crashes,
                tally.off_protocol,
                detail,
            ]
        )
    total = [
        "total",
        *(sum(int(row[i]) for row in rows) for i in range(1, 7)),
        "",
    ]
    rows.append(total)
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        cells = [
            str(cell).ljust(widths[i]) if i in (0, 7) else str(cell).rjust(widths[i])
            for i, cell in enumerate(row)
        ]
        print("  ".join(cells).rstrip())


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=1000, help="requests per route (1000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (0)")
    parser.add_argument(
        "--max-seconds", type=float, default=600.0, help="stop sending after this long (600)"
    )
    parser.add_argument(
        "--attack-sockets",
        type=int,
        default=200,
        help="connections each socket attack holds (200; 0: no attacks)",
    )
    parser.add_argument(
        "--attack-seconds",
        type=float,
        default=7.0,
        help="seconds each socket attack lasts (7: past the 5 s header deadline)",
    )
    parser.add_argument(
        "--sections",
        default=",".join(SECTIONS),
        help=f"attack sections run after the socket attacks, comma-separated "
        f"({','.join(SECTIONS)}; 'none': none)",
    )
    args = parser.parse_args(argv)
    args.sections = [] if args.sections == "none" else args.sections.split(",")
    if unknown := set(args.sections) - set(SECTIONS):
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    if args.requests < 1 or args.max_seconds <= 0:
        parser.error("--requests and --max-seconds must be positive")
    if not 0 <= args.attack_sockets <= 1000 or not 0 < args.attack_seconds <= 60:
        parser.error("--attack-sockets must be 0-1000 and --attack-seconds 0-60")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    print(f"== memmesh coordinator fuzz: {args.requests} requests per route, seed {args.seed}")
    started = time.monotonic()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = fuzz(
            args.requests, args.seed, args.max_seconds, args.attack_sockets, args.attack_seconds
        )
    tallies, causes, healthy, finished = (
        outcome.tallies,
        outcome.causes,
        outcome.healthy,
        outcome.finished,
    )
    elapsed = time.monotonic() - started
    print()
    print_table(tallies)
    total = sum(t.requests for t in tallies.values())
    print(
        f"\n{total} requests in {elapsed:.1f} s ({total / elapsed:.0f}/s); healthy after: {healthy}"
    )
    if caught:
        kinds = Counter(f"{w.category.__name__}: {w.message}" for w in caught)
        print("\nwarnings raised while serving:")
        for text, n in kinds.most_common():
            print(f"  {n:6d}  {text}")
    if causes:
        print("\ncauses of 5xx (from the harness's log):")
        for text, n in causes.most_common():
            print(f"  {n:6d}  {text}")
    failing = {name: t.first_failure for name, t in tallies.items() if t.first_failure}
    if failing:
        print("\nfirst failing request per route:")
        for name, what in failing.items():
            print(f"  {name}: {what}")
    odd = {name: t.first_off_protocol for name, t in tallies.items() if t.first_off_protocol}
    if odd:
        print("\nfirst off-protocol answer per route:")
        for name, what in odd.items():
            print(f"  {name}: {what}")
    if outcome.attacks:
        print("\n== attacks: a member's signed search (no token needed) while each runs")
        print(table(ATTACK_HEADERS, [result.row() for result in outcome.attacks]))
    denied = any(r.answered < len(r.answers) for r in outcome.attacks)
    denied = not run_sections(args.sections) or denied
    broken = any(t.band(500) or t.crashes for t in tallies.values()) or not healthy or denied
    if broken:
        return 1
    return 0 if finished else 2


if __name__ == "__main__":
    sys.exit(main())
