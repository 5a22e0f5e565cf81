"""The in-memory lexicon ranks exactly as FTS5 does, through every kind of write."""

import gc
import os
import random
import sqlite3
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memmesh.local._fulltext import bm25 as _bm25
from memmesh.local._lexicon import Lexicon
from memmesh.local._recall import recall, scope_of, scope_token
from memmesh.local.store import Store

# Words that make FTS5 work: stems, case, diacritics, width, compounds that are phrases, error
# codes, punctuation that splits tokens, CJK runs that are pairs, repeats that make ties.
WORDS = (
    "webhook", "webhooks", "Webhooks", "retry", "retries", "retried", "billing", "deploy",
    "deploys", "café", "cafe", "naïve", "Über", "straße", "node-gyp", "node", "gyp", "E1234",
    "e1234", "ci/flaky.yaml", "text:webhooks", "don't", "v1.2.3", "_private", "a", "the", "ß",
    "queue", "queues", "timeout", "42", "x-ray", "ray", "ＣＡＦＥ", "ステージング環境", "環境",
    "部署前", "스테이징", "の",
)  # fmt: skip
PROJECTS = ("global", "web", "api", "api-v2")
TAGS = ("webhooks", "retry", "node-gyp", "ci", "E1234", "deploy", "v1.2")


Ranked = list[tuple[int, float]]


def _fts_and_lexicon(
    store: Store, query: str, project: str, pool: int, only: list[int] | None
) -> tuple[Ranked, Ranked]:
    """BM25 of ``query`` through FTS5 and through the lexicon, on the same snapshot."""
    assert store.index.lexicon is not None
    with store.searching() as conn:
        view = store.index.lexicon.view()
        projects = scope_of(project)
        fts = _bm25(conn, None, query, projects, pool, only)
        mine = _bm25(conn, view, query, projects, pool, only)
    return list(fts.items()), list(mine.items())


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))


def _check_queries(store: Store, rng: random.Random, queries: int = 12) -> None:
    for _ in range(queries):
        query = _text(rng)
        project = rng.choice(PROJECTS)
        pool = rng.choice((1, 2, 3, 5, 50))
        fts, mine = _fts_and_lexicon(store, query, project, pool, None)
        assert mine == fts, (query, project, pool)


def test_ranks_exactly_as_fts5_through_every_kind_of_write(home: Path) -> None:
    rng = random.Random(7)
    with Store(home, author="tester", lexicon=True) as store:
        ids = []
        for _ in range(60):
            tags = rng.sample(TAGS, rng.randint(0, 3))
            item, _ = store.remember(_text(rng), project=rng.choice(PROJECTS), tags=tags)
            ids.append(item.id)
        _check_queries(store, rng)
        store.remember(store.get(ids[0]).text, project=store.get(ids[0]).project, tags=["x"])
        store.forget(ids[1])
        _, newer = store.revise(ids[2], "webhooks retries node-gyp café")
        ids.append(newer.id)
        store.put(
            item_id="01JCOPY0000000000000000001", text="retries of webhooks cached copy",
            kind="fact", project="web", tags=(), author="bob", created_at=0.0, vector=None,
        )  # fmt: skip
        _check_queries(store, rng)
        assert store.purge("01JCOPY0000000000000000001")
        _check_queries(store, rng)


@pytest.mark.parametrize("rebuild_at", [1, 50, 100_000])
def test_base_and_recent_parts_agree_with_fts5(home: Path, rebuild_at: int) -> None:
    """Small and large rebuild thresholds: always rebuilt, sometimes, never after the first."""
    rng = random.Random(rebuild_at)
    with Store(home, author="tester", lexicon=True) as store:
        store.index.lexicon = Lexicon(rebuild_at=rebuild_at)
        ids = []
        for round_ in range(5):
            for _ in range(15):
                item, _ = store.remember(_text(rng), project=rng.choice(PROJECTS))
                ids.append(item.id)
            for item_id in rng.sample(ids, 4):
                if store.get(item_id).status == "active":
                    _, newer = store.revise(item_id, _text(rng) + f" round{round_}")
                    ids.append(newer.id)
            store.forget(rng.choice([i for i in ids if store.get(i).status == "active"]))
            _check_queries(store, rng, queries=8)


