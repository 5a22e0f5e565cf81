"""Benchmark of `mem export` and `mem import` at size: 100,000 items out of a store and in.

Run from the repository root::

    .venv/bin/python bench/transfer.py                  # 100,000 items, the default embedder
    .venv/bin/python bench/transfer.py --items 10000 --embedder hashing

A synthetic export of N items (mixed kinds, projects, tags, outcome counts, one in ten a
superseded revision, one in twenty archived) is imported into an empty store (embedding every
text with the store's embedder), the store is exported again, that export is imported into
a second fresh home, and imported there once more (nothing new: the idempotent pass). Each
step is timed in this process through the same functions the commands call (with the secret
screen `mem import` applies); the two stores are then compared field by field. The goal:
export and import each under 60 s at 100k.
"""

import argparse
import json
import random
import sqlite3
import tempfile
import time
from pathlib import Path

from _common import cpu_count, cpu_model, load_average, log, source_revision, table
from memmesh.cli._transfer import screen
from memmesh.local.items import KINDS
from memmesh.local.store import Store
from memmesh.local.transfer import FORMAT, VERSION, export_lines, import_file

_WORDS = (
    "cache deploy webhook retry billing token queue index migration schema worker timeout "
    "shard replica lock backoff config secret cron alert pager build release docker node"
).split()
_FIELDS = (
    "id, text, kind, project, tags, author, created_at, updated_at, reinforcements, worked, "
    "failed, partial, outcomes_at, status, superseded_by, supersedes"
)


def _synthetic(path: Path, count: int, seed: int) -> None:
    """An export of ``count`` items in the format `mem export` writes."""
    rng = random.Random(seed)
    start = 1_750_000_000.0
    with path.open("w", encoding="utf-8") as out:
        header = {"format": FORMAT, "version": VERSION, "items": count}
        out.write(json.dumps(header) + "\n")
        for n in range(count):
            words = " ".join(rng.choices(_WORDS, k=rng.randint(6, 18)))
            superseded = n % 10 == 1
            record = {
                "id": f"01JBENCH{n:018d}", "text": f"{words} (note {n})",
                "kind": KINDS[n % len(KINDS)], "project": f"p{n % 20}",
                "tags": sorted(set(rng.choices(["ci", "db", "ops", "py"], k=2))),
                "author": "bench", "status": "archived" if n % 20 == 3 else "active",
                "created_at": start + n, "updated_at": start + n + 5,
                "reinforcements": n % 4, "worked": float(n % 3), "failed": float(n % 2),
                "partial": 0.0, "outcomes_at": start + n + 5 if n % 5 else None,
                "supersedes": f"01JBENCH{n - 1:018d}" if n % 10 == 2 else None,
                "superseded_by": f"01JBENCH{n + 1:018d}" if superseded else None,
            }  # fmt: skip
            if superseded:
                record["status"] = "superseded"
            out.write(json.dumps(record) + "\n")


def _rows(home: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(home / "memory.db")
    try:
        return conn.execute(f"SELECT {_FIELDS} FROM items ORDER BY seq").fetchall()
    finally:
        conn.close()


def _seconds(started: float) -> float:
    return round(time.perf_counter() - started, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--embedder", default=None, help="default: the store's default")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    log(f"load average before: {load_average()}")
    with tempfile.TemporaryDirectory(prefix="transfer-bench-") as tmp:
        root = Path(tmp)
        source = root / "synthetic.jsonl"
        _synthetic(source, args.items, args.seed)
        rows: list[list[object]] = []
        with Store(root / "a", embedder=args.embedder, author="bench") as first:
            started = time.perf_counter()
            done = import_file(first, source, screen=screen)
            rows.append(["import into an empty store", len(done.created), _seconds(started)])
            started = time.perf_counter()
            out = root / "export.jsonl"
            with out.open("w", encoding="utf-8") as handle:
                for line in export_lines(first):
                    handle.write(line + "\n")
            size = out.stat().st_size
            rows.append([f"export ({size / 1e6:.1f} MB)", args.items, _seconds(started)])
            embedder = first.embedder.fingerprint
        with Store(root / "b", embedder=args.embedder, author="other") as second:
            started = time.perf_counter()
            done = import_file(second, out, screen=screen)
            rows.append(["import of the export, fresh home", len(done.created), _seconds(started)])
            started = time.perf_counter()
            again = import_file(second, out, screen=screen)
            rows.append(["import again (nothing new)", len(again.skipped), _seconds(started)])
        same = _rows(root / "a") == _rows(root / "b")
    print(f"transfer of {args.items:,} items, embedder {embedder}")
    print(f"machine: {cpu_model()}, {cpu_count()} CPUs; source {source_revision()}")
    print(table(["step", "items", "seconds"], rows))
    print(f"every field of every item the same after the round trip: {same}")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
