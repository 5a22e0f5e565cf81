"""A/B of one recall setting: BM25 beside the matrix product (parallel) or after it.

    .venv/bin/python bench/recall_halves.py [--items 100000] [--queries 200] [--rounds 2]

Builds one synthetic store (by direct SQL, as bench/local_recall.py does past its budget),
then alternates the two settings over the same queries, so that both see the same machine
load, and prints p50/p95 beside the bare numpy floor measured in the same run.
"""

import argparse
import importlib
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import local_recall as bench  # the sibling benchmark: its corpus and bulk loader
from memmesh.local.store import Store

recall_module = importlib.import_module("memmesh.local._recall")


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.95)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    corpus = bench.Corpus(7)
    items = corpus.items(args.items)
    queries = corpus.queries(args.queries)
    timings: dict[bool, list[float]] = {False: [], True: []}
    floor: list[float] = []
    with tempfile.TemporaryDirectory() as home, Store(Path(home)) as store:
        bench.bulk_insert(store, items)
        for query, project in queries[:20]:  # warm-up
            recall_module.recall(store, query, k=10, project=project)
        for _ in range(args.rounds):
            for parallel in (False, True):
                setattr(recall_module, "PARALLEL_HALVES", parallel)  # noqa: B010 (module switch)
                for query, project in queries:
                    started = time.perf_counter()
                    recall_module.recall(store, query, k=10, project=project)
                    timings[parallel].append((time.perf_counter() - started) * 1000)
        matrix = bench.store_matrix(store)
        vectors = [store.embedder.embed_query(query) for query, _ in queries]
        for _ in range(args.rounds):
            for vector in vectors:
                started = time.perf_counter()
                scores = matrix @ vector
                top = np.argpartition(-scores, 9)[:10]
                top[np.argsort(-scores[top])]
                floor.append((time.perf_counter() - started) * 1000)
    floor_p50, floor_p95 = _percentiles(floor)
    print(f"{args.items:,} items, {len(queries)} queries x {args.rounds} rounds")
    for parallel, samples in timings.items():
        p50, p95 = _percentiles(samples)
        name = "parallel" if parallel else "sequential"
        print(f"{name:<11} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms  p50/floor {p50 / floor_p50:5.2f}x")
    print(f"{'floor':<11} p50 {floor_p50:7.2f} ms  p95 {floor_p95:7.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
