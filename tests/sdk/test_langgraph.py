"""`memmesh.integrations.langgraph.MemmeshStore`: LangGraph's store interface over a member's
memory, driven through LangGraph's own API and by a real compiled graph."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TypedDict

import anyio
import pytest

pytest.importorskip("langgraph", reason="the optional LangGraph extra is not installed")

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    PutOp,
    SearchOp,
)

from memmesh import Memory
from memmesh.integrations.langgraph import MemmeshStore
from memmesh.local.errors import InvalidInput
from tests.conftest import MemRunner

PREFS = ("users", "ada", "preferences")


@pytest.fixture
def memory(home: Path) -> Iterator[Memory]:
    with Memory(home) as opened:
        yield opened


@pytest.fixture
def store(memory: Memory) -> MemmeshStore:
    return MemmeshStore(memory, project="webapp")


def test_put_then_get_gives_the_value_back(store: MemmeshStore) -> None:
    value = {"editor": "vim", "tabs": 4, "nested": {"ok": True, "list": [1, "two"]}}
    store.put(PREFS, "editor", value)

    got = store.get(PREFS, "editor")

    assert got is not None
    assert (got.namespace, got.key, got.value) == (PREFS, "editor", value)
    assert got.created_at <= got.updated_at
    assert store.get(PREFS, "missing") is None
    assert store.get(("users", "bob", "preferences"), "editor") is None


def test_the_value_is_an_item_the_command_line_recalls(store: MemmeshStore, mem: MemRunner) -> None:
    store.put(PREFS, "db", {"fact": "The webapp stores sessions in Redis"})

    done = mem("recall", "where are sessions stored", "--project", "webapp", "--json")

    assert done.returncode == 0, done.stderr
    (hit,) = json.loads(done.stdout)["hits"]
    assert json.loads(hit["text"]) == {"fact": "The webapp stores sessions in Redis"}
    assert "langgraph" in hit["tags"]


def test_put_again_replaces_the_value_and_forgets_the_old_item(
    store: MemmeshStore, memory: Memory
) -> None:
    store.put(PREFS, "editor", {"editor": "vim"})
    store.put(PREFS, "editor", {"editor": "helix"})

    got = store.get(PREFS, "editor")
    assert got is not None
    assert got.value == {"editor": "helix"}
    assert [json.loads(i.text) for i in memory.store.items()] == [{"editor": "helix"}]


def test_delete_forgets_the_item_unless_another_key_holds_it(
    store: MemmeshStore, memory: Memory
) -> None:
    store.put(PREFS, "a", {"theme": "dark"})
    store.put(("users", "bob"), "b", {"theme": "dark"})  # the same text: one item, reinforced
    (item,) = memory.store.items()

    store.delete(PREFS, "a")
    assert store.get(PREFS, "a") is None
    assert memory.get(item.id).status == "active"

    store.delete(("users", "bob"), "b")
    assert memory.get(item.id).status == "archived"


def test_an_item_forgotten_by_hand_is_gone_from_the_graph_too(
    store: MemmeshStore, memory: Memory
) -> None:
    store.put(PREFS, "editor", {"editor": "vim"})
    (item,) = memory.store.items()

    memory.forget(item.id)

    assert store.get(PREFS, "editor") is None
    assert store.search(("users",)) == []


def test_search_by_prefix_filter_and_query(store: MemmeshStore) -> None:
    store.put(PREFS, "editor", {"text": "Ada edits code in vim", "rank": 1})
    store.put(PREFS, "shell", {"text": "Ada's shell is fish", "rank": 2})
    store.put(("users", "bob"), "editor", {"text": "Bob edits code in emacs", "rank": 1})

    assert {i.key for i in store.search(PREFS)} == {"editor", "shell"}
    assert {(i.namespace[1], i.key) for i in store.search(("users",), filter={"rank": 1})} == {
        ("ada", "editor"),
        ("bob", "editor"),
    }
    assert [i.key for i in store.search(("users",), filter={"rank": {"$gt": 1}})] == ["shell"]
    assert len(store.search(("users",), limit=2)) == 2
    assert store.search(("users", "carol")) == []

    found = store.search(("users",), query="which editor does Bob use")
    assert [(i.namespace, i.key) for i in found][:1] == [(("users", "bob"), "editor")]
    assert found[0].score is not None


def test_list_namespaces_with_prefix_suffix_and_depth(store: MemmeshStore) -> None:
    store.put(PREFS, "editor", {"editor": "vim"})
    store.put(("users", "bob", "preferences"), "editor", {"editor": "emacs"})
    store.put(("docs", "v1"), "readme", {"title": "Read me"})

    assert store.list_namespaces() == [
        ("docs", "v1"),
        ("users", "ada", "preferences"),
        ("users", "bob", "preferences"),
    ]
    assert store.list_namespaces(prefix=("users",), max_depth=2) == [
        ("users", "ada"),
        ("users", "bob"),
    ]
    assert store.list_namespaces(suffix=("v1",)) == [("docs", "v1")]
    assert store.list_namespaces(prefix=("users", "*", "preferences"), limit=1, offset=1) == [
        ("users", "bob", "preferences")
    ]


def test_a_secret_in_a_value_is_stored_redacted(store: MemmeshStore, memory: Memory) -> None:
    store.put(PREFS, "db", {"url": "postgres://app:hunter2pass@db/app"})

    got = store.get(PREFS, "db")
    assert got is not None
    assert "hunter2pass" not in got.value["url"]
    assert all("hunter2pass" not in i.text for i in memory.store.items())


def test_bad_input_is_refused_and_changes_nothing(store: MemmeshStore, memory: Memory) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(("users", "a.b"), "k", {"x": 1})
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp((), "k", {"x": 1})])
    with pytest.raises(InvalidInput, match="JSON"):
        store.put(PREFS, "k", {"when": object()})
    with pytest.raises(InvalidInput):
        store.put(PREFS, "k", {"text": "x" * 20_000})

    assert memory.store.items() == []
    assert store.list_namespaces() == []


def test_batch_answers_each_op_in_order(store: MemmeshStore) -> None:
    results = store.batch(
        [
            PutOp(PREFS, "editor", {"editor": "vim"}),
            GetOp(PREFS, "editor"),
            SearchOp(("users",)),
            PutOp(PREFS, "editor", None),
            GetOp(PREFS, "editor"),
        ]
    )

    put, got, found, deleted, gone = results
    assert (put, deleted, gone) == (None, None, None)
    assert isinstance(got, Item)
    assert got.value == {"editor": "vim"}
    assert isinstance(found, list)
    assert [i.key for i in found if isinstance(i, Item)] == ["editor"]


def test_the_async_api_runs_the_same_operations(store: MemmeshStore) -> None:
    async def main() -> None:
        async with anyio.create_task_group() as group:
            for n in range(4):
                group.start_soon(store.aput, PREFS, f"k{n}", {"n": n, "text": f"value number {n}"})
        got = await store.aget(PREFS, "k2")
        assert got is not None
        assert got.value["n"] == 2
        assert len(await store.asearch(PREFS)) == 4
        assert await store.alist_namespaces() == [PREFS]
        await store.adelete(PREFS, "k2")
        assert await store.aget(PREFS, "k2") is None

    anyio.run(main)


class _State(TypedDict):
    user: str
    said: str
    known: list[str]


def _graph(store: BaseStore) -> "CompiledStateGraph[_State, None, _State, _State]":
    """A graph whose one node remembers what the user said and recalls what it knows."""

    def remember_and_recall(state: _State, *, store: BaseStore) -> dict[str, list[str]]:
        namespace = ("users", state["user"], "facts")
        store.put(namespace, str(len(store.search(namespace)) + 1), {"text": state["said"]})
        return {"known": [item.value["text"] for item in store.search(namespace, limit=10)]}

    builder = StateGraph(_State)
    builder.add_node("remember_and_recall", remember_and_recall)
    builder.add_edge(START, "remember_and_recall")
    builder.add_edge("remember_and_recall", END)
    return builder.compile(store=store)


def test_a_graph_node_remembers_across_runs(store: MemmeshStore, mem: MemRunner) -> None:
    graph = _graph(store)

    graph.invoke({"user": "ada", "said": "I deploy on Fridays", "known": []})
    out = graph.invoke({"user": "ada", "said": "I use Postgres 16", "known": []})
    other = graph.invoke({"user": "bob", "said": "I use SQLite", "known": []})

    assert sorted(out["known"]) == ["I deploy on Fridays", "I use Postgres 16"]
    assert other["known"] == ["I use SQLite"]
    listed = json.loads(mem("list", "--project", "webapp", "--json").stdout)["items"]
    assert len(listed) == 3


def test_an_async_graph_run_uses_abatch(store: MemmeshStore) -> None:
    graph = _graph(store)

    async def main() -> dict[str, list[str]]:
        out: dict[str, list[str]] = await graph.ainvoke(
            {"user": "ada", "said": "I review pull requests in the morning", "known": []}
        )
        return out

    assert anyio.run(main)["known"] == ["I review pull requests in the morning"]


def test_an_unknown_filter_operator_is_refused(store: MemmeshStore) -> None:
    store.put(PREFS, "editor", {"editor": "vim", "tabs": 4})

    with pytest.raises(InvalidInput, match=r"\$near"):
        store.search(PREFS, filter={"tabs": {"$near": 4}})
    assert [i.key for i in store.search(PREFS, filter={"tabs": {"$gte": 4, "$lt": 5}})] == [
        "editor"
    ]
    assert store.search(PREFS, filter={"editor": {"$gt": 3}}) == []  # no order: no match
