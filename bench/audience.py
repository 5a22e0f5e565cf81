"""Benchmark of the audience check: what serving a caller only what it may read costs a search.

Run from the repository root::

    .venv/bin/python bench/audience.py                         # 10,000 items, 200 queries
    .venv/bin/python bench/audience.py --items 10000 --queries 300 --json out.json

A coordinator on a SQLite file in a temporary folder, in this process (no HTTP: the check is
what is measured, and the HTTP floor is bench/coordinator.py's), with a signed roster of the
six members of bench/coordinator.py (ada its first admin) and two groups of three, ``backend``
(the asker, bruno, among them) and ``frontend``. The ``--items`` synthetic memories of
bench/coordinator.py's corpus, each with its vector from the coordinator's embedder, are
published by their members through ``Coordinator.publish`` into two teams:

* ``open``: no item has an audience and no project has a read grant (every team before
  audiences): the check finds nothing restricted.
* ``groups``: every other item is for one of the two groups, in turn: a quarter of the items is
  for ``frontend``, which the asker may not read.

Each query of the corpus (k=15, one project with ``global``, the query's vector from the team's
embedder, as a member's ``mem team recall-team`` asks) is asked by bruno, timed per call:

* ``no check``: ``Coordinator.search`` as it was before audiences: every copy a candidate,
  every live publication served and noted in the disclosure log;
* ``search``: ``Coordinator.search``, the check included, asked again with nothing changed
  (the copies bruno may be served are kept between searches);
* ``no check, after a publication``, ``search, after a publication``: the same two, with one
  more item published (untimed) before each call: the feed's head moved, so the store's index
  takes in the new row and, with the check, bruno's kept copies take in the rows changed;
* ``check``: :meth:`Searchable.copies` alone, as ``search`` calls it;
* ``check, new process``: the same on a new :class:`Searchable` each time (what the first
  search of a process pays: every live publication read).

Medians and 95th percentiles in milliseconds; ``added`` is the median of ``search`` minus that
of ``no check``, and ``added after a publication`` the same after a publication.
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np

from _common import cpu_count, cpu_model, git, log, table
from coordinator import MEMBERS, SEED, TEAM, Corpus, Memory, Query, team_embedder
from memmesh.coordinator import Coordinator, _tables
from memmesh.coordinator._searchable import Searchable
from memmesh.coordinator.bootstrap import admin_join_code
from memmesh.coordinator.protocol import (
    JoinRequest,
    PublishItem,
    PublishRequest,
    StatementsRequest,
)
from memmesh.embed import Embedder, Vectors
from memmesh.local.ids import new_id
from memmesh.net.search import SearchRequest, answer_search
from memmesh.net.signing import Caller
from memmesh.net.wire import MAX_BATCH
from memmesh.registry import roster_chain as chain
from memmesh.registry.envelopes import (
    FORMAT_VERSION,
    Audience,
    Envelope,
    Publication,
    seal,
    text_hash,
)
from memmesh.registry.identity import Identity, create_identity

K = 15
GROUPS = {"backend": ("ada", "bruno", "chioma"), "frontend": ("dmitri", "esra", "farid")}
ASKER = "bruno"
TEAMS = ("open", "groups")


def _caller(identity: Identity) -> Caller:
    return Caller(key=identity.public_key_text, key_id=identity.key_id)


def _start_roster(coordinator: Coordinator, folder: Path, people: dict[str, Identity]) -> None:
    """The signed roster: ada's genesis with the bootstrap code, then every other member and
    the two groups, as ada signs them."""
    ada = people["ada"]
    code = admin_join_code(
        coordinator.membership, folder, url="http://127.0.0.1:1", pin=None, name="ada"
    )
    assert code is not None
    genesis = chain.genesis(ada, TEAM, name="ada")
    coordinator.membership.join(_caller(ada), JoinRequest(secret=code.secret, genesis=genesis))
    state = chain.verify_chain([genesis], root_key_id=ada.key_id, team=TEAM)
    statements = []
    for name, identity in people.items():
        if name != "ada":
            statements.append(chain.add(state, ada, key=identity.public_key_text, name=name))
            state = chain.extend(state, statements[-1])
    for group, names in GROUPS.items():
        ids = [people[name].key_id for name in names]
        statements.append(chain.group(state, ada, name=group, add=ids))
        state = chain.extend(state, statements[-1])
    coordinator.membership.signed.statements(_caller(ada), StatementsRequest(statements=statements))


def _publish(
    coordinator: Coordinator,
    memories: Sequence[Memory],
    vectors: Vectors,
    people: list[Identity],
    restricted: bool,
) -> None:
    """Each memory published by its member; with ``restricted``, every other one for a group."""
    seqs = [0] * len(people)
    batches: dict[int, list[PublishItem]] = {}
    now = time.time()
    for index, memory in enumerate(memories):
        author = people[memory.member]
        seqs[memory.member] += 1
        audience = None
        if restricted and index % 2:
            audience = Audience.of([tuple(GROUPS)[(index // 2) % 2]])
        body = Publication(
            format=FORMAT_VERSION,
            team=TEAM,
            item_id=new_id(now - index),
            version=1,
            author_key=author.public_key_text,
            key_id=author.key_id,
            seq=seqs[memory.member],
            author=MEMBERS[memory.member],
            published_at=now - index,
            text=memory.text,
            kind=memory.kind,
            project=memory.project,
            tags=memory.tags,
            content_hash=text_hash(memory.text),
            embedder=coordinator.store.embedder.fingerprint,
            audience=audience,
        )
        item = PublishItem(envelope=seal(body, author), vector=vectors[index].tolist())
        batch = batches.setdefault(memory.member, [])
        batch.append(item)
        if len(batch) == MAX_BATCH:
            coordinator.publish(_caller(author), PublishRequest(items=batch))
            batches[memory.member] = []
    for member, batch in batches.items():
        if batch:
            coordinator.publish(_caller(people[member]), PublishRequest(items=batch))


def _unchecked(coordinator: Coordinator, caller: Caller, request: SearchRequest) -> object:
    """``Coordinator.search`` as it was before audiences: every copy a candidate, every live
    publication served, and noted in the disclosure log."""
    served: dict[Envelope, tuple[str, str]] = {}

    def publications(copy_ids: list[str]) -> dict[str, Envelope]:
        with coordinator.store.read() as tx:
            live = _tables.live_publications(tx, copy_ids)
        served.update((pub.envelope, (pub.author_key, pub.item_id)) for pub in live.values())
        return {copy: pub.envelope for copy, pub in live.items()}

    answer = answer_search(coordinator.store.cache, request, publications)
    coordinator._disclosed.record(caller.key, [served[hit.envelope] for hit in answer.hits])
    return answer


def _timings(
    calls: Sequence[Callable[[], object]], *, before: Callable[[], object] | None = None
) -> list[float]:
    """Milliseconds each call takes; ``before`` (untimed) runs before each."""
    spent = []
    for call in calls:
        if before is not None:
            before()
        started = time.perf_counter()
        call()
        spent.append((time.perf_counter() - started) * 1000)
    return spent


def _figures(spent: list[float]) -> dict[str, float]:
    ordered = sorted(spent)
    return {
        "median_ms": statistics.median(ordered),
        "p95_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))],
    }


def _measure(
    coordinator: Coordinator,
    asker: Identity,
    author: Identity,
    queries: Sequence[Query],
    embedder: Embedder,
) -> dict[str, dict[str, float]]:
    caller = _caller(asker)
    requests = [
        SearchRequest(
            query=query.text,
            k=K,
            project=query.project,
            vector=embedder.embed_query(query.text).tolist(),
            embedder=embedder.fingerprint,
        )
        for query in queries
    ]
    for request in requests:  # warm-up: indexes, encoder, the kept copies
        coordinator.search(caller, request)
    searchable = coordinator.searchable
    fresh = [Searchable(coordinator.store, coordinator.audiences.gate) for _ in requests]
    found = {
        "no check": _timings([partial(_unchecked, coordinator, caller, r) for r in requests]),
        "search": _timings([partial(coordinator.search, caller, r) for r in requests]),
        "no check, after a publication": _timings(
            [partial(_unchecked, coordinator, caller, r) for r in requests],
            before=partial(_publish_one, coordinator, author, embedder),
        ),
        "search, after a publication": _timings(
            [partial(coordinator.search, caller, r) for r in requests],
            before=partial(_publish_one, coordinator, author, embedder),
        ),
        "check": _timings([partial(searchable.copies, caller, r) for r in requests]),
        "check, new process": _timings(
            [partial(f.copies, caller, r) for f, r in zip(fresh, requests, strict=True)]
        ),
    }
    return {name: _figures(spent) for name, spent in found.items()}


def _publish_one(coordinator: Coordinator, author: Identity, embedder: Embedder) -> None:
    """One more team-wide item by ``author``: the feed's head moves."""
    now = time.time()
    text = f"The bench note {now!r} says nothing of interest"
    body = Publication(
        format=FORMAT_VERSION,
        team=TEAM,
        item_id=new_id(now),
        version=1,
        author_key=author.public_key_text,
        key_id=author.key_id,
        seq=int(now * 1e6),
        author="ada",
        published_at=now,
        text=text,
        kind="fact",
        project="global",
        tags=(),
        content_hash=text_hash(text),
        embedder=embedder.fingerprint,
    )
    item = PublishItem(envelope=seal(body, author), vector=embedder.embed([text])[0].tolist())
    coordinator.publish(_caller(author), PublishRequest(items=[item]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=10_000, help="items published (10000)")
    parser.add_argument("--queries", type=int, default=200, help="queries timed (200)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)

    corpus = Corpus(SEED)
    memories = corpus.memories(args.items)
    queries = corpus.queries(args.queries)
    embedder = team_embedder()
    log(f"embedding {args.items:,} memories with {embedder.name}")
    vectors = np.concatenate(
        [
            embedder.embed([m.text for m in memories[i : i + 2000]])
            for i in range(0, len(memories), 2000)
        ]
    )
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="memmesh-bench-audience-") as work:
        root = Path(work)
        people = {name: create_identity(root / "keys" / name) for name in MEMBERS}
        for team in TEAMS:
            folder = root / team
            coordinator = Coordinator(folder, team=TEAM, embedder=embedder.name)
            try:
                _start_roster(coordinator, folder, people)
                log(f"{team}: publishing {args.items:,} items")
                _publish(coordinator, memories, vectors, list(people.values()), team == "groups")
                log(f"{team}: timing {len(queries)} searches")
                asking = (people[ASKER], people["ada"])
                results[team] = _measure(coordinator, *asking, queries, embedder)
            finally:
                coordinator.close()

    names = tuple(results[TEAMS[0]])
    rows = []
    for team in TEAMS:
        figures = results[team]
        added = [
            figures[f"search{after}"]["median_ms"] - figures[f"no check{after}"]["median_ms"]
            for after in ("", ", after a publication")
        ]
        rows.append(
            [team]
            + [f"{figures[n]['median_ms']:.2f} / {figures[n]['p95_ms']:.2f}" for n in names]
            + [f"{cost:+.2f}" for cost in added]
        )
    print(f"memmesh audience check, {args.items:,} items, {len(queries)} queries, k={K}")
    print(f"machine: {cpu_model()}, {cpu_count()}; commit {git('rev-parse', '--short', 'HEAD')}")
    print("median / p95 ms per call")
    print(table(["team", *names, "added", "added after a publication"], rows))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
