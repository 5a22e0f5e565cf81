"""Benchmark of how long `mem` takes to start and answer, whole process, beside Python's own.

Run from the repository root::

    .venv/bin/python bench/startup.py               # 30 runs of each command, 50 items
    .venv/bin/python bench/startup.py --runs 60 --items 200
    .venv/bin/python bench/startup.py --before /tmp/old/src   # beside an earlier tree's src/

A fresh temporary folder is made the home of every run (``HOME`` and ``MEM_HOME``, with no
other ``MEM_*`` variable, so the default embedder is measured); ``--items`` facts are
remembered first through ``Store.remember`` (the path `mem remember` takes), all global; the
commands run in that folder, outside any git repository, so they see the global project.
``PYTHONDONTWRITEBYTECODE`` is left out, so that the untimed round writes the modules'
bytecode as an installed package has it: no run pays for compiling a module it imports
(``PYTHONPATH`` too, which only ``--before`` sets). With ``--before DIR`` (a copy of an
earlier tree's ``src/``), every `mem` command is also run from that copy (``PYTHONPATH=DIR``),
named "... (before)": a before and after measured under the same load. Then each command
below runs ``--runs`` times as a real subprocess of this interpreter, the commands taken in
turn on every round, so that a change in the machine's load falls on all of them alike (one
round first, untimed, warms the file cache and writes the bytecode):

* ``python -c pass`` and ``python -I -c pass``: the floor, the same interpreter as `mem`
  (a virtualenv's ``python -c pass`` also reads its site-packages' ``.pth`` files, the
  editable install's among them; ``-I`` leaves the user's site and environment out);
* ``mem --version``, ``mem --help``: start-up and the parser;
* ``mem recall QUERY``, ``mem list``, ``mem remember TEXT`` (a new text each run) on the
  small store.

Printed: the median (p50) and p95 of each, what the median is above ``python -c pass``, the
median CPU time (user and system, all threads: less moved by other processes on a shared
machine than wall time is), the goal where there is one, and a verdict line. The goals are
whole-process medians set on a machine whose ``python -c pass`` took 12 ms: ``mem --version``
at most 50 ms, ``mem recall`` on a small store at most 120 ms.
"""

import argparse
import itertools
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _common import Latency, cpu_count, cpu_model, load_average, log, source_revision, table
from memmesh.local.store import Store

GOALS_MS = {"mem --version": 50.0, "mem recall QUERY": 120.0}
QUERY = "how do we retry the webhook queue after a staging deploy"
KINDS = ("decision", "convention", "gotcha", "command", "incident", "fact")
WORDS = (
    "deploy staging cache migration webhook retry queue schema index token build test lint "
    "docker kubernetes postgres redis billing invoice auth session cron backup restore alert"
).split()
# Numbers each `mem remember`'s text, so that no run reinforces another's item.
_SERIAL = itertools.count()
# Each command's longest run: a run past it stops the benchmark rather than hang it.
TIMEOUT_S = 60


def fill(home: Path, count: int, rng: random.Random) -> None:
    """``count`` facts in a new store at ``home``, remembered as `mem remember` does."""
    with Store(home, author="bench") as store:
        for n in range(count):
            words = " ".join(rng.choice(WORDS) for _ in range(10))
            store.remember(f"Item {n}: {words}", kind=rng.choice(KINDS), project="global")


def commands(python: str, mem: str) -> dict[str, list[str]]:
    """What is timed, by its name in the table."""
    return {
        "python -c pass": [python, "-c", "pass"],
        "python -I -c pass": [python, "-I", "-c", "pass"],
        "mem --version": [mem, "--version"],
        "mem --help": [mem, "--help"],
        "mem recall QUERY": [mem, "recall", "--", QUERY],
        "mem list": [mem, "list"],
        "mem remember TEXT": [mem, "remember", "--global", "--"],
    }


