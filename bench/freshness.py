"""Benchmark of how fast what changes on the coordinator reaches teammates' agents.

Run from the repository root::

    .venv/bin/python bench/freshness.py                 # 3 rounds, 10,000 items
    .venv/bin/python bench/freshness.py --rounds 5 --items 2000

Everything runs on 127.0.0.1 in a temporary folder: a coordinator (uvicorn in a thread of this
process) for team ``acme``, and members ada (its admin), bob and a few more, each a home with
an identity and a team.yaml, on the coordinator's roster. Every number below uses the
project's defaults (no interval is shortened), and every loop is bounded in time.

(a) Retraction to absence. ada's prompt hook (the real ``mem hook prompt`` process, with its
    warm server, as a coding agent runs it) shows bob's item; bob retracts it and syncs, and
    the clock starts; ada's hook runs again every half second until the item is gone. Goal:
    at most 30 s (:data:`memmesh.agents.freshness.STALE_BOUND_S`).
(b) Revocation to refusal. ada's peer daemon (the real ``mem team serve``, heartbeat every
    30 s) answers a member; an admin revokes that member on the coordinator, and the clock
    starts; the member asks ada's peer every 0.1 s until refused. Goal: at most 5 s
    (:data:`memmesh.peer.heartbeat.REVOCATION_BOUND_S`).
(c) Refresh cost. bob publishes ``--items`` items; ada's first refresh reads them all (and
    embeds them); a refresh after nothing changed; one after bob changed 10 of them (5
    retracted, 5 new); and, for comparison, a whole re-read of the feed (what every refresh
    cost before the cache followed the feed's cursor). Goal: the refresh after 10 changes
    reads 10 changes and costs about what the no-change one does, not what the whole
    re-read does.

Printed: a table per part, the goal beside each figure, and the machine and commit.
"""

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import uvicorn
import yaml

from _common import cpu_count, cpu_model, load_average, log, source_revision, table
from memmesh.agents import warm
from memmesh.agents.freshness import STALE_BOUND_S
from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.coordinator.protocol import JoinRequest, StatementsRequest
from memmesh.local import teamcache
from memmesh.local.store import Store
from memmesh.net.client import Client
from memmesh.net.connect import coordinator_client
from memmesh.net.errors import Refused
from memmesh.net.quotas import Quotas
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.server import free_port
from memmesh.net.signing import Caller, peer_audience
from memmesh.peer.heartbeat import REVOCATION_BOUND_S
from memmesh.policy import load_policy
from memmesh.registry import Identity, Registry, create_identity, publish, retract, roster_chain
from memmesh.team.refresh import Refreshed, refresh_cache
from memmesh.team.sync import sync

TEAM = "acme"
TOKEN = "bench-freshness-token"
KINDS = ["decision", "convention", "gotcha", "command", "incident"]
PROMPT = "How do I deploy to staging behind the VPN?"
GOTCHA = "Staging deploys need the VPN {n}: run wg-quick up staging before deploying"
# The most seconds any one measurement may take: past it the figure is "timed out".
LIMIT_S = 90.0


class Member:
    """A member's home: identity, team.yaml naming the coordinator, a store."""

    def __init__(self, root: Path, name: str, coordinator: str) -> None:
        self.name = name
        self.home = root / name
        self.identity: Identity = create_identity(self.home)
        policy = {
            "version": 1, "team": TEAM, "identity": {"name": name}, "coordinator": coordinator,
            "share": {"kinds": KINDS},
        }  # fmt: skip
        (self.home / "team.yaml").write_text(yaml.safe_dump(policy), encoding="utf-8")

    def remember(self, texts: list[str]) -> list[str]:
        with Store(self.home, author=self.name) as store:
            return [store.remember(t, kind="gotcha", project="web")[0].id for t in texts]

    def publish(self, item_ids: list[str]) -> None:
        with Store(self.home, author=self.name) as store:
            publish(Registry(store, self.identity, TEAM), load_policy(self.home), item_ids)

    def retract(self, item_ids: list[str]) -> None:
        with Store(self.home, author=self.name) as store:
            retract(Registry(store, self.identity, TEAM), item_ids)

    def sync(self) -> None:
        policy = load_policy(self.home)
        with (
            Store(self.home, author=self.name) as store,
            coordinator_client(policy, self.identity) as client,
        ):
            sync(Registry(store, self.identity, TEAM), policy, client)

    def mem(self, *args: str, stdin: str | None = None) -> str:
        command = [sys.executable, "-m", "memmesh", "--home", str(self.home), *args]
        done = subprocess.run(
            command, input=stdin, capture_output=True, text=True, timeout=60, check=False
        )
        return done.stdout


