"""`mem show`, `list`, `forget`, `revise` and `outcome` through the real command line."""

import re
from typing import Any

import pytest

from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner

SHORT = re.compile(r"[0-9A-HJKMNP-TV-Z]{10}")  # the id shown: see tests/cli/test_ids.py
WEBHOOKS = "The billing service retries webhooks 5 times"


def _remember(mem: MemRunner, text: str, *args: str) -> dict[str, Any]:
    item: dict[str, Any] = json_of(mem("remember", text, "--json", *args))["item"]
    return item


def _listed(mem: MemRunner, *args: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json_of(mem("list", "--json", *args))["items"]
    return items


# -- show ------------------------------------------------------------------------------------


def test_show_prints_the_whole_item_as_json_and_as_text(mem: MemRunner) -> None:
    item = _remember(mem, WEBHOOKS, "--kind", "decision", "--project", "shop", "--tag", "ci")

    # Nobody else has reported on it: its teammates' record is all zeros (and not printed).
    teammates = {"worked": 0, "failed": 0, "partial": 0}
    whole = json_of(mem("show", item["id"], "--json"))
    assert whole == {"item": item, "teammates": teammates, "about": []}

    # A lower-case prefix of at least 4 characters is enough.
    shown = mem("show", item["id"][:10].lower())
    assert shown.returncode == 0
    assert shown.stderr == ""
    assert shown.stdout.splitlines() == [
        f"id:             {item['id']}",
        f"text:           {WEBHOOKS}",
        "kind:           decision",
        "project:        shop",
        "tags:           ci",
        "author:         tester",
        "status:         active",
        f"created:        {item['created_at']}",
        f"updated:        {item['updated_at']}",
        "reinforcements: 0",
        "outcomes:       worked 0.00, failed 0.00, partial 0.00 (score +0.00)",
    ]


# -- list ------------------------------------------------------------------------------------


def test_list_is_newest_first_and_filters_by_project_kind_and_limit(mem: MemRunner) -> None:
    empty = mem("list")
    assert (empty.returncode, empty.stdout, empty.stderr) == (0, "no items\n", "")

    fact = _remember(mem, WEBHOOKS, "--project", "shop")
    decision = _remember(mem, "We chose Postgres advisory locks", "--kind", "decision", "--global")
    other = _remember(mem, "Run tests with make test", "--kind", "command", "--project", "shop")

    text = mem("list")
    assert text.returncode == 0
    assert text.stdout.splitlines() == [
        f"{other['id'][:10]}  [command, shop, active]  Run tests with make test",
        f"{decision['id'][:10]}  [decision, global, active]  We chose Postgres advisory locks",
        f"{fact['id'][:10]}  [fact, shop, active]  {WEBHOOKS}",
    ]

    data = json_of(mem("list", "--json", "--project", "shop"))
    assert set(data) == {"items"}
    assert data["items"] == [other, fact]  # the project only; global items are not mixed in
    assert _listed(mem, "--kind", "decision", "--limit", "5") == [decision]
    assert _listed(mem, "--limit", "1") == [other]


def test_list_cuts_a_long_item_short_and_says_how_to_see_it_whole(mem: MemRunner) -> None:
    long = " ".join(f"step {n}: retry the webhook" for n in range(60))
    lines = "\n".join(f"line {n} of the runbook" for n in range(1, 6))
    short = "Run the tests with make test"
    first = json_of(mem("remember", "-", "--json", stdin=long))["item"]
    second = json_of(mem("remember", "-", "--json", stdin=lines))["item"]
    third = _remember(mem, short)

    listed = mem("list")

    assert listed.returncode == 0, listed.stderr
    # At most 300 characters or 3 lines of each item, then how big it is and how to see it.
    assert listed.stdout.splitlines() == [
        f"{third['id'][:10]}  [fact, global, active]  {short}",
        f"{second['id'][:10]}  [fact, global, active]  line 1 of the runbook",
        "line 2 of the runbook",
        f"line 3 of the runbook\u2026 (109 bytes; `mem show {second['id'][:10]}` for all)",
        f"{first['id'][:10]}  [fact, global, active]  {long[:300].rstrip()}"
        f"\u2026 ({len(long):,} bytes; `mem show {first['id'][:10]}` for all)",
    ]
    # --json and mem show give every item whole.
    assert [item["text"] for item in _listed(mem)] == [short, lines, long]
    assert f"text:           {long}" in mem("show", first["id"]).stdout.splitlines()


def test_list_refuses_a_negative_limit(mem: MemRunner) -> None:
    refused = mem("list", "--limit", "-1")
    assert refused.returncode == 2
    assert " error: argument " in error_line(refused)


# -- forget ----------------------------------------------------------------------------------


def test_forget_archives_the_item_so_it_is_never_recalled(mem: MemRunner) -> None:
    kept = _remember(mem, "Webhook retries use exponential backoff")
    gone = _remember(mem, WEBHOOKS)

    forgotten = json_of(mem("forget", gone["id"], "--json"))
    assert set(forgotten) == {"id", "status", "item"}
    assert (forgotten["id"], forgotten["status"]) == (gone["id"], "archived")
    assert forgotten["item"]["status"] == "archived"

    hits = json_of(mem("recall", "webhooks retries", "--json"))["hits"]
    assert [hit["id"] for hit in hits] == [kept["id"]]
    assert [item["id"] for item in _listed(mem)] == [kept["id"]]
    assert [item["id"] for item in _listed(mem, "--status", "archived")] == [gone["id"]]

    text = mem("forget", kept["id"][:12])
    assert (text.returncode, text.stdout, text.stderr) == (0, f"archived {kept['id'][:10]}\n", "")

    again = mem("forget", gone["id"])
    assert again.returncode == 1
    assert error_line(again) == (
        f"mem: error: item {gone['id']} is archived; only active items can be changed"
    )


# -- revise ----------------------------------------------------------------------------------


def test_revise_supersedes_the_old_item_and_recall_finds_only_the_new(mem: MemRunner) -> None:
    old = _remember(mem, WEBHOOKS, "--kind", "decision", "--project", "shop", "--tag", "ci")
    revised_text = "The billing service retries webhooks 8 times"

    revised = json_of(mem("revise", old["id"], revised_text, "--json"))
    assert set(revised) >= {"id", "status", "superseded", "item"}
    assert (revised["status"], revised["superseded"]) == ("revised", old["id"])
    new = revised["item"]
    assert new["id"] == revised["id"] != old["id"]
    assert (new["text"], new["supersedes"]) == (revised_text, old["id"])
    assert (new["kind"], new["project"], new["tags"]) == ("decision", "shop", ["ci"])

    history = json_of(mem("show", old["id"], "--json"))["item"]
    assert (history["status"], history["superseded_by"]) == ("superseded", new["id"])

    hits = json_of(mem("recall", "how often are webhooks retried", "--project", "shop", "--json"))
    assert [hit["id"] for hit in hits["hits"]] == [new["id"]]

    stale = mem("revise", old["id"], "The billing service retries webhooks 9 times")
    assert stale.returncode == 1
    assert error_line(stale) == (
        f"mem: error: item {old['id']} is superseded; only active items can be changed"
    )

    same = mem("revise", new["id"], revised_text)
    assert same.returncode == 2
    assert error_line(same) == f"mem: error: the new text of {new['id']} is the same as the old one"

    too_long = mem("revise", new["id"], "z" * 9 * 1024)
    assert too_long.returncode == 2
    assert error_line(too_long).startswith("mem: error: text is 9216 bytes; the limit is 8192")

    # In text mode revise prints only the new id, as every command shows ids.
    again = mem("revise", new["id"][:12], "The billing service retries webhooks 10 times")
    assert again.returncode == 0
    assert again.stderr == ""
    newest = again.stdout.strip()
    assert SHORT.fullmatch(newest)
    assert again.stdout == newest + "\n"
    assert [item["id"][:10] for item in _listed(mem)] == [newest]


# -- outcome ---------------------------------------------------------------------------------


def test_outcome_reports_the_score_and_failing_items_drop_out_of_recall(mem: MemRunner) -> None:
    good = _remember(mem, "Run the integration tests with make test-int")
    bad = _remember(mem, "Run the unit tests with make test-unit")

    worked = mem("outcome", good["id"], "worked")
    assert (worked.returncode, worked.stderr) == (0, "")
    assert worked.stdout == f"{good['id'][:10]}: score +0.33\n"

    once = json_of(mem("outcome", bad["id"], "failed", "--json"))
    assert set(once) == {"id", "outcome_score", "item"}
    assert once["id"] == bad["id"]
    assert once["outcome_score"] == pytest.approx(-1.5 / 3.5, abs=1e-4)
    assert once["item"]["failed"] == pytest.approx(1.0, abs=1e-3)

    twice = mem("outcome", bad["id"], "failed")
    assert twice.stdout == (
        f"{bad['id'][:10]}: score -0.60 (left out of recall until its failures fade)\n"
    )

    hits = json_of(mem("recall", "how do I run the tests", "--json"))["hits"]
    assert [hit["id"] for hit in hits] == [good["id"]]

    wrong = mem("outcome", good["id"], "great")
    assert wrong.returncode == 2
    assert wrong.stdout == ""
    assert "argument result: invalid choice: 'great'" in wrong.stderr.splitlines()[-1]
