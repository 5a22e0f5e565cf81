"""Recall quality through the team path: ``bench/quality.py --team`` (its docstring says what).

Imported lazily by ``quality.py`` (which it imports in turn, for the split, the rows and k);
the processes, members and team.yaml come from ``team_recall.py``.
"""

import contextlib
import secrets
import signal
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import local_recall
import team_recall
from _common import Latency, log, mean, ms_since, table
from memmesh.errors import MemmeshError
from memmesh.local.items import GLOBAL, KINDS
from memmesh.local.store import Store
from memmesh.policy import Policy, decide, load_policy, redact
from memmesh.registry import Identity, load_identity
from memmesh.team.recall import TeamAnswer, recall_team
from quality import TYPES, K, Row, _rows, half_of
from team_recall import (
    PRESENCE_TIMEOUT,
    Member,
    Processes,
    environment,
    new_member,
    publish_and_sync,
    serve_coordinator,
    serve_peer,
    trust_each_other,
    wait_for_presence,
)

RANKING = "team"


@dataclass
class TeamResult:
    """The team, how its facts went in, and the figures per query type."""

    embedder: str
    half: str
    tags: bool
    transport: str  # what the processes speak through
    members: list[dict[str, Any]]
    facts: int
    items: int
    published: int
    refused: int
    private_in_shared: int  # private facts merged into an item holding a shared fact
    setup_seconds: float
    presence_seconds: float
    rows: list[Row]
    leaks: dict[str, int]  # private facts returned, summed over the queries of each type
    asked_by: dict[str, int]
    errors: int  # calls that raised (no source answered)
    sources_asked: float
    sources_answered: float
    dropped: dict[str, int]
    warnings: int
    latency: Latency
    latency_by_type: dict[str, Latency] = field(default_factory=dict)


@dataclass
class Home:
    """One member as this process asks for them, and which facts each of their items holds."""

    member: Member
    store: Store
    policy: Policy
    identity: Identity
    facts_of: dict[str, list[str]]  # item id -> the fact ids remembered into it


def load_member(
    member: Member, facts: Sequence[dict[str, Any]], embedder: str, *, tags: bool
) -> tuple[dict[str, list[str]], int]:
    """The member's own facts remembered as ``mem remember --project P --kind K --tag ...``
    stores them, in file order; the items holding a ``share: true`` fact published (as the
    policy allows) and synced. Returns which facts each item holds, and how many items the
    policy refused."""
    policy = load_policy(member.home)
    facts_of: dict[str, list[str]] = {}
    shared: dict[str, None] = {}
    refused = 0
    with Store(member.home, embedder=embedder, author=member.name) as store:
        for fact in facts:
            clean = redact(fact["text"], fact["tags"] if tags else [])
            item, how = store.remember(
                clean.text, kind=fact["kind"], project=fact["project"], tags=list(clean.tags)
            )
            member.remembered += 1
            member.folded += how == "reinforced"
            facts_of.setdefault(item.id, []).append(fact["id"])
            if not fact["share"]:
                member.private += 1
            elif decide(item, policy).allowed:
                shared[item.id] = None
            else:
                refused += 1
        member.created = len(facts_of)
        publish_and_sync(member, store, policy, list(shared), push=True)
    return facts_of, refused


def asker_of(
    query: dict[str, Any], noise: list[str], owner: dict[str, str], roster: list[str]
) -> str:
    """The first member in roster order who owns none of the expected facts; the noise
    queries (which expect none; ``noise`` in file order) go round the roster."""
    if not query["expect"]:
        return roster[noise.index(query["q"]) % len(roster)]
    owners = {owner[fact_id] for fact_id in query["expect"]}
    return next(name for name in roster if name not in owners)


def hit_facts(answer: TeamAnswer, homes: dict[str, Home]) -> list[set[str]]:
    """The facts each hit stands for: its own item's, and those of the items it merged
    (``also``, when recall-team lists corroborating items)."""
    facts_by_key = {home.member.key_id: home.facts_of for home in homes.values()}
    out: list[set[str]] = []
    for hit in answer.hits:
        held: set[str] = set()
        for item in (hit, *getattr(hit, "also", ())):
            held.update(facts_by_key.get(item.key_id, {}).get(item.id, ()))
        out.append(held)
    return out


def handle(name: str) -> str:
    """A teamdev member's name as a member name (no spaces)."""
    return "-".join(name.split())


