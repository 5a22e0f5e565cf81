"""`mem mcp` driven by the MCP SDK's own client: it starts the real server over stdio, lists
the tools and calls each of them, including the calls that must fail."""

import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest

from memmesh.local.store import Store
from tests.agents._mcp import _call, _fail, _with_session
from tests.conftest import requires_mcp
from tests.team._team import TOKEN, Team, team_on_loopback

pytestmark = requires_mcp

LOCAL_TOOLS = {"recall", "why", "remember", "outcome", "revise", "forget"}
TEAM_TOOLS = {"recall_team", "publish"}
DEPLOYS = "Deploys go through the blue-green script in ops/deploy.sh"
# Split so that this file does not itself look like it holds a key.
AWS_KEY = "The CI deploy user's access key id is AKIA" + "TYMXMS67ANWP46I4"


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    return Path.cwd()


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Team]:
    monkeypatch.setenv("MEM_TEAM_TOKEN", TOKEN)
    with team_on_loopback(tmp_path) as members:
        yield members


def test_without_a_coordinator_only_the_local_tools_are_offered(home: Path, cwd: Path) -> None:
    async def scenario(client: Any) -> None:
        listed = await client.list_tools()
        tools = {tool.name: tool for tool in listed.tools}
        assert set(tools) == LOCAL_TOOLS
        for tool in tools.values():
            # Each description tells the agent when to reach for the tool.
            assert len(tool.description or "") > 80, tool.name
        assert tools["recall"].annotations.read_only_hint is True
        assert tools["remember"].annotations.read_only_hint is False

    _with_session(home, cwd, scenario)


def test_remember_stores_a_secret_redacted_and_tells_the_agent(home: Path, cwd: Path) -> None:
    async def scenario(client: Any) -> None:
        created = await _call(client, "remember", text=AWS_KEY, kind="decision")
        assert created["redacted"] == ["aws-access-key-id"]
        assert "do not put secrets in memory" in created["warning"]
        found = await _call(client, "recall", query="CI deploy user access key id")
        assert found["hits"][0]["text"] == (
            "The CI deploy user's access key id is [redacted: aws-access-key-id]"
        )

    _with_session(home, cwd, scenario)
    with Store(home, author="tester") as store:
        assert [item.text for item in store.items()] == [
            "The CI deploy user's access key id is [redacted: aws-access-key-id]"
        ]


def test_remember_recall_outcome_and_forget_work_on_the_members_store(
    home: Path, cwd: Path
) -> None:
    seen: dict[str, Any] = {}

    async def scenario(client: Any) -> None:
        created = await _call(client, "remember", text=DEPLOYS, kind="convention")
        assert created["status"] == "created"
        again = await _call(client, "remember", text=DEPLOYS, kind="convention")
        assert again == {**created, "status": "reinforced", "reinforcements": 1}

        found = await _call(client, "recall", query="how do deploys work", k=3)
        assert found["abstained"] is False
        assert found["hits"][0]["id"] == created["id"]
        assert found["hits"][0]["text"] == DEPLOYS
        assert set(found["hits"][0]) <= {"id", "text", "kind", "score", "project"}

        rated = await _call(client, "outcome", id=created["id"][:8], result="worked")
        assert rated["id"] == created["id"]
        assert rated["outcome_score"] > 0
        assert rated["excluded_from_recall"] is False

        forgotten = await _call(client, "forget", id=created["id"])
        assert forgotten == {"id": created["id"], "status": "archived", "retracted": False}
        after = await _call(client, "recall", query="how do deploys work")
        assert created["id"] not in [hit["id"] for hit in after["hits"]]
        seen["id"] = created["id"]

    _with_session(home, cwd, scenario)
    with Store(home) as store:
        item = store.get(seen["id"])
    assert (item.status, item.reinforcements) == ("archived", 1)
    assert item.worked == pytest.approx(1.0)


def test_recall_with_explain_says_why_each_hit_scored_and_what_was_left_out(
    home: Path, cwd: Path
) -> None:
    async def scenario(client: Any) -> None:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        explain = listed["recall"].input_schema["properties"]["explain"]
        assert (explain["type"], explain["default"]) == ("boolean", False)
        await _call(client, "remember", text=DEPLOYS, project="shop")
        await _call(client, "remember", text="Staging deploys go through ops/deploy.sh too",
                    project="ops")  # fmt: skip
        query = "how do deploys go out, through which script"

        plain = await _call(client, "recall", query=query, project="shop")
        found = await _call(client, "recall", query=query, project="shop", explain=True)

        assert set(plain) == {"hits", "abstained", "projects", "trace"}
        assert [hit["id"] for hit in found["hits"]] == [hit["id"] for hit in plain["hits"]]
        why = found["hits"][0]["why"]
        assert set(why) == {"cosine", "lexical", "exact", "words", "record_factor", "score"}
        assert why["score"] == found["hits"][0]["score"]
        assert found["gate"] == {"min_closeness": 1.0, "min_coverage": 0.25, "min_relevance": 0.6}
        assert [(m["project"], m["reason"]) for m in found["left_out"]] == [("ops", "out_of_scope")]

    _with_session(home, cwd, scenario)


