"""Benchmark of the local page (`mem ui`): the first byte of every page at 100,000 items, and a
search from the page beside the same recall in process.

Run from the repository root::

    .venv/bin/python bench/ui.py                      # 100,000 items, 40 requests per page
    .venv/bin/python bench/ui.py --items 10000 --requests 20

A store of ``--items`` synthetic developer memories is written the way bench/local_recall.py
writes its large stores (remember() for the first thousand, then bulk SQL, vectors from the
store's own embedder), with recalls, outcomes and inbox candidates so that no page is empty;
the member joins a team (a key, a team.yaml sharing gotchas, 200 gotchas published) whose
coordinator is a closed port, so that the team pages do their own work on the whole store.
Then `mem ui` is started for real (a subprocess on a free port, as a user starts it) and each
page is asked ``--requests`` times over one kept-alive connection, signed in with the token it
printed; a page's figure is the time from sending the request to its answer's first byte (the
head and the first chunk of the body), p50 and p95, beside its first request (``first``: the
page's first visit since `mem ui` started, which may fill what later ones reuse). Pages: the
memory list, its second page, a filtered list, an item's page, the inbox, the team's status,
one project's items with their rules, the registry log, the sources, the feed (its
coordinator unreachable) and health.

Search: the same queries are asked from the page (`/?q=...`, the whole answer read) and by
``recall`` in this process on the same store (warm, its lexicon in memory as the page's is),
the same call the page makes for a search without a project (every project, explained, not
recorded), and the page's p50 is divided by the in-process p50. Floors, printed beside the
figures: every page's p95 at most 100 ms; the page's search at most 1.3 times the in-process
recall.
"""

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from _common import cpu_count, cpu_model, load_average, log, source_revision, table
from local_recall import Corpus, bulk_insert, remember_all
from memmesh.local import inbox, listing, recall
from memmesh.local.store import Store
from memmesh.policy.redaction import redact_text

FIRST_BYTE_P95_MS = 100.0
SEARCH_RATIO = 1.3
SEED = 20261205


def fill(home: Path, count: int, rng: random.Random) -> tuple[list[str], list[str]]:
    """A store of ``count`` items with recalls, outcomes and inbox candidates; the ids of its
    items and some queries."""
    corpus = Corpus(SEED)
    items = corpus.items(count)
    queries = [query for query, _ in corpus.queries(60)]
    with Store(home, author="bench") as store:
        _, done = remember_all(store, items[:1000], budget_s=60.0, label="remember")
        _, ids = bulk_insert(store, items[done:])
        for query in queries[:40]:
            recall(store, query, k=5)
        for item_id in rng.sample(ids, 30):
            store.outcome(item_id, rng.choice(("worked", "failed", "partial")))
        proposals = [
            inbox.Proposal(
                f"candidate {n}: restart the worker after editing its env",
                "gotcha",
                source_path="bench/notes.md",
                source_line=n + 1,
            )
            for n in range(20)
        ]
        inbox.propose(store, proposals, redact=redact_text)
        return ids, queries


def join_a_team(home: Path, ids: list[str], rng: random.Random) -> None:
    """Give the member a key and a team.yaml (gotchas shared), and publish 200 gotchas, so that
    the team pages work on the whole store. Its coordinator is a closed port on loopback: what
    is measured is the page's own work, and a source that answers at once that it is not
    there (the pages that ask the team say so and go on)."""

    def mem(*words: str) -> None:
        command = [sys.executable, "-m", "memmesh", "--home", str(home), *words]
        subprocess.run(command, check=True, capture_output=True, timeout=600)

    mem(
        "team",
        "init",
        "--name",
        "bench",
        "--team",
        "acme",
        "--coordinator",
        "http://127.0.0.1:9",
        "--share",
        "gotcha",
    )
    with Store(home, author="bench") as store:
        gotchas = [i for i in rng.sample(ids, 2000) if store.get(i).kind == "gotcha"][:200]
    mem("team", "publish", *gotchas)


def first_byte_ms(client: httpx.Client, path: str) -> float:
    """Milliseconds from sending a GET of ``path`` to the first byte of its body."""
    started = time.perf_counter()
    with client.stream("GET", path) as answer:
        answer.raise_for_status()
        chunks = answer.iter_raw()
        next(chunks)
        elapsed = (time.perf_counter() - started) * 1000
        for _ in chunks:  # the rest, so that the connection is kept for the next request
            pass
    return elapsed


