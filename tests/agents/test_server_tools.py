"""The MCP tools beyond remember and recall: revise, why, outcome without an id, each hit's
track record, and the read-only server (`mem mcp --read-only`), driven by the SDK's client."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memmesh.local.store import Store
from tests.agents._mcp import _call, _fail, _with_session
from tests.conftest import MemRunner, requires_mcp
from tests.team._team import TOKEN, Team, team_on_loopback

pytestmark = requires_mcp

DEPLOYS = "Deploys go through the blue-green script in ops/deploy.sh"
ROLLBACK = "Roll back a bad deploy with ops/rollback.sh, never by hand"
# Split so that this file does not itself look like it holds a key.
AWS_KEY = "AKIA" + "TYMXMS67ANWP46I4"


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    return tmp_path


def test_revise_replaces_the_text_keeps_the_old_as_history_and_redacts_a_secret(
    home: Path, cwd: Path
) -> None:
    seen: dict[str, Any] = {}

    async def scenario(client: Any) -> None:
        created = await _call(client, "remember", text=DEPLOYS)
        revised = await _call(
            client, "revise", id=created["id"][:8], text=f"Deploys use ops/deploy2.sh as {AWS_KEY}"
        )
        assert revised["superseded"] == created["id"]
        assert revised["redacted"] == ["aws-access-key-id"]
        found = await _call(client, "recall", query="which script do deploys go through")
        assert [hit["id"] for hit in found["hits"]] == [revised["id"]]
        seen.update(old=created["id"], new=revised["id"])

    _with_session(home, cwd, scenario)
    with Store(home) as store:
        old, new = store.get(seen["old"]), store.get(seen["new"])
    assert (old.status, old.superseded_by) == ("superseded", seen["new"])
    assert new.text == "Deploys use ops/deploy2.sh as [redacted: aws-access-key-id]"


def test_revise_of_an_unknown_id_is_a_tool_error_that_names_it(home: Path, cwd: Path) -> None:
    async def scenario(client: Any) -> None:
        error = await _fail(client, "revise", id="01ZZZZZZZZ", text="anything")
        assert "01ZZZZZZZZ" in error

    _with_session(home, cwd, scenario)


def test_why_explains_a_query_and_a_past_recall_by_its_trace(home: Path, cwd: Path) -> None:
    async def scenario(client: Any) -> None:
        created = await _call(client, "remember", text=DEPLOYS)
        await _call(client, "remember", text=ROLLBACK)
        explained = await _call(client, "why", query="which script runs the deploys")
        assert explained["hits"][0]["id"] == created["id"]
        assert set(explained["hits"][0]["why"]) >= {"cosine", "lexical", "score"}
        assert "trace" not in explained  # explaining records nothing

        found = await _call(client, "recall", query="which script runs the deploys")
        await _call(client, "forget", id=created["id"])
        again = await _call(client, "why", trace=found["trace"])

        assert again["trace"] == found["trace"]
        assert again["query"] == "which script runs the deploys"
        fates = {then["id"]: then["fate"] for then in again["then"]}
        assert fates[created["id"]] == "inactive"

    _with_session(home, cwd, scenario)


def test_why_needs_a_query_or_a_trace_and_names_an_unknown_trace(home: Path, cwd: Path) -> None:
    async def scenario(client: Any) -> None:
        assert "give a query, or the trace id" in await _fail(client, "why")
        both = await _fail(client, "why", query="deploys", trace="0123456789ab")
        assert "not both" in both
        assert "0123456789ab" in await _fail(client, "why", trace="0123456789ab")

    _with_session(home, cwd, scenario)


def test_outcome_without_an_id_credits_every_item_the_last_recall_returned(
    home: Path, cwd: Path
) -> None:
    seen: dict[str, Any] = {}

    async def scenario(client: Any) -> None:
        deploys = await _call(client, "remember", text=DEPLOYS)
        await _call(client, "remember", text="The office coffee machine is descaled on Fridays")
        found = await _call(client, "recall", query="which script runs the deploys", k=1)
        assert [hit["id"] for hit in found["hits"]] == [deploys["id"]]

        credited = await _call(client, "outcome", result="worked")

        assert [each["id"] for each in credited["credited"]] == [deploys["id"]]
        seen["id"] = deploys["id"]

    _with_session(home, cwd, scenario)
    with Store(home) as store:
        assert [item.worked for item in store.items()] == [0.0, pytest.approx(1.0)]


def test_outcome_without_an_id_before_any_recall_asks_for_the_id(home: Path, cwd: Path) -> None:
    async def scenario(client: Any) -> None:
        await _call(client, "remember", text=DEPLOYS)
        error = await _fail(client, "outcome", result="worked")
        assert error.endswith(
            "no recall has returned anything yet in this session; give the item's id"
        )

    _with_session(home, cwd, scenario)
    with Store(home) as store:
        assert [item.worked for item in store.items()] == [0.0]


def test_every_hit_carries_its_track_record_in_words_once_one_was_reported(
    home: Path, cwd: Path
) -> None:
    async def scenario(client: Any) -> None:
        deploys = await _call(client, "remember", text=DEPLOYS)
        rollback = await _call(client, "remember", text=ROLLBACK)
        for _ in range(3):
            await _call(client, "outcome", id=deploys["id"], result="worked")
        await _call(client, "outcome", id=deploys["id"], result="failed")

        found = await _call(client, "recall", query="deploy scripts in ops", k=5)

        records = {hit["id"]: hit.get("record") for hit in found["hits"]}
        assert records == {deploys["id"]: "has worked 3 times, failed once", rollback["id"]: None}

    _with_session(home, cwd, scenario)


def test_a_read_only_server_offers_only_what_changes_nothing(home: Path, cwd: Path) -> None:
    with Store(home) as store:
        store.remember(DEPLOYS)

    async def scenario(client: Any) -> None:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert tools == {"recall", "why"}
        found = await _call(client, "recall", query="which script runs the deploys")
        assert found["hits"][0]["text"] == DEPLOYS
        refused = await client.call_tool("remember", {"text": "sub-agents write nothing"})
        assert refused.is_error

    _with_session(home, cwd, scenario, "--read-only")
    with Store(home) as store:
        assert [item.text for item in store.items()] == [DEPLOYS]


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Team]:
    monkeypatch.setenv("MEM_TEAM_TOKEN", TOKEN)
    with team_on_loopback(tmp_path) as members:
        yield members


def test_a_read_only_server_in_a_team_asks_the_team_but_never_publishes(
    team: Team, cwd: Path
) -> None:
    ada = team.add("ada")

    async def scenario(client: Any) -> None:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert tools == {"recall", "why", "recall_team"}

    _with_session(ada.home, cwd, scenario, "--read-only")


GOTCHA = "Staging deploys need the VPN: run wg-quick up staging before deploying"


def test_recall_in_a_team_adds_the_team_caches_items_with_their_author(
    team: Team, cwd: Path
) -> None:
    ada, bob = team.add("ada"), team.add("bob")
    gotcha = bob.share(GOTCHA, kind="gotcha", project="web")
    refreshed = MemRunner(ada.home, cwd)("team", "cache", "refresh")
    assert refreshed.returncode == 0, refreshed.stderr

    async def scenario(client: Any) -> None:
        found = await _call(client, "recall", query="how do I deploy to staging", project="web")
        (hit,) = found["team"]
        assert (hit["id"], hit["author"], hit["text"]) == (gotcha, "bob", GOTCHA)
        assert (hit["author_id"], hit["source"]) == (bob.key_id, "team cache")
        unrelated = await _call(client, "recall", query="haiku about autumn", project="web")
        assert unrelated["team"] == []

    _with_session(ada.home, cwd, scenario)