def _caller(identity: Identity) -> Caller:
    return Caller(key=identity.public_key_text, key_id=identity.key_id)


@contextlib.contextmanager
def _coordinator(root: Path) -> Iterator[tuple[Coordinator, str]]:
    # Room for bob's whole share beside the other rounds' items (the default is 10,000 a key).
    quotas = Quotas(member_items=100_000, total_items=1_000_000)
    coordinator = Coordinator(root / "coordinator", team=TEAM, quotas=quotas)
    port = free_port()
    config = uvicorn.Config(
        coordinator_app(coordinator, token=TOKEN), host="127.0.0.1", port=port,
        log_level="error", access_log=False, lifespan="off",
    )  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield coordinator, f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        coordinator.close()


def _until_gone(ada: Member, text: str) -> float:
    """Seconds until ada's prompt hook no longer shows ``text`` (``inf`` past LIMIT_S)."""
    started = time.monotonic()
    stdin = json.dumps({"prompt": PROMPT, "session_id": "bench"})
    while time.monotonic() - started < LIMIT_S:
        if text not in ada.mem("hook", "prompt", "--project", "web", stdin=stdin):
            return time.monotonic() - started
        time.sleep(0.5)
    return float("inf")


def retraction_to_absence(ada: Member, bob: Member, rounds: int) -> list[float]:
    stdin = json.dumps({"prompt": PROMPT, "session_id": "bench"})
    seconds = []
    for n in range(rounds):
        text = GOTCHA.format(n=n)
        (item,) = bob.remember([text])
        bob.publish([item])
        bob.sync()
        ada.mem("team", "cache", "refresh")
        deadline = time.monotonic() + LIMIT_S
        while text not in ada.mem("hook", "prompt", "--project", "web", stdin=stdin):
            assert time.monotonic() < deadline, "ada's hook never showed bob's item"
            time.sleep(0.2)
        time.sleep(n * 3.1 % 10)  # retract at different points of the warm server's poll
        bob.retract([item])
        bob.sync()
        seconds.append(_until_gone(ada, text))
        log(f"(a) round {n + 1}: {seconds[-1]:.1f} s")
    return seconds


def _status(asker: Member, owner: Member, url: str) -> int:
    audience = peer_audience(owner.identity.key_id)
    try:
        with Client(url, token=None, identity=asker.identity, audience=audience) as client:
            client.post("/v1/recall", SearchRequest(query="staging deploys", k=3), SearchResponse)
    except Refused as refused:
        return refused.http_status
    except Exception:
        return 0
    return 200


def _sign(
    host: Coordinator,
    admin: Member,
    make: Callable[..., roster_chain.SignedStatement],
    **fields: Any,
) -> None:
    """The admin signs one roster statement (``make``: a roster_chain helper) after the
    coordinator's head, which takes it."""
    with host.store.read() as tx:
        state = host.membership.signed.state(tx)
    assert state is not None
    request = StatementsRequest(statements=[make(state, admin.identity, **fields)])
    host.membership.signed.statements(_caller(admin.identity), request)


