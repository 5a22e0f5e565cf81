"""Teammates who say otherwise: which items by different authors contradict each other, found
among hundreds without comparing every pair, and never among one author's own items."""

import json
import random
from pathlib import Path

import pytest

from memmesh.consolidate import conflicts
from memmesh.team._overlap import candidate, candidates, reading
from memmesh.team.contradictions import Said, contradicting, otherwise

PAIRS = Path(__file__).resolve().parents[2] / "bench" / "data" / "pairs.json"
REDIS = "we use Redis locks for the job queue"
POSTGRES = "we use Postgres advisory locks for the job queue"
RETRIES = "the job queue retries a failed job with exponential backoff"

SERVICES = ["billing", "search", "checkout", "ledger", "mailer", "auth", "reports", "catalog"]
TOOLS = ["Redis", "Postgres", "Kafka", "RabbitMQ", "etcd"]
TEMPLATES = [
    "the {svc} webhook timeout is {n} seconds",
    "we use {tool} locks for the {svc} job queue",
    "the {svc} service retries failed jobs {n} times",
    "{svc} deploys to production need {n} approvals",
    "the {svc} dashboard shows error rates per {svc2} region",
    "{tool} backs the {svc} cache and the {svc2} sessions",
]


def _said(key: str, n: int, text: str, project: str = "global") -> Said:
    return Said(key_id=key, author=key, item_id=f"{key}-{n:04d}", text=text, project=project)


def _texts(rng: random.Random, count: int) -> list[str]:
    texts = []
    for _ in range(count):
        template = rng.choice(TEMPLATES)
        texts.append(
            template.format(
                svc=rng.choice(SERVICES), svc2=rng.choice(SERVICES), tool=rng.choice(TOOLS),
                n=rng.choice([2, 3, 5, 30, 60]),
            )
        )  # fmt: skip
    return texts


def test_two_authors_contradicting_each_say_otherwise_of_the_other() -> None:
    items = [_said("ada", 1, REDIS), _said("bob", 2, POSTGRES), _said("carol", 3, RETRIES)]

    flags = otherwise(items)

    assert [[(o.author, o.item_id, o.text) for o in f] for f in flags] == [
        [("bob", "bob-0002", POSTGRES)],
        [("ada", "ada-0001", REDIS)],
        [],
    ]
    assert flags[0][0].reason == "locks job queue: redis locks against postgres advisory locks"
    assert flags[1][0].reason == "locks job queue: postgres advisory locks against redis locks"


def test_one_author_s_own_contradiction_is_not_flagged() -> None:
    items = [_said("ada", 1, REDIS), _said("ada", 2, POSTGRES)]
    assert otherwise(items) == [[], []]


def test_pairs_a_predicate_keeps_apart_are_not_compared() -> None:
    items = [_said("ada", 1, REDIS, "shop"), _said("bob", 2, POSTGRES, "blog")]
    flags = otherwise(items, together=lambda a, b: a.project == b.project)
    assert flags == [[], []]


def test_the_index_finds_every_pair_worth_comparing() -> None:
    rng = random.Random(5)
    vocabulary = [*"alpha beta gamma delta epsilon zeta theta kappa lambda sigma".split(), "3"]

    def texts(count: int) -> list[str]:
        return [" ".join(rng.choices(vocabulary, k=rng.randint(1, 7))) for _ in range(count)]

    left = [reading(text) for text in texts(150)]
    right = [reading(text) for text in texts(250)]
    every = [
        (i, j)
        for i, a in enumerate(left)
        for j, b in enumerate(right)
        if candidate(a, b)
    ]  # fmt: skip

    assert candidates(left, right) == every
    assert 50 < len(every) < len(left) * len(right) // 2  # neither nothing nor everything


@pytest.mark.parametrize(
    ("a", "b", "worth"),
    [
        (REDIS, POSTGRES, True),  # a choice of a few words in one place
        ("the webhook timeout is 30 seconds", "the webhook timeout is 60 seconds", True),
        ("we deploy on Fridays", "we never deploy on Fridays", True),
        ("the pool size for orders is 20", "orders use a pool of 50", True),  # one word each
        (REDIS, RETRIES, False),
        (
            "For the billing service we chose nightly backups",
            "For the search service we chose hourly backups",
            False,  # two places differ
        ),
        ("Redis", "Postgres", False),  # nothing left in common
    ],
)
def test_pairs_worth_the_rules_time(a: str, b: str, worth: bool) -> None:
    assert candidate(reading(a), reading(b)) is worth


def test_every_labelled_contradiction_is_worth_the_rules_time() -> None:
    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))
    contradicting = [
        (p["a"], p["b"])
        for p in pairs
        if conflicts.classify(p["a"], p["b"]).relation == "contradicts"
    ]
    assert len(contradicting) > 50
    assert [(a, b) for a, b in contradicting if not candidate(reading(a), reading(b))] == []


def test_hundreds_of_items_give_what_comparing_every_pair_gives() -> None:
    rng = random.Random(11)
    projects = ["shop", "blog", "global"]
    own = [_said("ada", n, text, rng.choice(projects)) for n, text in enumerate(_texts(rng, 200))]
    theirs = [
        _said(rng.choice(["bob", "carol", "ada"]), n, text, rng.choice(projects))
        for n, text in enumerate(_texts(rng, 400))
    ]

    def together(a: Said, b: Said) -> bool:
        return a.project == b.project or "global" in (a.project, b.project)

    found = contradicting(own, theirs)

    read = {s.text: conflicts.Statement(s.text) for s in (*own, *theirs)}
    expected = [
        [
            b.item_id
            for b in theirs
            if b.key_id != a.key_id
            and together(a, b)
            and conflicts.classify_statements(read[a.text], read[b.text]).relation == "contradicts"
        ]
        for a in own
    ]
    assert [sorted(o.item_id for o in f) for f in found] == [sorted(e) for e in expected]
    flagged = sum(map(len, expected))
    assert flagged > 50  # the corpus holds many contradictions, and many more mere neighbours
    assert all(o.author != "ada" for f in found for o in f)
