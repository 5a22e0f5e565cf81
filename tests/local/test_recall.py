"""Hybrid recall over a real store: relevance, abstention, scope, odd queries and the journal."""

import sqlite3

import pytest

from memmesh.embed import closeness
from memmesh.local._fulltext import fts_query
from memmesh.local._recall import MAX_K, MIN_CLOSENESS, Mode, Recall, recall
from memmesh.local.errors import InvalidInput
from memmesh.local.items import Item
from memmesh.local.store import Store

FACTS = [
    "The billing service retries webhooks 5 times with exponential backoff",
    "Run database migrations with make migrate before starting the API server",
    "Use pnpm, not npm, in the frontend monorepo",
    "The staging cluster is deployed from the release branch every night at 02:00 UTC",
    "Integration tests need a local Postgres 15 on port 5433",
    "Feature flags live in config/flags.yaml and are reloaded without a restart",
    "Never commit .env files; secrets come from Vault in CI",
    "The auth service signs JWTs with RS256 and rotates keys monthly",
    "Log lines must be structured JSON with a request_id field",
    "The search index is rebuilt by the reindex-search cron job on Sundays",
    "Python code is formatted with ruff format and checked with mypy strict",
    "The mobile app talks to the API through the GraphQL gateway, never directly",
    "Redis is used for rate limiting, with a limit of 100 requests per minute per token",
    "Docker images are built on the ubuntu 22.04 base and pushed to ghcr.io",
    "Error E1234 from the payment provider means the card was declined by the issuer",
]


@pytest.fixture
def facts(store: Store) -> dict[str, Item]:
    """The store filled with realistic developer facts, keyed by text."""
    return {text: store.remember(text)[0] for text in FACTS}


def ids(result: Recall) -> list[str]:
    return [hit.item.id for hit in result.hits]


def recall_events(store: Store) -> int:
    conn = sqlite3.connect(store.path)
    try:
        (count,) = conn.execute("SELECT count(*) FROM events WHERE kind = 'recall'").fetchone()
    finally:
        conn.close()
    return int(count)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("how many times are webhooks retried", FACTS[0]),
        ("how do I run migrations", FACTS[1]),
        ("what port does postgres use for tests", FACTS[4]),
        ("where do feature flags live", FACTS[5]),
        ("rate limit", FACTS[12]),
        ("when is the search index rebuilt", FACTS[9]),
    ],
)
def test_recall_finds_the_relevant_item_first(
    store: Store, facts: dict[str, Item], query: str, expected: str
) -> None:
    result = recall(store, query)
    assert not result.abstained
    assert result.hits[0].item.id == facts[expected].id
    assert result.hits[0].item.text == expected


@pytest.mark.parametrize(
    "query",
    [
        "what is the capital of France",
        "favourite pizza topping",
        "who won the world cup",
        "recipe for banana bread",
        "best hiking trails near Denver",
    ],
)
def test_recall_abstains_on_an_unrelated_query(
    store: Store, facts: dict[str, Item], query: str
) -> None:
    result = recall(store, query)
    assert result.abstained is True
    assert result.hits == ()


def test_recall_on_an_empty_store_abstains(store: Store) -> None:
    result = recall(store, "how many times are webhooks retried")
    assert result.abstained is True
    assert result.hits == ()


def test_recall_returns_hits_best_first_with_their_score_parts(
    store: Store, facts: dict[str, Item]
) -> None:
    result = recall(store, "API", k=10)
    assert len(result.hits) >= 2
    scores = [hit.score for hit in result.hits]
    assert scores == sorted(scores, reverse=True)
    for hit in result.hits:
        assert "API" in hit.item.text
        assert 0.0 <= hit.lexical <= 1.0
        assert -1.0 <= hit.cosine <= 1.0
    assert result.query == "API"
    assert result.mode == "hybrid"


def test_recall_returns_at_most_k_hits(store: Store) -> None:
    for i in range(8):
        store.remember(f"Deploy step {i} of the staging pipeline checks the canary")
    assert len(recall(store, "staging pipeline canary", k=3).hits) == 3
    assert len(recall(store, "staging pipeline canary", k=1).hits) == 1
    assert len(recall(store, "staging pipeline canary", k=MAX_K).hits) == 8


def test_project_recall_sees_its_project_and_global_but_never_another(store: Store) -> None:
    text = "The deploy script needs the DEPLOY_TOKEN variable"
    in_a, _ = store.remember(text + " in alpha", project="alpha")
    in_b, _ = store.remember(text + " in beta", project="beta")
    shared, _ = store.remember(text + " everywhere")

    seen_by_a = recall(store, "deploy script token", project="alpha", k=10)
    assert set(ids(seen_by_a)) == {in_a.id, shared.id}
    assert seen_by_a.projects == ("alpha", "global")

    seen_by_b = recall(store, "deploy script token", project="beta", k=10)
    assert set(ids(seen_by_b)) == {in_b.id, shared.id}

    seen_globally = recall(store, "deploy script token", k=10)
    assert ids(seen_globally) == [shared.id]
    assert seen_globally.projects == ("global",)


