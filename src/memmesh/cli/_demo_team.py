"""The `mem demo` walk-through: a whole team on loopback, end to end.

A coordinator and three members (each with a real peer daemon process) in temporary homes,
every daemon on https with its own certificate, pinned by the members, and every request
signed by a member's key: the first member joins with the coordinator's admin code and invites
the others; members remember facts, publish some and keep others private; teammates ask the
team; an author sees who was served their items; a secret is refused; a retraction vanishes
from every answer; a member goes offline and the coordinator's cache still answers; a revoked
member's items vanish.

The members join and act through the same team functions as the `mem` commands
(:func:`~memmesh.team.roster.join`, :class:`~memmesh.team.member.Member`), and each step
prints the command line that does what the step does.
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

from memmesh._processes import stop_process
from memmesh.cli._common import shown_ids
from memmesh.cli.errors import DemoFailed
from memmesh.errors import MemmeshError
from memmesh.local import recall
from memmesh.local.project import resolve_project
from memmesh.local.store import Store
from memmesh.net.server import free_port
from memmesh.policy import load_policy
from memmesh.registry import load_identity
from memmesh.team import roster
from memmesh.team.disclosures import my_disclosures
from memmesh.team.member import Member
from memmesh.team.recall import TeamAnswer, list_peers
from memmesh.team.setup import join_team
from memmesh.text import counted

__all__ = ["run_demo"]

_KINDS = ("decision", "convention", "gotcha", "command", "incident")
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


def _ran(*commands: list[str], note: str = "") -> None:
    """Print the `mem` command lines the demo is running (arguments with spaces quoted)."""
    lines = [
        " ".join(["mem", *(f'"{word}"' if " " in word or not word else word for word in argv)])
        for argv in commands
    ]
    _say("$ " + " && ".join(lines) + (f"   {note}" if note else ""))


@contextmanager
def _member(home: Path, name: str, *, reconcile_first: bool = True) -> Iterator[Member]:
    """The member in ``home`` at work, as the `mem team` commands open them."""
    policy, identity = load_policy(home), load_identity(home)
    with Store(home, author=name) as store:
        yield Member(store, identity, policy, reconcile_first=reconcile_first)


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
                raise DemoFailed(name, f"exited early ({process.returncode})")
            try:
                # Liveness only, which carries nothing: the members pin the certificate.
                probe = httpx.get(f"{url}/healthz", timeout=0.5, verify=False)  # noqa: S501
                if probe.status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.05)
        raise DemoFailed(name, "did not start in 30 s")

    def stop(self, name: str) -> None:
        process = self.running.pop(name, None)
        if process is not None:
            stop_process(process)

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
        f"{s.name} {s.status}" + (f" ({counted(s.hits, 'hit')})" if s.status == "ok" else "")
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
    coordinator_url = f"https://127.0.0.1:{coordinator_port}"
    processes = _Processes(env)
    homes = {name: root / name for name in _FACTS}
    with _token(token), ExitStack() as stack:
        stack.callback(processes.stop_all)
        _say(f"memmesh demo: a team of three on loopback, in {root}\n")
        data = root / "coordinator"
        serve = ["coordinator", "serve", "--data", str(data), "--port", str(coordinator_port),
                 "--team", "acme", "--tls", "--admin-name", "ada"]  # fmt: skip
        _ran(serve, note="(https with its own certificate; prints its pin and an admin code)")
        processes.start("coordinator", serve, coordinator_url)
        code = (data / "admin-join-code").read_text(encoding="utf-8").strip()
        ids: dict[str, list[str]] = {}
        for name, home in homes.items():
            # The share settings first (what `mem team init` writes); joining fills in the
            # team, the coordinator, its pin and its key.
            join_team(home, name=name, team="acme", kinds=_KINDS)
            if name != "ada":
                _ran(["--home", "ada", "team", "invite", name], note="-> a one-line code")
                admin_home = homes["ada"]
                code = roster.invite(
                    load_policy(admin_home), load_identity(admin_home), name, home=admin_home
                ).code
            joined = roster.join(home, code)
            admin = " (admin)" if joined.member.admin else ""
            note = f"-> {joined.member.key_id}{admin}"
            _ran(["--home", name, "team", "join", code[:24] + "…"], note=note)
            ids[name] = _remember_and_publish(name, home)
        _say()
        for name, home in homes.items():
            port = free_port()
            serve = ["team", "serve", "--port", str(port), "--heartbeat", "1", "--tls"]
            processes.start(name, ["--home", str(home), *serve], f"https://127.0.0.1:{port}")
            _ran(["--home", name, *serve], note="(peer daemon running, pinned from its presence)")
        _wait_for_presence(homes["ada"], len(homes) - 1)

        bob = homes["bob"]
        _ask(bob, "bob", "which lock does the job scheduler use?")
        _ask(bob, "bob", "my quarterly self-review")
        _say("  (bob's own private note stays on his laptop, and ada's and carol's too)")

        _say("\n--- an author sees who was served their items (never what was asked)")
        _ran(["--home", "ada", "team", "disclosures"])
        _show_disclosures(homes["ada"])

        _say("\n--- a secret never leaves, even with --force")
        with Store(homes["ada"], author="ada") as store:
            item, _ = store.remember(
                "Staging DB: postgres://app:Pr0d-Passw0rd-9x@db.staging:5432/app",
                kind="gotcha",
                project=resolve_project(None),
            )
        shown = "Staging DB: postgres://app:…@db.staging…"  # the password is not shown
        _ran(["--home", "ada", "remember", shown, "--kind", "gotcha"])
        _ran(["--home", "ada", "team", "publish", item.id, "--force"])
        try:
            with _member(homes["ada"], "ada") as ada:
                ada.publish([item.id], force=True)
        except MemmeshError as exc:
            _say(f"  refused: {exc.message}")

        _say("\n--- a retraction vanishes from every answer")
        _ask(bob, "bob", "node-gyp E1234")
        gyp = ids["ada"][1]
        _ran(["--home", "ada", "team", "retract", gyp], ["--home", "ada", "team", "sync"])
        with _member(homes["ada"], "ada") as ada:
            ada.retract([gyp])
            ada.sync()
        _ask(bob, "bob", "node-gyp E1234")

        _say("\n--- carol goes offline; the coordinator's cache still answers")
        processes.stop("carol")
        _say("(carol's peer daemon stopped)")
        _ask(bob, "bob", "how often are failed webhooks retried?")

        _say("\n--- carol leaves the team: revoked, her published items purged")
        _ran(["--home", "ada", "team", "revoke", "carol", "--purge", "--yes"])
        ada_home = homes["ada"]
        revoked = roster.revoke(
            load_policy(ada_home), load_identity(ada_home), "carol", purge=True, home=ada_home
        )
        purged = counted(revoked.purged, "published item")
        _say(f"  revoked {revoked.member.name}; {purged} purged")
        _ask(bob, "bob", "how often are failed webhooks retried?")

        _say("\n--- and a local recall never needs the network")
        query = "how do I run the integration tests"
        _ran(["--home", "bob", "recall", query])
        with Store(homes["bob"], author="bob") as store:
            answer = recall(store, query, project=resolve_project(None))
        for hit in answer.hits:
            _say(f"  {hit.score:.2f}  {hit.item.text}")


def _remember_and_publish(name: str, home: Path) -> list[str]:
    """Remember the member's facts (in the project `mem remember` would choose), publish the
    shared ones and sync, as the commands printed do."""
    published: list[str] = []
    with Store(home, author=name) as store:
        for text, kind, share in _FACTS[name]:
            item, _ = store.remember(text, kind=kind, project=resolve_project(None))
            note = "[to publish]" if share else "[private]"
            _ran(["--home", name, "remember", text, "--kind", kind], note=note)
            if share:
                published.append(item.id)
    _ran(["--home", name, "team", "publish", *published], ["--home", name, "team", "sync"])
    with _member(home, name) as member:
        member.publish(published)
        member.sync()
    return published


def _show_disclosures(home: Path) -> None:
    with Store(home, author=home.name) as store:
        rows = my_disclosures(load_policy(home), load_identity(home), store, limit=10)
        shown = shown_ids(store, [row.item_id for row in rows])
    for row in rows:
        _say(f"  {shown[row.item_id]}  served to {row.asker_name}  (logged by the {row.source})")
    if not rows:
        _say("  (nobody has been served your items yet)")


def _wait_for_presence(home: Path, expected: int) -> None:
    """Until the coordinator lists ``expected`` teammates' peers (heartbeats are every 1 s)."""
    policy = load_policy(home)
    identity = load_identity(home)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        seen, _ = list_peers(policy, identity=identity)
        if len(seen) >= expected:
            return
        time.sleep(0.2)


def _ask(home: Path, name: str, query: str) -> None:
    _say()
    _ran(["--home", name, "team", "recall-team", query])
    with _member(home, name, reconcile_first=False) as member:
        _show(member.ask_team(query, k=5, project=resolve_project(None)))
