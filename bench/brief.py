"""Benchmark of the session brief (`mem hook brief`) on a store of 10,000 items.

Run from the repository root::

    .venv/bin/python bench/brief.py                 # 10,000 items
    .venv/bin/python bench/brief.py --items 100000

A store in a temporary folder is filled through ``Store.remember`` (the real path) with
synthetic items over 20 projects, a tenth of them global preferences; then random
reinforcement and outcome counts are written into the rows, so that the brief has real
choices to make. Timed:

* the digest and its rendering in process (what the command does after starting Python);
* the whole command, ``mem hook brief --project P``, as a subprocess, beside ``mem --version``
  (Python start-up plus the CLI's imports), which is the floor any `mem` command pays;
* the prompt hook, ``mem hook prompt --client claude`` with a Claude ``UserPromptSubmit``
  input on standard input, as a subprocess; then both hooks again with a warm team cache of
  ``--team-items`` teammates' items (written through ``memmesh.local.teamcache.apply``, with
  vectors from the store's embedder, fresh so that no refresh starts). Each prompt hook runs
  cold (``MEM_HOOK_WARM=0``: the hook loads the store itself) and then, for the relevant
  prompt, against a warm server (`mem hook warm`, started and waited for first), which is
  what every prompt after a session's first one meets;
* Hermes' prefetch (``MemmeshProvider.prefetch``, which runs ``mem hook prompt --client
  hermes``) against the warm server with the team cache, beside ``mem --json recall -k 5``
  as a subprocess, the local half of what it ran before (with ``mem team recall-team`` after
  it, bounded at 1.5 s a source).
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import Latency, cpu_count, cpu_model, load_average, log, source_revision, table
from memmesh.agents import warm
from memmesh.agents.brief import render
from memmesh.local import teamcache
from memmesh.local.digest import digest
from memmesh.local.store import Store

PROJECTS = [f"service-{n:02d}" for n in range(20)]
RELEVANT = "how do we retry the webhook queue after a staging deploy"
KINDS = ["decision", "convention", "gotcha", "command", "incident", "fact"]
WORDS = (
    "deploy staging cache migration webhook retry queue schema index token build test lint "
    "docker kubernetes postgres redis billing invoice auth session cron backup restore alert"
).split()


def fill(home: Path, count: int, rng: random.Random) -> None:
    with Store(home, author="bench") as store:
        for n in range(count):
            words = " ".join(rng.choice(WORDS) for _ in range(12))
            if n % 10 == 0:
                store.remember(f"Preference {n}: {words}", kind="preference", project="global")
            else:
                store.remember(
                    f"Item {n}: {words}", kind=rng.choice(KINDS), project=rng.choice(PROJECTS)
                )
            if n and n % 2000 == 0:
                log(f"  {n} items")
        with store.transaction() as conn:
            rows = [(r[0],) for r in conn.execute("SELECT seq FROM items")]
            conn.executemany(
                "UPDATE items SET reinforcements = ?, worked = ?, failed = ? WHERE seq = ?",
                [
                    (
                        rng.choice([0, 0, 0, 1, 2, 5]),
                        rng.choice([0, 0, 1, 3]),
                        rng.choice([0, 0, 1]),
                        *row,
                    )
                    for row in rows
                ],
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=200, help="in-process runs")
    parser.add_argument("--commands", type=int, default=20, help="runs of the command")
    parser.add_argument("--team-items", type=int, default=1000, help="items in the team cache")
    args = parser.parse_args()
    rng = random.Random(7)
    mem = str(Path(sys.executable).with_name("mem"))
    with tempfile.TemporaryDirectory(prefix="memmesh-brief-") as folder:
        home = Path(folder) / "home"
        started = time.perf_counter()
        fill(home, args.items, rng)
        log(f"filled {args.items} items in {time.perf_counter() - started:.0f} s")

        samples, lengths = [], []
        for run in range(args.runs):
            project = PROJECTS[run % len(PROJECTS)]
            began = time.perf_counter()
            text = render(digest(home, project))
            samples.append((time.perf_counter() - began) * 1000)
            lengths.append(len(text))
        in_process = Latency.of("digest + render, in process", samples)

        brief = Latency.of(
            "mem hook brief --project P",
            [
                _command(mem, "--home", str(home), "hook", "brief", "--project", PROJECTS[run % 20])
                for run in range(args.commands)
            ],
        )
        floor = Latency.of(
            "mem --version", [_command(mem, "--version") for _ in range(args.commands)]
        )
        hooks = [brief, *_prompt_hooks(mem, home, args.commands, "")]
        fill_team(home, args.team_items, rng)
        hooks += [_brief_hook(mem, home, args.commands, ", team cache")]
        hooks += _prompt_hooks(mem, home, args.commands, ", team cache")
        hooks += _hermes(mem, home, Path(folder), args.commands)

    print(
        f"session brief, {args.items:,} items; {cpu_model()}, {cpu_count()}; "
        f"load {load_average()}; {source_revision()}"
    )
    rows = [[x.what, x.n, x.p50, x.p95, x.mean] for x in (in_process, *hooks, floor)]
    print(table(["what", "runs", "p50 ms", "p95 ms", "mean ms"], rows))
    print(f"brief length: max {max(lengths)} characters (limit 600)")
    return 0


def fill_team(home: Path, count: int, rng: random.Random) -> None:
    """``count`` teammates' items in the team cache, with the store's embedder's vectors."""
    with Store(home) as store:
        embedder = store.embedder
    items = [
        teamcache.CachedItem(
            key_id=f"mate{n % 5}", item_id=f"T{n:06d}", version=1, author=f"mate{n % 5}",
            kind=rng.choice(KINDS), project=rng.choice([*PROJECTS, "global"]),
            text=f"Team item {n}: " + " ".join(rng.choice(WORDS) for _ in range(12)),
            published_at=time.time() - n,
        )
        for n in range(count)
    ]  # fmt: skip
    vectors = embedder.embed([item.text for item in items]).astype("float32")
    source = teamcache.Source(
        coordinator="http://127.0.0.1:1", team="bench", embedder=embedder.fingerprint
    )
    pairs = [(item, row.tobytes()) for item, row in zip(items, vectors, strict=True)]
    teamcache.apply(home, source, pairs, [], complete=True, at=time.time())


