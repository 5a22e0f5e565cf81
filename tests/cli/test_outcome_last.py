"""`mem outcome --last`: an agent (or its developer) credits what the newest recall returned
without repeating ids, through the real command line."""

import json
from pathlib import Path

from memmesh.local.store import Store
from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner

DEPLOYS = "Deploys go through the blue-green script in ops/deploy.sh"
ROLLBACK = "Roll back a bad deploy with ops/rollback.sh, never by hand"
COFFEE = "The office coffee machine is descaled on Fridays"


def _remember(mem: MemRunner, text: str) -> str:
    item_id: str = json_of(mem("remember", text, "--json"))["id"]
    return item_id


def test_last_credits_every_item_the_newest_recall_returned_and_nothing_else(
    mem: MemRunner, home: Path
) -> None:
    deploys, rollback, coffee = (_remember(mem, t) for t in (DEPLOYS, ROLLBACK, COFFEE))
    recalled = json_of(mem("recall", "which ops scripts do deploys use", "--json"))
    returned = [hit["id"] for hit in recalled["hits"]]
    assert coffee not in returned
    assert deploys in returned

    result = mem("outcome", "--last", "worked")

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "worked, for what `which ops scripts do deploys use` returned:"
    assert len(lines) == 1 + len(returned)
    with Store(home) as store:
        worked = {item.id: item.worked for item in store.items()}
    assert {i for i, count in worked.items() if count} == set(returned)
    assert worked[coffee] == 0.0
    assert rollback in worked


def test_last_with_json_names_the_trace_and_each_item_credited(mem: MemRunner) -> None:
    deploys = _remember(mem, DEPLOYS)
    recalled = json_of(mem("recall", "which script do deploys go through", "-k", "1", "--json"))

    data = json_of(mem("--json", "outcome", "--last", "failed"))

    assert data["trace"] == recalled["trace"]
    assert [each["id"] for each in data["credited"]] == [deploys]
    assert data["credited"][0]["outcome_score"] < 0


def test_last_before_any_recall_is_an_input_error_that_says_to_give_the_id(
    mem: MemRunner, home: Path
) -> None:
    _remember(mem, DEPLOYS)

    result = mem("outcome", "--last", "worked")

    assert result.returncode == 2
    assert error_line(result) == (
        "mem: error: the newest recall returned nothing to credit; give the item's id instead"
    )
    with Store(home) as store:
        assert [item.worked for item in store.items()] == [0.0]


def test_an_id_and_last_together_or_neither_is_a_usage_error(mem: MemRunner) -> None:
    deploys = _remember(mem, DEPLOYS)

    for args in (("outcome", deploys, "worked", "--last"), ("outcome", "worked")):
        result = mem(*args)
        assert result.returncode == 2
        assert error_line(result) == (
            "mem: error: give an item's id, or --last (not both) (see `mem outcome --help`)"
        )


def test_last_after_the_prompt_hook_credits_what_the_hook_showed(mem: MemRunner) -> None:
    coffee = _remember(mem, COFFEE)
    deploys = json_of(mem("remember", DEPLOYS, "--project", "web", "--json"))["id"]
    assert json_of(mem("recall", "when is the coffee machine descaled", "--json"))["hits"]
    hook_input = json.dumps({"prompt": "Which script do our deploys go through?", "cwd": "/"})
    shown = mem("hook", "prompt", "--client", "claude", stdin=hook_input,
                env={"MEM_PROJECT": "web"})  # fmt: skip
    assert DEPLOYS in shown.stdout

    data = json_of(mem("--json", "outcome", "--last", "worked"))

    assert data["from"] == "prompt"
    assert [each["id"] for each in data["credited"]] == [deploys]
    assert coffee not in [each["id"] for each in data["credited"]]