def revocation_to_refusal(
    host: Coordinator, ada: Member, askers: list[Member], root: Path
) -> list[float]:
    port = free_port()
    log_file = (root / "peer.log").open("wb")
    peer = subprocess.Popen(
        [sys.executable, "-m", "memmesh", "--home", str(ada.home), "team", "serve",
         "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=log_file,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    seconds = []
    try:
        for n, asker in enumerate(askers):
            deadline = time.monotonic() + LIMIT_S
            while _status(asker, ada, url) != 200:
                assert time.monotonic() < deadline, f"ada's peer never answered {asker.name}"
                time.sleep(0.2)
            time.sleep(n * 1.3 % 2)  # revoke at different points of the peer's checks
            _sign(host, ada, roster_chain.revoke, key=asker.identity.public_key_text)
            started = time.monotonic()
            while _status(asker, ada, url) == 200 and time.monotonic() - started < LIMIT_S:
                time.sleep(0.1)
            took = time.monotonic() - started
            seconds.append(took if took < LIMIT_S else float("inf"))
            log(f"(b) round {n + 1}: {seconds[-1]:.2f} s")
    finally:
        peer.terminate()
        peer.wait(10)
        log_file.close()
    return seconds


def refresh_cost(ada: Member, bob: Member, items: int) -> list[tuple[str, Refreshed]]:
    log(f"(c) bob remembers and publishes {items:,} items")
    ids = bob.remember([f"Service {n} deploys from the release-{n} branch" for n in range(items)])
    bob.publish(ids)
    bob.sync()
    policy, identity = load_policy(ada.home), ada.identity
    first = refresh_cache(ada.home, policy, identity)
    unchanged = refresh_cache(ada.home, policy, identity)
    bob.retract(ids[:5])
    new = bob.remember([f"Service {n} moved to the blue cluster" for n in range(5)])
    bob.publish(new)
    bob.sync()
    changed = refresh_cache(ada.home, policy, identity)
    # Forget where the cache stands in the feed: the next refresh re-reads it whole, as every
    # refresh did before (no embedding: every version is cached already).
    state = teamcache.state(ada.home)
    assert state.source is not None
    teamcache.apply(ada.home, state.source, [], [], complete=False, at=time.time())
    whole = refresh_cache(ada.home, policy, identity)
    return [
        ("first refresh (all new, embedded)", first),
        ("nothing changed", unchanged),
        ("10 of them changed", changed),
        ("whole re-read, nothing new", whole),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="measurements of (a) and (b)")
    parser.add_argument("--items", type=int, default=10_000, help="bob's share for (c)")
    args = parser.parse_args()
    os.environ["MEM_TEAM_TOKEN"] = TOKEN
    for name in [n for n in os.environ if n.startswith("MEM_") and n != "MEM_TEAM_TOKEN"]:
        del os.environ[name]
    with tempfile.TemporaryDirectory() as folder, _coordinator(Path(folder)) as (host, url):
        root = Path(folder)
        ada, bob = Member(root, "ada", url), Member(root, "bob", url)
        askers = [Member(root, f"m{n}", url) for n in range(args.rounds)]
        made = host.membership.bootstrap("ada")
        assert made is not None
        start = roster_chain.genesis(ada.identity, host.membership.team, name="ada")
        host.membership.join(_caller(ada.identity), JoinRequest(secret=made[0], genesis=start))
        for member in [bob, *askers]:
            _sign(
                host, ada, roster_chain.add, key=member.identity.public_key_text, name=member.name
            )
        ada.remember(["Staging deploys start from the deploy runbook"])
        try:
            absent = retraction_to_absence(ada, bob, args.rounds)
        finally:
            warm.stop(ada.home)
        refused = revocation_to_refusal(host, ada, askers, root)
        costs = refresh_cost(ada, bob, args.items)

    print(f"machine: {cpu_model()}, {cpu_count()}; load {load_average()}")
    print(f"commit: {source_revision()}; {sys.executable} bench/freshness.py "
          f"--rounds {args.rounds} --items {args.items}\n")  # fmt: skip
    rows = [
        ["(a) retraction -> gone from a teammate's prompt hook", *_spread(absent),
         f"<= {STALE_BOUND_S:.0f} s", _verdict(absent, STALE_BOUND_S)],
        ["(b) revocation -> refused by a peer", *_spread(refused),
         f"<= {REVOCATION_BOUND_S:.0f} s", _verdict(refused, REVOCATION_BOUND_S)],
    ]  # fmt: skip
    print(table(["what", "min s", "median s", "max s", "goal", "met"], rows))
    print()
    whole = costs[-1][1]
    crows = [
        [what, f"{r.seconds:.2f}", r.read, r.written, r.removed, "yes" if r.full else "no"]
        for what, r in costs
    ]
    print(f"(c) ada's cache refresh, bob sharing {args.items:,} items")
    print(table(["refresh", "seconds", "changes read", "written", "removed", "whole feed"], crows))
    changed = costs[2][1]
    grows = changed.read == 10 and changed.seconds < whole.seconds / 5
    print(f"\ngoal: the refresh after 10 changes grows with what changed: "
          f"{'met' if grows else 'NOT met'} ({changed.read} changes read, "
          f"{changed.seconds:.2f} s beside {whole.seconds:.2f} s for a whole re-read)")  # fmt: skip


def _spread(values: list[float]) -> list[str]:
    ordered = sorted(values)
    return [f"{ordered[0]:.2f}", f"{ordered[len(ordered) // 2]:.2f}", f"{ordered[-1]:.2f}"]


def _verdict(values: list[float], goal: float) -> str:
    return "yes" if max(values) <= goal else "no"


if __name__ == "__main__":
    main()