def test_remember_files_items_under_the_project_of_the_working_folder(
    home: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "billing-service"
    (repo / ".git").mkdir(parents=True)

    async def scenario(client: Any) -> None:
        in_repo = await _call(client, "remember", text="Invoices go out on the 1st")
        assert in_repo["project"] == "billing-service"
        preference = await _call(
            client, "remember", text="Prefer small commits", kind="preference", project="global"
        )
        assert preference["project"] == "global"

    _with_session(home, repo, scenario)


def test_a_failing_call_is_a_clear_tool_error_and_the_server_carries_on(
    home: Path, cwd: Path
) -> None:
    async def scenario(client: Any) -> None:
        assert "no item with id 'zzzz'" in await _fail(
            client, "outcome", id="zzzz", result="worked"
        )
        assert "unknown kind 'bogus'" in await _fail(client, "remember", text="x", kind="bogus")
        # An argument that does not fit is one sentence naming it and what it should be.
        assert await _fail(client, "recall", query="") == "query must not be empty"
        assert await _fail(client, "outcome", id="01ABCDEF", result="great") == (
            "result must be one of 'worked', 'failed' or 'partial'"
        )
        assert await _fail(client, "recall", query="deploys", k=0) == "k must be at least 1"
        assert await _fail(client, "remember", text="x" * 9000) == (
            "text must be at most 8,192 characters long"
        )
        assert "no item" in await _fail(client, "forget", id="01ZZZZZZ")
        # Still serving, and nothing was written by the failed calls.
        answer = await _call(client, "recall", query="deploys")
        answer.pop("trace")
        assert answer == {"hits": [], "abstained": True, "projects": ["global"]}

    _with_session(home, cwd, scenario)
    with Store(home) as store:
        assert store.items(status=None) == []


def test_a_coordinator_in_the_policy_adds_the_team_tools_and_publish_cannot_force(
    team: Team, cwd: Path
) -> None:
    ada = team.add("ada")

    async def scenario(client: Any) -> None:
        listed = await client.list_tools()
        tools = {tool.name: tool for tool in listed.tools}
        assert set(tools) == LOCAL_TOOLS | TEAM_TOOLS
        # No way past the policy: whom for (to) is the only choice beside the ids.
        assert set(tools["publish"].input_schema["properties"]) == {"ids", "dry_run", "to"}

    _with_session(ada.home, cwd, scenario)


def test_publish_goes_through_the_policy_and_a_teammate_recalls_it(team: Team, cwd: Path) -> None:
    ada, bob = team.add("ada"), team.add("bob")
    bob.share("We chose Postgres advisory locks over Redis for the job scheduler")
    # As `mem remember --keep-secret` stores it: the item holds the key as written.
    kept = ada.remember(AWS_KEY)
    seen: dict[str, str] = {}

    async def scenario(client: Any) -> None:
        redacted = await _call(client, "remember", text=AWS_KEY + " (old account)")
        assert redacted["redacted"] == ["aws-access-key-id"]
        refusal = await _fail(client, "publish", ids=[kept])
        assert "secret" in refusal
        assert kept in refusal

        shared = await _call(client, "remember", text=DEPLOYS, kind="decision")
        seen["id"] = shared["id"]
        planned = await _call(client, "publish", ids=[shared["id"]], dry_run=True)
        assert planned["items"][0]["action"] == "publish"
        published = await _call(client, "publish", ids=[shared["id"]])
        assert published["items"] == [
            {
                "id": shared["id"],
                "action": "published",
                "version": 1,
                "rule": "share.kinds: decision",
                "audience": None,
            }
        ]

        answer = await _call(client, "recall_team", query="which locks does the job scheduler use")
        assert answer["hits"][0]["author"] == "bob"
        assert answer["hits"][0]["author_id"] == bob.key_id  # with the id, names the item
        assert answer["hits"][0]["source"] == "coordinator"
        assert answer["sources"]["coordinator"] == "ok"

    _with_session(ada.home, cwd, scenario)
    # Only the allowed item was recorded, and auto-sync was off: it waits for `mem team sync`.
    with ada.registry() as registry, registry.store.read() as conn:
        assert set(registry.live(conn)) == {seen["id"]}


def test_a_policy_broken_after_start_refuses_publish_and_sends_nothing(
    team: Team, cwd: Path
) -> None:
    ada = team.add("ada")

    async def scenario(client: Any) -> None:
        item = await _call(client, "remember", text=DEPLOYS, kind="decision")
        (ada.home / "team.yaml").write_text("version: 1\nshare: [\n", encoding="utf-8")
        refusal = await _fail(client, "publish", ids=[item["id"]])
        assert "team.yaml" in refusal
        assert "team.yaml" in await _fail(client, "recall_team", query="deploys")

    _with_session(ada.home, cwd, scenario)
    with ada.registry() as registry:
        assert registry.entries() == []


def test_without_the_sdk_mem_mcp_says_how_to_install_it(
    home: Path, tmp_path: Path, cwd: Path
) -> None:
    shadow = tmp_path / "shadow" / "mcp"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('not installed')\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "memmesh", "--home", str(home), "mcp"],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(shadow.parent)},
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr == (
        "mem: error: the MCP server needs the optional MCP SDK: pip install 'memmesh[mcp]'\n"
    )
    assert result.stdout == ""