def test_project_recall_abstains_rather_than_leak_another_project(store: Store) -> None:
    store.remember("The beta service signs webhooks with HMAC-SHA256", project="beta")
    for mode in ("hybrid", "lexical", "vector"):
        result = recall(
            store, "how are webhooks signed with HMAC-SHA256", project="alpha", mode=mode
        )
        assert result.abstained is True, mode
        assert recall(store, "HMAC-SHA256", project="global", mode=mode).abstained is True, mode


def test_recall_refuses_an_invalid_project(store: Store) -> None:
    with pytest.raises(InvalidInput):
        recall(store, "anything", project="not a project")


@pytest.mark.parametrize(
    "query",
    ['"AND OR ("', "NEAR(a b)", "*", '"', "col:term", "^x", "' OR 1=1 --", "a AND (", ")))"],
)
def test_fts_syntax_in_a_query_is_never_an_error(
    store: Store, facts: dict[str, Item], query: str
) -> None:
    for mode in ("hybrid", "lexical", "vector"):
        result = recall(store, query, mode=mode)
        # None of these words is in the store: an injection would return everything.
        assert result.abstained is True
        assert result.hits == ()


@pytest.mark.parametrize(
    "query",
    ['"webhooks"', "webhooks*", "^webhooks", "NEAR(webhooks retries)", "webhooks' OR 1=1 --"],
)
def test_fts_syntax_around_a_real_word_still_finds_it(
    store: Store, facts: dict[str, Item], query: str
) -> None:
    result = recall(store, query)
    assert ids(result) == [facts[FACTS[0]].id]


def test_fts_query_quotes_every_term() -> None:
    assert fts_query('NEAR(a b) "x" OR col:term') == (
        '"near" OR "b" OR "x" OR "col" OR "term" OR "col:term"'
    )
    assert fts_query('say "hi"') == '"say" OR "hi"'
    assert fts_query("*") == ""


ERROR_DISTRACTORS = [
    *(
        f"Error E{code} from the payment provider means the card {why}"
        for code, why in [
            (1235, "expired"),
            (1243, "was blocked"),
            (1324, "is lost"),
            (2134, "needs 3-D Secure"),
            (1233, "was refused by the bank"),
            (12345, "number is invalid"),
            (1230, "request timed out"),
            (4321, "has no funds"),
        ]
    ),
    *(f"Payment provider error E{n} means the request was malformed" for n in range(1200, 1220)),
]
NODE_DISTRACTORS = [
    "node-sass fails on macOS until you upgrade node",
    "gyp files are generated by the build step on macOS",
    "node fails on macOS when the install uses the wrong Xcode",
    "Install node with nvm on macOS, never with Homebrew",
    "The build fails on macOS when node is too old",
    "Xcode command line tools are needed for git on macOS",
    "npm install fails on macOS behind the corporate proxy",
    "node-pre-gyp is deprecated, use prebuildify",
    "Node builds fail on macOS without python3",
    "The node build of the docs needs gyp tooling",
]
VERIFY_DISTRACTORS = [
    "git commit --verify runs the hooks again",
    "Use git commit --no-edit when amending",
    "The pre-commit hook verifies formatting before each commit",
    "git commit --amend rewrites the last commit",
    "Never skip verification of signed commits",
    "git commit -n is the short form for skipping the hooks",
    "Commit hooks live in .githooks and verify the changelog",
    "Verify the release with git verify-tag before pushing",
]


