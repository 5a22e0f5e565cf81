"""Benchmark of consolidation's report (`mem consolidate` without --apply) on large stores.

Run from the repository root::

    .venv/bin/python bench/consolidate.py                    # 1,000, 10,000 and 100,000 items
    .venv/bin/python bench/consolidate.py --sizes 1000 10000

Each size is a fresh store of generated developer memories (bench/local_recall.py's corpus,
written by its ``bulk_insert``: the default embedder, uneven projects, 15% global). The report
is timed whole and in its parts: the near pairs (the exact blockwise cosine scan,
:mod:`memmesh.local.neighbors`), reading and classifying them
(:mod:`memmesh.consolidate.conflicts`), items past their use and anchored files. The store's
revision and its file's bytes are compared before and after: a report changes nothing. The
goal: a bounded time, at most :data:`FLOOR_S` at 100,000 items on this machine.
"""

import argparse
import hashlib
import tempfile
import time
from pathlib import Path

from _common import cpu_count, cpu_model, load_average, log, source_revision, table
from local_recall import Corpus, bulk_insert
from memmesh.consolidate.conflicts import Statement, classify_statements
from memmesh.consolidate.plan import MIN_CLOSENESS, plan, statement_of
from memmesh.local.aging import aged
from memmesh.local.neighbors import near_pairs
from memmesh.local.store import Store

FLOOR_S = {1_000: 2.0, 10_000: 10.0, 100_000: 120.0}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def measure(size: int, seed: int) -> list[object]:
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder))
        started = time.perf_counter()
        bulk_insert(store, Corpus(seed).items(size))
        log(f"{size:,} items written in {time.perf_counter() - started:.1f} s")
        median, spread = store.embedder.unrelated
        started = time.perf_counter()
        pairs = near_pairs(store, floor=median + MIN_CLOSENESS * spread)
        scan_s = time.perf_counter() - started
        started = time.perf_counter()
        statements: dict[str, Statement] = {}
        for pair in pairs:
            a, b = statement_of(statements, pair.a), statement_of(statements, pair.b)
            classify_statements(a, b, cosine=pair.cosine)
        classify_s = time.perf_counter() - started
        started = time.perf_counter()
        aged(store, half_life_days=90.0)
        aging_s = time.perf_counter() - started
        revision, before = store.revision(), _digest(store.path)
        started = time.perf_counter()
        found = plan(store)
        whole_s = time.perf_counter() - started
        unchanged = store.revision() == revision and _digest(store.path) == before
        store.close()
    floor = FLOOR_S.get(size)
    verdict = "-" if floor is None else ("met" if whole_s <= floor else "MISSED")
    return [
        f"{size:,}", len(pairs), round(scan_s, 2), round(classify_s, 2), round(aging_s, 2),
        round(whole_s, 2), len(found.duplicates), len(found.contradictions), len(found.decay),
        "yes" if unchanged else "NO", floor if floor is not None else "-", verdict,
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rows = [measure(size, args.seed) for size in args.sizes]
    print(f"consolidation report; {cpu_model()}, {cpu_count()} CPUs; load {load_average()}; "
          f"{source_revision()}")  # fmt: skip
    headers = [
        "items", "near pairs", "scan s", "classify s", "aging s", "report s", "dup groups",
        "contradictions", "past use", "unchanged", "floor s", "verdict",
    ]  # fmt: skip
    print(table(headers, rows))


if __name__ == "__main__":
    main()