def test_restriction_to_some_items_agrees_with_fts5(home: Path) -> None:
    rng = random.Random(3)
    with Store(home, author="tester", lexicon=True) as store:
        for _ in range(40):
            store.remember(_text(rng), project=rng.choice(PROJECTS))
        with store._db.read() as conn:
            seqs = [seq for (seq,) in conn.execute("SELECT seq FROM items")]
        for _ in range(10):
            only = [*rng.sample(seqs, rng.randint(1, 20)), 10_000]  # and one unknown row
            fts, mine = _fts_and_lexicon(store, _text(rng), rng.choice(PROJECTS), 5, only)
            assert mine == fts


texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=10).map(" ".join)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    items=st.lists(st.tuples(texts, st.sampled_from(PROJECTS)), min_size=1, max_size=25),
    query=st.text(min_size=1, max_size=40) | texts,
    project=st.sampled_from(PROJECTS),
    pool=st.integers(min_value=1, max_value=8),
)
def test_any_query_on_any_items_ranks_as_fts5(
    tmp_path_factory: pytest.TempPathFactory,
    items: list[tuple[str, str]],
    query: str,
    project: str,
    pool: int,
) -> None:
    home = tmp_path_factory.mktemp("lexicon")
    with Store(home, author="tester", lexicon=True) as store:
        for text, item_project in items:
            store.remember(text, project=item_project)
        fts, mine = _fts_and_lexicon(store, query, project, pool, None)
        assert mine == fts


def test_recall_answers_the_same_with_the_lexicon(home: Path) -> None:
    rng = random.Random(11)
    with Store(home, author="tester") as store:
        for _ in range(120):
            store.remember(_text(rng), project=rng.choice(PROJECTS), tags=rng.sample(TAGS, 2))
        answers = []
        for lexicon in (None, Lexicon()):
            store.index.lexicon = lexicon
            queries = random.Random(5)
            answer = []
            for _ in range(40):
                hits = recall(
                    store, _text(queries), project=queries.choice(PROJECTS), k=8, record=False
                ).hits
                answer.append([(hit.item.id, hit.score, hit.lexical) for hit in hits])
            answers.append(answer)
    assert answers[0] == answers[1]
    assert sum(map(len, answers[0])) > 100


def test_loads_only_the_rows_written_since_its_last_refresh(home: Path) -> None:
    with Store(home, author="tester", lexicon=True) as store:
        for index in range(5):
            store.remember(f"note {index} about webhooks")
        lexicon = Lexicon()
        with store._db.reader() as conn:
            assert lexicon.refresh(conn) == 5
            assert lexicon.refresh(conn) == 0
        store.remember("one more about queues")
        with store._db.reader() as conn:
            assert lexicon.refresh(conn) == 1
        assert lexicon.view().rows == 6


def test_warm_loads_both_indexes_before_any_search(home: Path) -> None:
    with Store(home, author="tester", lexicon=True) as store:
        store.remember("webhooks retry five times")
        store.remember("deploys go through Argo CD", project="web")
        assert store.index.lexicon is not None
        assert store.index.lexicon.last_rev == 0  # writes load only the vectors
        store.warm()
        with store._db.read() as conn:
            (last,) = conn.execute("SELECT max(rev) FROM items").fetchone()
        assert store.index.vectors.last_rev == store.index.lexicon.last_rev == last
        assert store.index.lexicon.view().rows == 2


def test_warm_reads_the_query_encoder_in_as_well(home: Path) -> None:
    from memmesh.embed import _encoder

    _encoder._packaged.cache_clear()
    with Store(home, author="tester", embedder="minilm-static") as store:
        store.warm()
    assert _encoder._packaged.cache_info().currsize == 1