@pytest.mark.parametrize(
    ("target", "distractors", "query"),
    [
        (
            "Error E1234 from the payment provider means the card was declined",
            ERROR_DISTRACTORS,
            "E1234",
        ),
        (
            "Error E1234 from the payment provider means the card was declined",
            ERROR_DISTRACTORS,
            "what does payment error E1234 mean",
        ),
        (
            "node-gyp fails on macOS until you install the Xcode command line tools",
            NODE_DISTRACTORS,
            "node-gyp",
        ),
        (
            "node-gyp fails on macOS until you install the Xcode command line tools",
            NODE_DISTRACTORS,
            "node-gyp fails on macOS",
        ),
        (
            "Use git commit --no-verify only when the pre-commit hook is broken",
            VERIFY_DISTRACTORS,
            "--no-verify",
        ),
        (
            "Use git commit --no-verify only when the pre-commit hook is broken",
            VERIFY_DISTRACTORS,
            "when may I use git commit --no-verify",
        ),
    ],
)
def test_an_exact_token_is_found_first_among_similar_distractors(
    store: Store, target: str, distractors: list[str], query: str
) -> None:
    for text in distractors[: len(distractors) // 2]:
        store.remember(text)
    wanted, _ = store.remember(target)
    for text in distractors[len(distractors) // 2 :]:
        store.remember(text)
    result = recall(store, query, k=5)
    assert result.hits[0].item.id == wanted.id


def test_an_exact_token_outranks_a_longer_compound_that_starts_with_it(store: Store) -> None:
    wanted, _ = store.remember(
        "node-gyp fails on macOS until you install the Xcode command line tools"
    )
    store.remember("node-gyp-build downloads prebuilt binaries")
    result = recall(store, "node-gyp", k=5)
    assert result.hits[0].item.id == wanted.id


def test_archived_and_superseded_items_are_never_recalled(store: Store) -> None:
    archived, _ = store.remember("The legacy cron host is cron-01 in rack B4")
    old, _ = store.remember("The nightly backup runs on backup-07 at 03:00")
    store.forget(archived.id)
    _, new = store.revise(old.id, "The nightly backup runs on backup-09 at 04:00")
    for mode in ("hybrid", "lexical", "vector"):
        assert recall(store, "legacy cron host cron-01 rack B4", mode=mode).abstained, mode
        result = recall(store, "nightly backup backup-07", mode=mode, k=10)
        assert ids(result) == [new.id], mode


def test_k_out_of_range_is_refused(store: Store, facts: dict[str, Item]) -> None:
    for k in (0, -1, MAX_K + 1):
        with pytest.raises(InvalidInput, match="k must be between 1 and 100"):
            recall(store, "webhooks", k=k)


@pytest.mark.parametrize("query", ["", "   \n"])
def test_an_empty_query_is_refused(store: Store, query: str) -> None:
    with pytest.raises(InvalidInput, match="empty"):
        recall(store, query)


def test_an_over_long_query_is_refused(store: Store) -> None:
    with pytest.raises(InvalidInput, match="longer than"):
        recall(store, "webhooks " * 1000)


def test_lexical_mode_ranks_by_bm25_alone(store: Store, facts: dict[str, Item]) -> None:
    result = recall(store, "exponential backoff", mode="lexical")
    assert result.mode == "lexical"
    assert ids(result) == [facts[FACTS[0]].id]
    (hit,) = result.hits
    assert hit.lexical == 1.0
    assert hit.score == pytest.approx(1.0)


def test_vector_mode_ranks_by_cosine_alone(store: Store, facts: dict[str, Item]) -> None:
    result = recall(store, "how many times are webhooks retried", mode="vector")
    assert result.mode == "vector"
    assert result.hits[0].item.id == facts[FACTS[0]].id
    for hit in result.hits:
        assert hit.lexical == 0.0
        # The cosine in the embedder's own units: the same order as the cosine's.
        assert hit.score == pytest.approx(closeness(hit.cosine, store.embedder.unrelated))
    assert result.hits[0].score >= MIN_CLOSENESS


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "vector"])
def test_every_mode_finds_a_close_paraphrase(
    store: Store, facts: dict[str, Item], mode: Mode
) -> None:
    result = recall(store, "which cron job rebuilds the search index", mode=mode)
    assert result.hits[0].item.id == facts[FACTS[9]].id


def test_recall_writes_a_recall_event(store: Store, facts: dict[str, Item]) -> None:
    before = recall_events(store)
    recall(store, "how many times are webhooks retried")
    recall(store, "favourite pizza topping")
    assert recall_events(store) == before + 2
    conn = sqlite3.connect(store.path)
    try:
        rows = conn.execute(
            "SELECT json_extract(data, '$.hits'), json_extract(data, '$.abstained'), "
            "json_extract(data, '$.mode') FROM events WHERE kind = 'recall' ORDER BY seq"
        ).fetchall()
    finally:
        conn.close()
    assert rows == [(1, 0, "hybrid"), (0, 1, "hybrid")]


def test_recall_with_record_false_writes_no_event(store: Store, facts: dict[str, Item]) -> None:
    before = recall_events(store)
    result = recall(store, "how many times are webhooks retried", record=False)
    assert not result.abstained
    assert recall_events(store) == before


def test_a_copy_put_over_the_newest_row_is_searched_by_its_new_vector(store: Store) -> None:
    copy = "01JC0PY0000000000000000001"
    store.remember("Deploys to production go through Argo CD")
    before = "The billing service retries webhooks 5 times"
    after = "Integration tests need a local Postgres 15 on port 5433"
    for text in (before, after):
        store.put(
            item_id=copy, text=text, kind="fact", project="global", tags=(), author="bob",
            created_at=0.0, vector=None,
        )  # fmt: skip
        recall(store, text, mode="vector", record=False)  # the index loads the row as it is

    # The second copy replaced the newest row: it must not be taken for the row already loaded.
    query = "Postgres 15 on port 5433 for integration tests"
    (hit, *_) = recall(store, query, mode="vector", record=False).hits
    assert hit.item.id == copy
    expected = float(store.embedder.embed([after])[0] @ store.embedder.embed_query(query))
    assert hit.cosine == pytest.approx(expected, abs=1e-5)