def test_tool_calls_run_on_a_fixed_set_of_threads_so_read_connections_stay_bounded(
    home: Path,
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from memmesh.agents.server import WORKERS, build_server

    with Store(home) as store:
        store.remember(DEPLOYS, kind="convention")

        async def burst() -> None:
            with ThreadPoolExecutor(max_workers=WORKERS) as workers:
                server = build_server(home, store, workers)
                calls = [server.call_tool("recall", {"query": "deploys"}) for _ in range(40)]
                results = await _gather(calls)
                assert all(DEPLOYS in str(result) for result in results)

        anyio.run(burst)
        # One read connection per thread that ever read: the workers, not one per call.
        assert len(store._db._reader_connections) <= WORKERS


async def _gather(calls: list[Any]) -> list[Any]:
    import asyncio

    return list(await asyncio.gather(*calls))


def test_forgetting_a_published_item_retracts_it_and_auto_sync_pushes_that(
    team: Team, cwd: Path
) -> None:
    ada, bob = team.add("ada", auto_sync=True), team.add("bob")
    item_id = ada.share(DEPLOYS, kind="decision")
    assert [h["text"] for h in _team_hits(bob, "how do deploys work")] == [DEPLOYS]

    async def scenario(client: Any) -> None:
        forgotten = await _call(client, "forget", id=item_id)
        assert forgotten == {"id": item_id, "status": "archived", "retracted": True}

    _with_session(ada.home, cwd, scenario)
    # Pushed at once: the coordinator no longer serves it, without a `mem team sync`.
    assert _team_hits(bob, "how do deploys work") == []


def _team_hits(member: Any, query: str) -> list[dict[str, Any]]:
    from memmesh.registry import load_identity
    from memmesh.team.member import Member

    with Store(member.home, author=member.name) as store:
        answer = Member(
            store, load_identity(member.home), member.policy(), reconcile_first=False
        ).ask_team(query, k=5, project="global")
    return [{"text": hit.text} for hit in answer.hits]


@pytest.mark.parametrize(
    ("tool", "arguments", "problem"),
    [
        ("recall", {"query": "deploys", "k": 101}, "k must be at most 100"),
        ("recall", {"query": "deploys", "k": "many"}, "k must be a whole number"),
        ("remember", {}, "text is required"),
        ("forget", {"id": "ab"}, "id must be at least 4 characters long"),
        ("remember", {"text": "x", "tags": "ci"}, "tags must be a list"),
        ("remember", {"text": "x", "tags": [1]}, "tags[0] must be a string"),
        ("remember", {"text": "x", "tags": ["t"] * 17}, "tags must hold at most 16 items"),
        ("recall", {"query": "", "k": 0}, "query must not be empty; k must be at least 1"),
    ],
)
def test_an_argument_that_does_not_fit_is_named_with_what_it_should_be(
    home: Path, tool: str, arguments: dict[str, Any], problem: str
) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    from memmesh.agents.server import build_server

    async def call() -> str:
        with Store(home) as store, ThreadPoolExecutor(max_workers=1) as workers:
            server = build_server(home, store, workers)
            with pytest.raises(ToolError) as refused:
                await server.call_tool(tool, arguments)
        return str(refused.value)

    assert anyio.run(call) == problem