def _brief_hook(mem: str, home: Path, runs: int, label: str) -> Latency:
    return Latency.of(
        f"mem hook brief --project P{label}",
        [
            _command(mem, "--home", str(home), "hook", "brief", "--project", PROJECTS[run % 20])
            for run in range(runs)
        ],
    )


def _prompt_hooks(mem: str, home: Path, runs: int, label: str) -> list[Latency]:
    """The prompt hook on a relevant prompt, and on a trivial one, answering by itself
    (``MEM_HOOK_WARM=0``); then on the relevant prompt again, asking a warm server."""
    out = []
    cold = {**os.environ, "MEM_HOOK_WARM": "0"}
    for what, prompt in (
        ("prompt", RELEVANT),
        ("trivial prompt", "yes"),
    ):
        out.append(_prompt_series(mem, home, runs, prompt, cold, f"{what}, cold{label}"))
    _start_warm(home)
    try:
        on = {**os.environ, "MEM_HOOK_WARM": "1"}
        out.append(_prompt_series(mem, home, runs, RELEVANT, on, f"prompt, warm server{label}"))
    finally:
        warm.stop(home)
    return out


def _hermes(mem: str, home: Path, folder: Path, runs: int) -> list[Latency]:
    """Hermes' prefetch against a warm server, and the cold local recall it ran before."""
    from memmesh.agents.hermes_provider import MemmeshProvider

    config = folder / "memmesh.json"
    config.write_text(json.dumps({"argv": [mem, "--home", str(home)], "home": str(home)}))
    provider = MemmeshProvider(config)
    provider.initialize("bench", platform="cli", agent_context="primary")
    before = Latency.of(
        "mem --json recall -k 5 (the prefetch's first call before)",
        [
            _command(mem, "--home", str(home), "--json", "recall", "-k", "5", "--", RELEVANT)
            for _ in range(runs)
        ],
    )
    _start_warm(home)
    samples = []
    os.environ["MEM_HOOK_WARM"] = "1"
    try:
        for _ in range(runs):
            began = time.perf_counter()
            if not provider.prefetch(RELEVANT):
                raise SystemExit("the prefetch recalled nothing")
            samples.append((time.perf_counter() - began) * 1000)
    finally:
        warm.stop(home)
    return [before, Latency.of("Hermes prefetch, warm server, team cache", samples)]


def _start_warm(home: Path) -> None:
    """Start `mem hook warm` for ``home`` and wait until it answers."""
    warm.start(home)
    deadline = time.monotonic() + 120
    while warm.ask(home, {"prompt": RELEVANT, "project": PROJECTS[0]}, timeout=5) is None:
        if time.monotonic() > deadline:
            raise SystemExit("the warm server did not start")
        time.sleep(0.2)


def _prompt_series(
    mem: str, home: Path, runs: int, prompt: str, env: dict[str, str], what: str
) -> Latency:
    samples = []
    for run in range(runs):
        given = json.dumps({"prompt": prompt, "session_id": f"s{run}"})
        argv = [mem, "--home", str(home), "hook", "prompt", "--client", "claude"]
        argv += ["--project", PROJECTS[run % 20]]
        samples.append(_command(*argv, stdin=given, env=env))
    return Latency.of(f"mem hook prompt, {what}", samples)


def _command(*argv: str, stdin: str | None = None, env: dict[str, str] | None = None) -> float:
    """Milliseconds the command takes, start-up included."""
    began = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=True, input=stdin, text=True, env=env)
    return (time.perf_counter() - began) * 1000


if __name__ == "__main__":
    raise SystemExit(main())
