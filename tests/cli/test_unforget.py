"""`mem unforget`: a forgotten item brought back, through the real command line; and the items
it cannot bring back, each with the reason."""

from pathlib import Path

from memmesh.local.store import Store
from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner
from tests.team._team import Team

WEBHOOKS = "The billing service retries webhooks 5 times"
QUERY = ("recall", "how often are webhooks retried", "--json")


def _made(mem: MemRunner, text: str, *args: str) -> str:
    item_id: str = json_of(mem("remember", text, "--json", *args))["id"]
    return item_id


def _recalled(mem: MemRunner) -> list[str]:
    return [hit["id"] for hit in json_of(mem(*QUERY))["hits"]]


def test_unforget_brings_a_forgotten_item_back_into_recall(mem: MemRunner) -> None:
    full = _made(mem, WEBHOOKS)
    shown = full[:10]
    mem("forget", shown)
    assert _recalled(mem) == []

    back = mem("unforget", shown)

    assert (back.returncode, back.stdout, back.stderr) == (0, f"restored {shown}\n", "")
    assert _recalled(mem) == [full]
    assert json_of(mem("show", full, "--json"))["item"]["status"] == "active"
    again = json_of(mem("forget", shown, "--json"))
    assert again["status"] == "archived"
    data = json_of(mem("unforget", shown, "--json"))
    assert (data["id"], data["status"], data["item"]["status"]) == (full, "active", "active")
    assert json_of(mem("stats", "--json"))["journal"]["events"]["unforget"] == 2


def test_unforget_refuses_a_revised_item_and_names_the_one_that_replaced_it(
    mem: MemRunner,
) -> None:
    old = _made(mem, WEBHOOKS)
    new = json_of(mem("revise", old, "The billing service retries webhooks 8 times", "--json"))

    refused = mem("unforget", old[:10])

    assert refused.returncode == 1
    assert error_line(refused) == (
        f"mem: error: item {old} was revised, not forgotten: {new['id']} replaced it "
        "(revise that one to change the text again)"
    )
    assert _recalled(mem) == [new["id"]]


def test_unforget_refuses_an_active_item(mem: MemRunner) -> None:
    full = _made(mem, WEBHOOKS)
    refused = mem("unforget", full[:10])
    assert refused.returncode == 1
    assert error_line(refused) == f"mem: error: item {full} is active: nothing to bring back"


def test_unforget_refuses_when_an_active_item_says_the_same(mem: MemRunner) -> None:
    first = _made(mem, WEBHOOKS)
    mem("forget", first)
    second = _made(mem, WEBHOOKS)  # not a reinforcement: the first was forgotten
    assert second != first

    refused = mem("unforget", first)

    assert refused.returncode == 1
    assert error_line(refused) == (
        f"mem: error: item {first} says the same as active item {second}: nothing to bring back"
    )


def test_unforget_refuses_an_erased_item(mem: MemRunner, home: Path) -> None:
    full = _made(mem, WEBHOOKS)
    with Store(home, author="tester") as store:
        store.purge(full)
    refused = mem("unforget", full)
    assert refused.returncode == 1
    assert error_line(refused) == (
        f"mem: error: item {full} was erased (its text is gone): nothing to bring back"
    )


def test_unforget_of_a_published_item_says_its_retraction_stands(tmp_path: Path) -> None:
    ada = Team(tmp_path, "http://127.0.0.1:9").add("ada")
    mem = MemRunner(ada.home, tmp_path)
    item_id = ada.remember(WEBHOOKS, kind="decision", project="billing")
    ada.publish(item_id)
    assert mem("forget", item_id).returncode == 0  # its retraction is queued for a sync

    back = mem("unforget", item_id)

    assert (back.returncode, back.stdout) == (0, f"restored {item_id[:10]}\n")
    assert back.stderr == (
        "mem: warning: its publication stays retracted: teammates do not see it again "
        "unless you publish it again\n"
    )
    with ada.registry() as registry:
        assert registry.live() == {}
