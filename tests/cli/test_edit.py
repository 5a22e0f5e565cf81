"""`mem edit`: an item's kind, tags and project changed in place, through the real command
line; and what an edit of a published item means for teammates."""

from pathlib import Path
from typing import Any

from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner
from tests.team._team import Team

WEBHOOKS = "The billing service retries webhooks 5 times"
LOCKS = "We chose Postgres advisory locks for the invoice scheduler"


def _made(mem: MemRunner, text: str, *args: str) -> tuple[str, str]:
    """Remember ``text``: the full id and the id shown."""
    full: str = json_of(mem("remember", text, "--json", *args))["id"]
    return full, full[:10]


def _item(mem: MemRunner, item_id: str) -> dict[str, Any]:
    item: dict[str, Any] = json_of(mem("show", item_id, "--json"))["item"]
    return item


def test_edit_changes_kind_and_tags_in_place_under_the_same_id(mem: MemRunner) -> None:
    full, shown = _made(mem, WEBHOOKS, "--tag", "ci", "--tag", "billing")

    edited = mem("edit", shown, "--kind", "decision", "--tag", "Docker", "--untag", "ci")

    assert (edited.returncode, edited.stderr) == (0, "")
    assert edited.stdout == (
        f"edited {shown}: kind decision (was fact), tags billing, docker (was ci, billing)\n"
    )
    item = _item(mem, full)
    assert (item["kind"], item["tags"], item["status"]) == (
        "decision",
        ["billing", "docker"],
        "active",
    )
    assert item["text"] == WEBHOOKS
    everything = json_of(mem("list", "--status", "all", "--json"))["items"]
    assert [each["id"] for each in everything] == [full]  # no new version, nothing superseded

    data = json_of(mem("edit", shown, "--untag", "docker", "--json"))
    assert data["id"] == full
    assert data["status"] == "edited"
    assert data["changed"] == {"tags": [["billing", "docker"], ["billing"]]}
    assert data["item"]["tags"] == ["billing"]


def test_edit_moves_an_item_to_another_project_and_recall_follows_it(mem: MemRunner) -> None:
    full, shown = _made(mem, WEBHOOKS, "--project", "shop")

    moved = mem("edit", shown, "--project", "billing")

    assert moved.stdout == f"edited {shown}: project billing (was shop)\n"
    query = ("recall", "how often are webhooks retried", "--json")
    assert [h["id"] for h in json_of(mem(*query, "--project", "billing"))["hits"]] == [full]
    assert json_of(mem(*query, "--project", "shop"))["hits"] == []
    assert (
        mem("edit", shown, "--global").stdout == f"edited {shown}: project global (was billing)\n"
    )
    assert [h["id"] for h in json_of(mem(*query, "--project", "shop"))["hits"]] == [full]


def test_edit_that_changes_nothing_says_so(mem: MemRunner) -> None:
    _, shown = _made(mem, WEBHOOKS, "--kind", "gotcha", "--tag", "ci")
    same = mem("edit", shown, "--kind", "gotcha", "--tag", "ci")
    assert (same.returncode, same.stdout, same.stderr) == (0, f"unchanged {shown}\n", "")


def test_edit_leaves_out_a_tag_holding_a_secret_as_remember_does(mem: MemRunner) -> None:
    full, shown = _made(mem, WEBHOOKS)
    token = "ghp" + "_R8kq2ZvX4mN7pL1sT9wY3bC6dF0gH5jK8aQe"
    edited = mem("edit", shown, "--tag", token, "--tag", "ci")
    assert (edited.returncode, edited.stdout) == (0, f"edited {shown}: tags ci (was none)\n")
    assert edited.stderr == "mem: warning: left out a secret (github-token) given as a tag\n"
    assert _item(mem, full)["tags"] == ["ci"]


def test_edit_refuses_what_it_cannot_do_and_changes_nothing(mem: MemRunner) -> None:
    full, shown = _made(mem, WEBHOOKS, "--tag", "ci")
    _made(mem, WEBHOOKS, "--project", "billing")

    refusals = [
        ((shown,), 2, "nothing to change: give --kind, --tag, --untag, --project or --global "
         "(see `mem edit --help`)"),
        ((shown, "--untag", "docker"), 2, f"item {full} has no tag 'docker'"),
        ((shown, "--tag", "x", "--untag", "x"), 2, "tag 'x' is both added and removed"),
        ((shown, "--tag", "no way"), 2, "tag 'no way' is not a valid name (1-64 letters, "
         "digits, '.', '-' or '_', starting with a letter or digit)"),
        ((shown, "--project", "billing"), 2, f"item {full} says the same as an active item of "
         "project billing; forget one of them first"),
    ]  # fmt: skip
    for args, code, message in refusals:
        refused = mem("edit", *args)
        assert refused.returncode == code, refused.stderr
        assert error_line(refused) == f"mem: error: {message}"
    kind = mem("edit", shown, "--kind", "rumour")
    assert kind.returncode == 2
    assert "argument --kind: invalid choice: 'rumour'" in error_line(kind)
    assert _item(mem, full)["tags"] == ["ci"]

    mem("forget", shown)
    archived = mem("edit", shown, "--kind", "decision")
    assert archived.returncode == 1
    assert error_line(archived) == (
        f"mem: error: item {full} is archived; only active items can be changed"
    )


def test_edit_of_a_published_item_says_what_teammates_see_until_it_is_published_again(
    tmp_path: Path,
) -> None:
    # A coordinator named but never contacted: edit neither pushes nor retracts anything.
    ada = Team(tmp_path, "http://127.0.0.1:9").add("ada")
    mem = MemRunner(ada.home, tmp_path)
    item_id = ada.remember(LOCKS, kind="decision", project="billing")
    shown = item_id[:10]
    ada.publish(item_id)

    tagged = mem("edit", shown, "--tag", "scheduler")
    assert (tagged.returncode, tagged.stdout) == (
        0, f"edited {shown}: tags scheduler (was none)\n"
    )  # fmt: skip
    assert tagged.stderr == (
        f"mem: warning: {shown} is published: teammates see it as it was until you publish it "
        f"again (`mem team publish {shown}`)\n"
    )

    private = mem("edit", shown, "--kind", "preference")
    assert private.stderr == (
        f"mem: warning: {shown} is published, and team.yaml does not share it as edited "
        "(share.kinds: preference is not shared): the next `mem team sync` retracts it\n"
    )
    with ada.registry() as registry:
        assert list(registry.live()) == [item_id]  # nothing was taken back yet

    unpublished = mem("remember", "Deploys go out on Tuesdays", "--kind", "decision")
    plain = mem("edit", unpublished.stdout.strip(), "--tag", "deploys")
    assert (plain.returncode, plain.stderr) == (0, "")