@contextlib.contextmanager
def team(
    root: Path, env: dict[str, str], data: dict[str, Any], embedder: str, *, tags: bool
) -> Iterator[tuple[dict[str, Home], dict[str, Any]]]:
    """The coordinator and one peer daemon per member, running, every member's facts in;
    every process is stopped on the way out."""
    processes = Processes(env | {"MEM_EMBEDDER": embedder}, root / "logs")
    setup: dict[str, Any] = {"refused": 0}
    try:
        started = time.perf_counter()
        coordinator = serve_coordinator(processes, "coordinator", root / "coordinator", embedder)
        processes.wait_ready(["coordinator"])
        # teamdev's names, and the member names team.yaml takes ("Priya Raman" -> "Priya-Raman")
        named = {
            m["name"]: new_member(root, handle(m["name"]), coordinator) for m in data["members"]
        }
        members = list(named.values())
        trust_each_other(members)
        facts_of: dict[str, dict[str, list[str]]] = {}
        for name, member in named.items():
            own = [fact for fact in data["facts"] if fact["owner"] == name]
            facts_of[name], refused = load_member(member, own, embedder, tags=tags)
            setup["refused"] += refused
            log(
                f"[team] {member.name}: {member.remembered} facts -> {member.created} items, "
                f"{member.published} published and synced ({member.synced}), "
                f"{member.private} private facts, {refused} refused by the policy"
            )
        for member in members:
            serve_peer(processes, member)
        processes.wait_ready([m.name for m in members])
        setup["setup_seconds"] = time.perf_counter() - started
        setup["members"] = [asdict(m) | {"home": m.home.name} for m in members]
        with contextlib.ExitStack() as stores:
            homes = {
                name: Home(
                    member=m,
                    store=stores.enter_context(Store(m.home, embedder=embedder, author=m.name)),
                    policy=load_policy(m.home),
                    identity=load_identity(m.home),
                    facts_of=facts_of[name],
                )
                for name, m in named.items()
            }
            # The coordinator's list leaves out the asker's own peer: ask as every member.
            waited = time.perf_counter()
            for home in homes.values():
                others = {m.key_id for m in members} - {home.identity.key_id}
                wait_for_presence(home.policy, home.identity, others, PRESENCE_TIMEOUT)
            setup["presence_seconds"] = time.perf_counter() - waited
            log(f"[team] the coordinator lists all {len(members)} peers")
            yield homes, setup
    finally:
        processes.stop_all()