def test_a_forked_worker_tokenizes_with_a_connection_of_its_own(home: Path) -> None:
    from memmesh.local import _fts5_tokens

    assert _fts5_tokens.phrase_tokens("Webhooks") == ("webhook",)
    parent = _fts5_tokens._the_tokenizer()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit code
        fresh = _fts5_tokens._the_tokenizer() is not parent
        tokens = _fts5_tokens._the_tokenizer().phrase("Deploys webhooks")
        os._exit(0 if fresh and tokens == ("deploi", "webhook") else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_remembered_answers_are_forgotten_together_past_their_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memmesh.local import _lexicon

    monkeypatch.setattr(_lexicon, "_REMEMBERED", 10)
    memo: _lexicon._Remembered[str, int] = _lexicon._Remembered()
    memo.put("a", 1, rows=6)
    memo.put("b", 2, rows=4)
    assert (memo.get("a"), memo.get("b")) == (1, 2)
    memo.put("c", 3, rows=1)  # 11 rows: the older answers go
    assert (memo.get("a"), memo.get("b"), memo.get("c")) == (None, None, 3)


@pytest.mark.parametrize("rebuild_at", [1, 100_000])
def test_a_purged_item_leaves_no_trace_in_the_lexicon(home: Path, rebuild_at: int) -> None:
    with Store(home, author="tester", lexicon=True) as store:
        store.index.lexicon = Lexicon(rebuild_at=rebuild_at)
        for index in range(20):
            store.remember(f"note {index} on webhooks and retries")
        store.put(
            item_id="01JCOPY0000000000000000001", text="the zanzibar rotation secret lives here",
            kind="fact", project="global", tags=(), author="bob", created_at=0.0, vector=None,
        )  # fmt: skip
        store.warm()
        with store._db.read() as conn:
            (seq,) = conn.execute(
                "SELECT seq FROM items WHERE id = '01JCOPY0000000000000000001'"
            ).fetchone()
        assert store.index.lexicon is not None
        before = store.index.lexicon.view()
        assert seq in before.base.seqs.tolist() + before.recent.seqs.tolist()

        assert store.purge("01JCOPY0000000000000000001")
        store.warm()
        after = store.index.lexicon.view()
        assert seq not in after.base.seqs.tolist() + after.recent.seqs.tolist()
        assert seq not in after.base.row_seqs.tolist() + after.recent.row_seqs.tolist()
        fts, mine = _fts_and_lexicon(store, "zanzibar rotation webhooks", "global", 50, None)
        assert mine == fts
        assert seq not in dict(mine)


def _fts5_vocabulary(store: Store) -> set[str]:
    """Every term FTS5's own index holds now (the items of the full-text index are the
    active ones)."""
    conn = sqlite3.connect(store.path)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab (main, items_fts, row)")
        return {term for (term,) in conn.execute("SELECT term FROM temp.vocab WHERE doc > 0")}
    finally:
        conn.close()


def _strings_held(*roots: object) -> set[str]:
    """Every string reachable from ``roots`` through data (not through classes, modules or
    functions, which lead to everything)."""
    skip = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)
    seen: set[int] = set()
    found: set[str] = set()
    todo = list(roots)
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, skip):
            continue
        seen.add(id(obj))
        if isinstance(obj, str):
            found.add(obj)
        else:
            todo.extend(gc.get_referents(obj))
    return found


SECRET = "the zanzibar rotation secret lives here"


@pytest.mark.parametrize("rebuild_at", [1, 100_000])
@pytest.mark.parametrize("leaves", ["purge", "forget", "revise"])
def test_words_only_a_gone_item_had_leave_the_vocabulary(
    home: Path, rebuild_at: int, leaves: str
) -> None:
    from memmesh.local._fts5_tokens import phrase_tokens

    with Store(home, author="tester", lexicon=True) as store:
        store.index.lexicon = lexicon = Lexicon(rebuild_at=rebuild_at)
        for index in range(20):
            store.remember(f"note {index} on webhooks and retries")
        secret, _ = store.remember(SECRET)
        store.warm()
        before = _fts5_vocabulary(store)
        # Searched for, so that the remembered phrases and tokens hold the words too.
        assert _fts_and_lexicon(store, SECRET, "global", 50, None)[1]
        assert "zanzibar" in _strings_held(lexicon, phrase_tokens)
        taken = lexicon.view()
        scopes = [scope_token("global")]
        answered = taken.bm25(["zanzibar", "webhooks"], scopes, 50)

        if leaves == "purge":
            assert store.purge(secret.id)
        elif leaves == "forget":
            store.forget(secret.id)
        else:
            store.revise(secret.id, "note on webhooks")
        store.warm()

        after = _fts5_vocabulary(store)
        gone = before - after
        assert {"zanzibar", "secret", "rotat"} <= gone
        view = lexicon.view()
        assert set(view.vocabulary) == after
        # No slot is kept for a term no row holds: every id numbers a term some row has.
        held = np.zeros(len(view.vocabulary), dtype=np.int64)
        for part in (view.base, view.recent):
            counts = np.diff(part.row_starts)
            assert len(counts) <= len(held)
            held[: len(counts)] += counts
        assert held.all()
        leftovers = _strings_held(lexicon, phrase_tokens)
        assert not leftovers & (gone | set(SECRET.split()))
        assert not [word for word in gone if word.encode() in view.vocabulary.blob]
        # A search still working on a view taken before answers as it would have.
        assert taken.bm25(["zanzibar", "webhooks"], scopes, 50) == answered
        fts, mine = _fts_and_lexicon(store, SECRET + " webhooks", "global", 50, None)
        assert mine == fts
        assert mine
