"""The `mem demo` walk-through: a whole team on loopback, end to end.

A coordinator and three members (each with a real peer daemon process) in temporary homes:
members remember facts, publish some and keep others private; teammates ask the team; a
secret is refused; a retraction vanishes from every answer; a member goes offline and the
coordinator's cache still answers.
"""

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

from memmesh.errors import MemmeshError
from memmesh.local import recall
from memmesh.local.store import Store
from memmesh.net.server import free_port
from memmesh.policy import load_policy, policy_template
from memmesh.registry import Registry, create_identity, load_identity, publish, retract
from memmesh.team.recall import TeamAnswer, list_peers, recall_team
from memmesh.team.sync import coordinator_client, sync

__all__ = ["run_demo"]

_KINDS = "[decision, convention, gotcha, command, incident]"
_FACTS: dict[str, list[tuple[str, str, bool]]] = {
    "ada": [
        ("We chose Postgres advisory locks over Redis for the job scheduler", "decision", True),
        (
            "npm install fails with node-gyp error E1234 unless python3-dev is installed",
            "gotcha",
            True,
        ),
        ("My 1:1 with the manager moved to Thursdays", "fact", False),
    ],
    "bob": [
        (
            "Run the integration tests with make test-int; they need Docker running",
            "command",
            True,
        ),
        ("Always squash-merge feature branches into main", "convention", True),
        ("I still have to finish the quarterly self-review", "fact", False),
    ],
    "carol": [
        (
            "The billing service retries failed webhooks 5 times with exponential backoff",
            "gotcha",
            True,
        ),
        ("Incident 2031: the payments queue stalled when Redis hit maxmemory", "incident", True),
        ("Draft notes for my conference talk on queues", "fact", False),
    ],
}


