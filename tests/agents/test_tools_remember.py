"""The agent's `remember` tool on a real store: a secret is always stored redacted, and the
answer says so; an agent has no way to keep one as written."""

import inspect
from pathlib import Path

from memmesh.agents.tools import Tools
from memmesh.local.store import Store

# Split so that this file does not itself look like it holds a key.
AWS_KEY_ID = "AKIA" + "TYMXMS67ANWP46I4"
GITHUB_TOKEN = "ghp" + "_R8kq2ZvX4mN7pL1sT9wY3bC6dF0gH5jK8aQe"


def test_remember_stores_a_secret_redacted_and_names_it(home: Path, store: Store) -> None:
    answer = Tools(home, store).remember(
        f"The CI deploy user's access key id is {AWS_KEY_ID}", kind="decision"
    )
    assert answer["redacted"] == ["aws-access-key-id"]
    assert "do not put secrets in memory" in answer["warning"]
    item = store.get(answer["id"])
    assert item.text == "The CI deploy user's access key id is [redacted: aws-access-key-id]"


def test_remember_drops_a_tag_holding_a_secret(home: Path, store: Store) -> None:
    answer = Tools(home, store).remember("CI publishes on tags", tags=["ci", GITHUB_TOKEN])
    assert answer["redacted"] == ["github-token"]
    assert store.get(answer["id"]).tags == ("ci",)


def test_remember_without_a_secret_answers_as_before(home: Path, store: Store) -> None:
    answer = Tools(home, store).remember("Deploys go through ops/deploy.sh", kind="convention")
    assert set(answer) == {"id", "status", "project", "reinforcements"}
    assert store.get(answer["id"]).text == "Deploys go through ops/deploy.sh"


def test_an_agent_cannot_ask_to_keep_a_secret() -> None:
    assert set(inspect.signature(Tools.remember).parameters) == {
        "self",
        "text",
        "kind",
        "project",
        "tags",
    }