def run_team_path(
    data: dict[str, Any], embedder: str, half: str, *, tags: bool = True
) -> TeamResult:
    """Every query of ``half`` asked through recall-team by a member who owns none of its
    expected facts (see quality.py's docstring)."""
    if unknown := {fact["kind"] for fact in data["facts"]} - set(KINDS):
        raise RuntimeError(f"teamdev uses kinds team.yaml cannot share: {sorted(unknown)}")
    roster = [m["name"] for m in data["members"]]
    owner = {fact["id"]: fact["owner"] for fact in data["facts"]}
    private = {fact["id"] for fact in data["facts"] if not fact["share"]}
    noise = [q["q"] for q in data["queries"] if not q["expect"]]
    project = {fact["id"]: fact["project"] for fact in data["facts"]}
    queries = [q for q in data["queries"] if half in ("all", half_of(q["q"]))]
    # A question nothing answers is asked from every project in turn, as a teammate at work in
    # any of them might ask it; each ask counts. (From global alone it would see only the
    # global facts, where a near neighbour is rarer, and abstain more easily.)
    projects = sorted({fact["project"] for fact in data["facts"]} - {GLOBAL})
    asks = [
        (query, where)
        for query in queries
        for where in ([project[query["expect"][0]]] if query["expect"] else projects)
    ]
    ranks: list[int | None] = []
    abstained: list[bool] = []
    leaked: list[set[str]] = []
    times: list[float] = []
    answers: list[TeamAnswer] = []
    asked_by: Counter[str] = Counter()
    info = team_recall.machine_info()
    previous = signal.signal(signal.SIGTERM, team_recall._terminate)
    try:
        with (
            tempfile.TemporaryDirectory(prefix="memmesh-quality-team-") as folder,
            environment(secrets.token_hex(16)) as env,
            team(Path(folder), env, data, embedder, tags=tags) as (homes, setup),
        ):
            log(f"[team] {len(asks)} asks of {len(queries)} queries, k={K}, each a recall_team"
                " call of its own")  # fmt: skip
            for query, where in asks:
                name = asker_of(query, noise, owner, roster)
                home = homes[name]
                asked_by[name] += 1
                wanted = set(query["expect"])
                started = time.perf_counter()
                try:
                    answer: TeamAnswer | None = recall_team(
                        home.store, home.policy, query["q"], k=K, identity=home.identity,
                        project=where,
                    )  # fmt: skip
                except MemmeshError:
                    answer = None
                times.append(ms_since(started))
                held = hit_facts(answer, homes) if answer is not None else []
                # A hit's label: an expected fact it stands for, if any ("" is no fact id).
                labels = [next(iter(facts & wanted), "") for facts in held]
                ranks.append(local_recall.first_rank(labels, wanted))
                abstained.append(answer is None or answer.abstained)
                leaked.append(set().union(*held) & private)
                if answer is not None:
                    answers.append(answer)
    finally:
        signal.signal(signal.SIGTERM, previous)
    types = [query["type"] for query, _ in asks]
    rows = _rows(RANKING, types, ranks, abstained, [bool(s) for s in leaked])
    mixed = sum(
        sum(fact in private for fact in held)
        for home in homes.values()
        for held in home.facts_of.values()
        if any(fact not in private for fact in held)
    )
    dropped: Counter[str] = Counter()
    for answer in answers:
        dropped.update(answer.dropped)
    by_type = {kind: [t for t, k in zip(times, types, strict=True) if k == kind] for kind in TYPES}
    return TeamResult(
        embedder=embedder,
        half=half,
        tags=tags,
        transport=", ".join(f"{key} {info[key]}" for key in ("httpx", "uvicorn", "os")),
        members=setup["members"],
        facts=len(data["facts"]),
        items=sum(len(home.facts_of) for home in homes.values()),
        published=sum(home.member.published for home in homes.values()),
        refused=setup["refused"],
        private_in_shared=mixed,
        setup_seconds=setup["setup_seconds"],
        presence_seconds=setup["presence_seconds"],
        rows=rows,
        leaks={
            kind: sum(len(s) for s, k in zip(leaked, types, strict=True) if k == kind)
            for kind in TYPES
        },
        asked_by=dict(asked_by),
        errors=len(asks) - len(answers),
        sources_asked=mean([len(a.sources) for a in answers]),
        sources_answered=mean([a.answered for a in answers]),
        dropped=dict(dropped),
        warnings=sum(len(a.warnings) for a in answers),
        latency=Latency.of(f"recall_team -k {K}", times),
        latency_by_type={kind: Latency.of(kind, t) for kind, t in by_type.items() if t},
    )


def print_team(result: TeamResult) -> None:
    stored = "with their tags" if result.tags else "without tags"
    print(
        f"\n== teamdev through the team path, embedder {result.embedder}, half: {result.half}, "
        f"facts {stored}"
    )
    print(
        f"1 coordinator + {len(result.members)} peer daemons (processes on 127.0.0.1); "
        f"{result.facts} facts -> {result.items} items in the members' homes, "
        f"{result.published} published and synced, {result.refused} refused by the policy, "
        f"{result.private_in_shared} private facts merged into a shared item; set up in "
        f"{result.setup_seconds:.1f}s, all peers listed after {result.presence_seconds:.1f}s"
    )
    print(f"transport: plain http, every request signed; {result.transport}")
    print("asked by: " + ", ".join(f"{name} {n}" for name, n in result.asked_by.items()))
    headers = ["type", "queries", "hit@1", "hit@5", "MRR@10", "abstained", "queries leaking",
               "private facts leaked", "p50 ms", "p95 ms"]  # fmt: skip
    rows = []
    for row in result.rows:
        lat = result.latency_by_type.get(row.type)
        rows.append([
            row.type.replace("private_probe", "private probe (not owner)"), row.queries,
            row.hit_at_1, row.hit_at_5, row.mrr, row.abstained, row.private_surfaced,
            result.leaks.get(row.type, sum(result.leaks[t] for t in ("paraphrase", "token"))),
            lat.p50 if lat else None, lat.p95 if lat else None,
        ])  # fmt: skip
    print(table(headers, rows))
    lat = result.latency
    print(
        f"recall_team -k {K}, {lat.n} calls: p50 {lat.p50:.1f} ms, p95 {lat.p95:.1f} ms; "
        f"sources asked {result.sources_asked:.1f}, answered {result.sources_answered:.1f} per "
        f"call; {result.errors} calls failed; hits dropped: {result.dropped or 'none'}; "
        f"{result.warnings} warnings"
    )