def with_before(
    timed: dict[str, list[str]], before: Path | None
) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Each of ``timed`` with the variables it runs with beyond the common ones: none, and
    with ``before`` each `mem` command again, from that tree (``PYTHONPATH``)."""
    out: dict[str, tuple[list[str], dict[str, str]]] = {
        name: (argv, {}) for name, argv in timed.items()
    }
    if before is not None:
        out |= {
            f"{name} (before)": (argv, {"PYTHONPATH": str(before)})
            for name, argv in timed.items()
            if name.startswith("mem ")
        }
    return out


def run(argv: Sequence[str], env: dict[str, str], cwd: str, round_: int) -> tuple[float, float]:
    """Milliseconds one run of ``argv`` in ``cwd`` takes, start-up included, and the CPU time
    it used (user and system, every thread); it must succeed."""
    if argv[-1] == "--":  # `mem remember`: a text of its own each run, so each one is new
        word = WORDS[round_ % len(WORDS)]
        argv = [*argv, f"Run {next(_SERIAL)} of round {round_}: the {word} step needs a retry"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(
        argv, capture_output=True, cwd=cwd, env=env, timeout=TIMEOUT_S, check=False
    )
    took = (time.perf_counter() - began) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode(errors='replace')}")
    return took, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="runs of each command")
    parser.add_argument("--items", type=int, default=50, help="items in the store")
    parser.add_argument(
        "--before", type=Path, metavar="DIR", help="also run each `mem` command from this src/"
    )
    args = parser.parse_args()
    python = sys.executable
    mem = str(Path(python).with_name("mem"))
    before = args.before.resolve() if args.before else None
    if before is not None and not (before / "memmesh" / "__init__.py").is_file():
        parser.error(f"{before} holds no memmesh package")
    timed = with_before(commands(python, mem), before)
    with tempfile.TemporaryDirectory(prefix="memmesh-startup-") as folder:
        home = Path(folder) / "home"
        fill(home, args.items, random.Random(7))
        env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith("MEM_") and name not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")
        }
        env |= {"HOME": folder, "MEM_HOME": str(home)}
        for argv, extra in timed.values():  # warm the file cache, write bytecode; not timed
            run(argv, env | extra, folder, -1)
        samples: dict[str, list[float]] = {name: [] for name in timed}
        cpu: dict[str, list[float]] = {name: [] for name in timed}
        for round_ in range(args.runs):
            for name, (argv, extra) in timed.items():
                took, used = run(argv, env | extra, folder, round_)
                samples[name].append(took)
                cpu[name].append(used)
            if round_ and round_ % 10 == 0:
                log(f"  {round_} rounds")
    latencies = {name: Latency.of(name, values) for name, values in samples.items()}
    floor = latencies["python -c pass"].p50
    print(
        f"mem start-up, {args.items} items, {args.runs} runs; {cpu_model()}, {cpu_count()} CPUs; "
        f"Python {sys.version.split()[0]} ({python}); load {load_average()}; {source_revision()}"
        + (f"; before: {before}" if before else "")
    )
    rows = [
        [
            x.what,
            x.n,
            x.p50,
            x.p95,
            x.p50 - floor,
            statistics.median(cpu[x.what]),
            GOALS_MS.get(x.what),
        ]
        for x in latencies.values()
    ]
    headers = ["what (whole process)", "runs", "p50 ms", "p95 ms", "p50 - floor", "cpu p50", "goal"]
    print(table(headers, rows))
    print(verdict(latencies, floor))
    return 0


def verdict(latencies: dict[str, Latency], floor: float) -> str:
    """Each goal met or not by its median, with the floor of this run beside it."""
    parts = []
    for name, goal in GOALS_MS.items():
        p50 = latencies[name].p50
        parts.append(f"{name} {p50:.1f} ms <= {goal:.0f} ms: {'met' if p50 <= goal else 'MISSED'}")
    return f"verdict (floor `python -c pass` {floor:.1f} ms): " + "; ".join(parts)


if __name__ == "__main__":
    raise SystemExit(main())
