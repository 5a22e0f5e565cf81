"""What explaining and tracing cost: plain, recorded (traced) and explained recalls, alternated.

    .venv/bin/python bench/recall_explain.py [--items 10000] [--queries 200]

Builds one synthetic store (by direct SQL, as bench/local_recall.py does past its budget),
then runs every query three ways in turn - unrecorded, recorded (a journal event and a trace),
explained (unrecorded) - so that all three see the same machine load, and prints p50/p95 of
each. The plain recall's figure is the hot path; the explained one adds the search over every
project and the near misses.
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import local_recall as bench  # the sibling benchmark: its corpus and bulk loader
from memmesh.local import recall
from memmesh.local.store import Store

WAYS = {
    "plain (record=False)": {"record": False},
    "recorded, traced": {"record": True},
    "explained (record=False)": {"record": False, "explain": True},
}


def timings(size: int, count: int) -> dict[str, list[float]]:
    """Milliseconds per recall of each way, over ``count`` queries on ``size`` items."""
    corpus = bench.Corpus(7)
    items, queries = corpus.items(size), corpus.queries(count)
    found: dict[str, list[float]] = {way: [] for way in WAYS}
    with tempfile.TemporaryDirectory() as home, Store(Path(home)) as store:
        bench.bulk_insert(store, items)
        for query, project in queries[:20]:  # warm-up
            recall(store, query, k=10, project=project, record=False, explain=True)
        for query, project in queries:
            for way, options in WAYS.items():
                started = time.perf_counter()
                recall(store, query, k=10, project=project, **options)  # type: ignore[arg-type]
                found[way].append((time.perf_counter() - started) * 1000)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--items", type=int, default=10_000, help="store size (10,000)")
    parser.add_argument("--queries", type=int, default=200, help="queries (200)")
    args = parser.parse_args()
    print(f"{args.items:,} items, {args.queries} queries, k=10, project + global scope")
    for way, samples in timings(args.items, args.queries).items():
        ordered = sorted(samples)
        p50, p95 = statistics.median(ordered), ordered[int(len(ordered) * 0.95)]
        print(f"{way:<26} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