def whole_ms(client: httpx.Client, path: str, params: dict[str, str]) -> float:
    """Milliseconds for the whole answer to a GET of ``path``."""
    started = time.perf_counter()
    client.get(path, params=params).raise_for_status()
    return (time.perf_counter() - started) * 1000


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def start_ui(home: Path) -> tuple["subprocess.Popen[str]", str, str]:
    """`mem ui` for ``home``: its process, its URL and its token."""
    command = [sys.executable, "-m", "memmesh", "--home", str(home), "ui", "--no-browser"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    assert process.stdout is not None
    line = process.stdout.readline()
    address = line.split(": ", 1)[1].strip()
    url, token = address.split("/?token=")
    return process, url, token


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=40)
    args = parser.parse_args(argv)
    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory(prefix="memmesh-bench-ui-") as folder:
        home = Path(folder) / "home"
        log(f"filling a store of {args.items:,} items")
        ids, queries = fill(home, args.items, rng)
        join_a_team(home, ids, rng)
        with Store(home, author="bench", lexicon=True) as store:
            # The recall the page runs for a search without a project: every project, explained.
            scope = listing.projects(store)
            recall(store, queries[0], k=10, scope=scope, explain=True, record=False)
            local = []
            for query in queries:
                started = time.perf_counter()
                recall(store, query, k=10, scope=scope, explain=True, record=False)
                local.append((time.perf_counter() - started) * 1000)
        process, url, token = start_ui(home)
        try:
            rows, verdicts = measure(url, token, ids, queries, args.requests, local)
        finally:
            process.terminate()
            process.wait(timeout=30)
    print(
        f"mem ui at {args.items:,} items, {args.requests} requests a page; {cpu_model()}, "
        f"{cpu_count()}; Python {sys.version.split()[0]}; load {load_average()}; "
        f"{source_revision()}"
    )
    print(table(["page", "first ms", "p50 ms", "p95 ms", "floor p95 ms"], rows))
    print("\n".join(verdicts))
    return 0


def measure(
    url: str, token: str, ids: list[str], queries: list[str], requests: int, local: list[float]
) -> tuple[list[list[object]], list[str]]:
    pages = {
        "memory": "/",
        "memory, page 2": None,
        "memory, kind filter": "/?kind=gotcha",
        "an item": f"/items/{ids[len(ids) // 2]}",
        "inbox": "/inbox",
        "team": "/team",
        "team, a project's items": "/team?project=billing",
        "team: log": "/team/log",
        "team: sources": "/team/sources",
        "team: feed (unreachable)": "/team/feed",
        "health": "/health",
    }
    rows: list[list[object]] = []
    verdicts = []
    with httpx.Client(base_url=url, cookies={"memmesh_ui": token}, timeout=60) as client:
        first = client.get("/")
        first.raise_for_status()
        pages["memory, page 2"] = _second_page(first.text) or "/"
        for name, path in pages.items():
            assert path is not None
            cold = first_byte_ms(client, path)
            times = [first_byte_ms(client, path) for _ in range(requests)]
            p95 = percentile(times, 0.95)
            rows.append(
                [
                    name,
                    round(cold, 1),
                    round(statistics.median(times), 1),
                    round(p95, 1),
                    FIRST_BYTE_P95_MS,
                ]
            )
            met = "met" if p95 <= FIRST_BYTE_P95_MS else "MISSED"
            verdicts.append(
                f"{name}: first byte p95 {p95:.1f} ms <= {FIRST_BYTE_P95_MS:.0f}: {met}"
            )
        whole_ms(client, "/", {"q": queries[0]})
        page_search = [whole_ms(client, "/", {"q": query}) for query in queries]
    ratio = statistics.median(page_search) / statistics.median(local)
    rows.append(
        [
            "search from the page",
            "-",
            round(statistics.median(page_search), 1),
            round(percentile(page_search, 0.95), 1),
            "-",
        ]
    )
    rows.append(
        [
            "recall in process",
            "-",
            round(statistics.median(local), 1),
            round(percentile(local, 0.95), 1),
            "-",
        ]
    )
    met = "met" if ratio <= SEARCH_RATIO else "MISSED"
    verdicts.append(f"search from the page / in process, p50: {ratio:.2f} <= {SEARCH_RATIO}: {met}")
    return rows, verdicts


def _second_page(html: str) -> str | None:
    """The link to the memory list's next page in ``html``."""
    marker = 'rel="next"'
    at = html.find(marker)
    if at < 0:
        return None
    start = html.rfind('href="', 0, at + 200)
    if start < 0:
        return None
    end = html.find('"', start + 6)
    return html[start + 6 : end].replace("&amp;", "&")


if __name__ == "__main__":
    raise SystemExit(main())