def _say(line: str = "") -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class _Processes:
    """Real server processes, stopped (and waited for) whatever happens."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.running: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, args: list[str], url: str) -> None:
        process = subprocess.Popen(
            [sys.executable, "-m", "memmesh", *args],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.running[name] = process
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise MemmeshError(f"the demo's {name} exited early ({process.returncode})")
            try:
                if httpx.get(f"{url}/healthz", timeout=0.5).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.05)
        raise MemmeshError(f"the demo's {name} did not start in 30 s")

    def stop(self, name: str) -> None:
        process = self.running.pop(name, None)
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def stop_all(self) -> None:
        for name in list(self.running):
            self.stop(name)


@contextmanager
def _token(value: str) -> Iterator[None]:
    """The team token in this process's environment for the demo's duration."""
    old = os.environ.get("MEM_TEAM_TOKEN")
    os.environ["MEM_TEAM_TOKEN"] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MEM_TEAM_TOKEN", None)
        else:
            os.environ["MEM_TEAM_TOKEN"] = old


def _show(answer: TeamAnswer) -> None:
    if answer.abstained:
        _say("  (nothing relevant from the team)")
    for hit in answer.hits:
        _say(f"  {hit.score:.2f}  {hit.author:<6} {hit.text}   [via {hit.source}]")
    states = ", ".join(
        f"{s.name} {s.status}" + (f" ({s.hits} hits)" if s.status == "ok" else "")
        for s in answer.sources
    )
    _say(f"  sources: {states}")
    if answer.dropped:
        _say("  dropped: " + ", ".join(f"{n} {why}" for why, n in answer.dropped.items()))


def run_demo(root: Path) -> None:
    """The whole walk-through, with homes and data under ``root``."""
    token = secrets.token_hex(16)
    env = {**os.environ, "MEM_TEAM_TOKEN": token}
    env.pop("MEM_AUTHOR", None)
    coordinator_port = free_port()
    coordinator_url = f"http://127.0.0.1:{coordinator_port}"
    processes = _Processes(env)
    homes = {name: root / name for name in _FACTS}
    with _token(token), ExitStack() as stack:
        stack.callback(processes.stop_all)
        _say(f"memmesh demo: a team of three on loopback, in {root}\n")
        _say(f"$ mem coordinator serve --data {root / 'coordinator'} --port {coordinator_port}")
        processes.start(
            "coordinator",
            ["coordinator", "serve", "--data", str(root / "coordinator"),
             "--port", str(coordinator_port), "--team", "acme"],
            coordinator_url,
        )  # fmt: skip
        ids: dict[str, list[str]] = {}
        for name, home in homes.items():
            identity = create_identity(home)
            (home / "team.yaml").write_text(
                policy_template(name=name, team="acme", coordinator=coordinator_url).replace(
                    "  kinds: []", f"  kinds: {_KINDS}"
                ),
                encoding="utf-8",
            )
            _say(f"$ mem --home {name} team init --name {name} --team acme   -> {identity.key_id}")
            ids[name] = _remember_and_publish(name, home)
        _say()
        for name, home in homes.items():
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            args = ["--home", str(home), "team", "serve", "--port", str(port), "--heartbeat", "1"]
            processes.start(name, args, url)
            _say(f"$ mem --home {name} team serve --port {port}   (peer daemon running)")
        _wait_for_presence(homes["ada"], len(homes) - 1)

        bob = homes["bob"]
        _ask(bob, "bob", "which lock does the job scheduler use?")
        _ask(bob, "bob", "my quarterly self-review")
        _say("  (bob's own private note stays on his laptop, and ada's and carol's too)")

        _say("\n--- a secret never leaves, even with --force")
        with Store(homes["ada"], author="ada") as store:
            item, _ = store.remember(
                "Staging DB: postgres://app:Pr0d-Passw0rd-9x@db.staging:5432/app", kind="gotcha"
            )
        _say('$ mem --home ada remember "Staging DB: postgres://app:…@db.staging…" --kind gotcha')
        try:
            _publish(homes["ada"], [item.id], force=True)
        except MemmeshError as exc:
            _say(f"$ mem --home ada team publish {item.id[:10]} --force\n  refused: {exc.message}")

        _say("\n--- a retraction vanishes from every answer")
        _ask(bob, "bob", "node-gyp E1234")
        with Store(homes["ada"], author="ada") as store:
            registry = Registry(store, load_identity(homes["ada"]), "acme")
            retract(registry, [ids["ada"][1]])
            with coordinator_client(load_policy(homes["ada"])) as client:
                sync(registry, load_policy(homes["ada"]), client)
        _say(f"$ mem --home ada team retract {ids['ada'][1][:10]} && mem --home ada team sync")
        _ask(bob, "bob", "node-gyp E1234")

        _say("\n--- carol goes offline; the coordinator's cache still answers")
        processes.stop("carol")
        _say("(carol's peer daemon stopped)")
        _ask(bob, "bob", "how often are failed webhooks retried?")

        _say("\n--- and a local recall never needs the network")
        with Store(homes["bob"], author="bob") as store:
            answer = recall(store, "how do I run the integration tests", project="global")
        for hit in answer.hits:
            _say(f"$ mem --home bob recall ...\n  {hit.score:.2f}  {hit.item.text}")
    _say("\ndone: every process stopped; the temporary homes are removed.")


def _remember_and_publish(name: str, home: Path) -> list[str]:
    published: list[str] = []
    with Store(home, author=name) as store:
        for text, kind, share in _FACTS[name]:
            item, _ = store.remember(text, kind=kind)
            marker = "publish" if share else "private"
            _say(f"$ mem --home {name} remember {text[:52]!r}… --kind {kind}   [{marker}]")
            if share:
                published.append(item.id)
    _publish(home, published)
    _say(f"$ mem --home {name} team publish {len(published)} items && mem --home {name} team sync")
    return published


def _publish(home: Path, item_ids: list[str], *, force: bool = False) -> None:
    policy = load_policy(home)
    with Store(home) as store:
        registry = Registry(store, load_identity(home), policy.team)
        publish(registry, policy, item_ids, force=force)
        with coordinator_client(policy) as client:
            sync(registry, policy, client)


def _wait_for_presence(home: Path, expected: int) -> None:
    """Until the coordinator lists ``expected`` teammates' peers (heartbeats are every 1 s)."""
    policy = load_policy(home)
    own = load_identity(home).key_id
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        seen, _ = list_peers(policy, own_key=own)
        if len(seen) >= expected:
            return
        time.sleep(0.2)


def _ask(home: Path, name: str, query: str) -> None:
    _say(f'\n$ mem --home {name} team recall-team "{query}"')
    policy = load_policy(home)
    with Store(home, author=name) as store:
        answer = recall_team(store, policy, query, k=3, own_key=load_identity(home).key_id)
    _show(answer)
