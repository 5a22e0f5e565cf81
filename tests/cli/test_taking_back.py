"""Taking back what was shared, through the real command line against a real coordinator:
a policy tightened after publishing, and forget or revise of a published item.

What a teammate sees is read from the coordinator over HTTP, as a teammate asks it; the
author's peer daemon is down throughout, so the coordinator's answer is all there is.
"""

import json
import subprocess
from typing import Any

from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.registry import open_envelope
from tests._signed import signed_client
from tests.conftest import MemRunner
from tests.team._team import TOKEN, Member, Team

LOCKS = "We chose Postgres advisory locks for the invoice scheduler"
LOCKS_QUERY = "advisory locks invoice scheduler"
REVISED = "We chose Redis leases for the invoice scheduler after all"
REVISED_QUERY = "redis leases invoice scheduler"
NOT_PUSHED = "mem: warning: teammates keep seeing the old text until `mem team sync` "


def _mem(member: Member, *args: str) -> subprocess.CompletedProcess[str]:
    """`mem ARGS` as ``member``; it must succeed, and no traceback may reach them."""
    result = MemRunner(member.home, member.home)(*args)
    assert "Traceback" not in result.stdout + result.stderr
    assert result.returncode == 0, (result.stdout, result.stderr)
    return result


def _served(team: Team, asker: Member, query: str) -> list[tuple[str, str]]:
    """(item id, text) of each hit the coordinator serves ``asker`` for ``query`` in billing."""
    assert team.coordinator is not None
    request = SearchRequest(query=query, project="billing", k=10)
    with signed_client(team.coordinator, asker.identity, team=team.team, token=TOKEN) as client:
        hits = client.post("/v1/search", request, SearchResponse).hits
    bodies = [open_envelope(hit.envelope) for hit in hits]
    return [(body.item_id, getattr(body, "text", "")) for body in bodies]


def _shared(team: Team, **policy: Any) -> tuple[Member, Member, str]:
    """ada (with ``policy``) remembers, publishes and syncs a billing decision through the
    command line; bob is her teammate. Returns both and the item id."""
    ada, bob = team.add("ada", **policy), team.add("bob")
    remembered = _mem(
        ada, "remember", LOCKS, "--kind", "decision", "--project", "billing", "--json"
    )
    item = json.loads(remembered.stdout)["id"]  # whole: the text shows it shortened
    _mem(ada, "team", "publish", item)
    _mem(ada, "team", "sync")
    assert _served(team, bob, LOCKS_QUERY) == [(item, LOCKS)]
    return ada, bob, item


def _tighten(ada: Member, **more: Any) -> None:
    """ada's team.yaml stops sharing project billing."""
    share = {"kinds": ["decision"], "projects": {"billing": False}}
    ada.write_policy(**{**ada.overrides, "share": share, **more})


# -- a policy tightened after publishing -----------------------------------------------------


def test_sync_after_tightening_retracts_the_item_and_the_coordinator_stops_serving_it(
    loopback_team: Team,
) -> None:
    ada, bob, item = _shared(loopback_team)
    _tighten(ada)
    assert _served(loopback_team, bob, LOCKS_QUERY) == [(item, LOCKS)]  # nothing has told it yet

    synced = _mem(ada, "team", "sync")

    assert synced.stdout.splitlines() == [
        "sent 1 in 1 batch: 1 accepted, 0 already known, 0 stale; 0 no longer live, not sent",
        "retracted 1 item the policy no longer allows:",
        f"    {item[:10]} [share.projects.billing: false]",
    ]
    assert _served(loopback_team, bob, LOCKS_QUERY) == []
    again = _mem(ada, "team", "sync")
    assert again.stdout.splitlines() == [
        "sent 0 in 0 batches: 0 accepted, 0 already known, 0 stale; 0 no longer live, not sent"
    ]


def test_status_and_publish_say_what_the_policy_now_withholds_until_sync(
    loopback_team: Team,
) -> None:
    ada, bob, item = _shared(loopback_team)
    other = _mem(ada, "remember", "Deploys go out on Tuesdays", "--kind", "decision")
    _tighten(ada)
    hint = "1 published item the policy now withholds: run `mem team sync`"

    status = _mem(ada, "team", "status")
    published = _mem(ada, "team", "publish", other.stdout.strip())

    assert hint in status.stdout.splitlines()
    assert published.stderr == f"mem: warning: {hint}\n"
    assert _served(loopback_team, bob, LOCKS_QUERY) == [(item, LOCKS)]  # neither sends anything
    _mem(ada, "team", "sync")
    assert hint not in _mem(ada, "team", "status").stdout.splitlines()


def test_with_auto_sync_the_next_publish_pulls_the_item_back_at_once(loopback_team: Team) -> None:
    ada, bob, item = _shared(loopback_team, auto_sync=True)
    other = _mem(ada, "remember", "Deploys go out on Tuesdays", "--kind", "decision")
    _tighten(ada)

    published = _mem(ada, "team", "publish", other.stdout.strip())

    assert published.stderr == (
        f"mem: warning: auto-sync retracted 1 item the policy no longer allows: {item}\n"
    )
    assert _served(loopback_team, bob, LOCKS_QUERY) == []


def test_loosening_the_policy_again_shares_nothing_until_published_again(
    loopback_team: Team,
) -> None:
    ada, bob, item = _shared(loopback_team)
    _tighten(ada)
    _mem(ada, "team", "sync")
    ada.write_policy(auto_sync=False)  # billing is shared again

    _mem(ada, "team", "sync")
    assert _served(loopback_team, bob, LOCKS_QUERY) == []
    republished = _mem(ada, "team", "publish", item, "--again")
    assert republished.stdout.startswith(f"published  v2  {item[:10]}  ")
    _mem(ada, "team", "sync")
    assert _served(loopback_team, bob, LOCKS_QUERY) == [(item, LOCKS)]


# -- forget and revise of a published item ---------------------------------------------------


def test_forget_with_auto_sync_stops_the_coordinator_serving_it_at_once(
    loopback_team: Team,
) -> None:
    ada, bob, item = _shared(loopback_team, auto_sync=True)

    forgotten = _mem(ada, "forget", item)

    assert forgotten.stderr == ""
    assert _served(loopback_team, bob, LOCKS_QUERY) == []


def test_revise_with_auto_sync_serves_neither_text_until_the_revision_is_published(
    loopback_team: Team,
) -> None:
    ada, bob, item = _shared(loopback_team, auto_sync=True)

    revised = _mem(ada, "revise", item, REVISED, "--json")

    new = json.loads(revised.stdout)["id"]
    assert _warnings(revised) == [
        (
            f"the revision is not shared until you publish it: `mem team publish {new}`",
            "revision_unshared",
        )
    ]
    assert _served(loopback_team, bob, LOCKS_QUERY) == []
    assert _served(loopback_team, bob, REVISED_QUERY) == []
    _mem(ada, "team", "publish", new)
    assert _served(loopback_team, bob, REVISED_QUERY) == [(new, REVISED)]


def test_forget_without_auto_sync_says_teammates_keep_seeing_it_until_sync(
    loopback_team: Team,
) -> None:
    ada, bob, item = _shared(loopback_team)

    forgotten = _mem(ada, "forget", item)

    assert forgotten.stderr == NOT_PUSHED + "(auto_sync is off)\n"
    assert _served(loopback_team, bob, LOCKS_QUERY) == [(item, LOCKS)]
    _mem(ada, "team", "sync")
    assert _served(loopback_team, bob, LOCKS_QUERY) == []


def test_revise_without_auto_sync_says_so_and_that_the_revision_is_not_shared(
    loopback_team: Team,
) -> None:
    ada, bob, item = _shared(loopback_team)

    revised = _mem(ada, "revise", item, REVISED, "--json")

    new = json.loads(revised.stdout)["id"]
    assert _warnings(revised) == [  # with --json, each warning is one JSON line on stderr
        (NOT_PUSHED.removeprefix("mem: warning: ") + "(auto_sync is off)", "auto_sync"),
        (
            f"the revision is not shared until you publish it: `mem team publish {new}`",
            "revision_unshared",
        ),
    ]
    _mem(ada, "team", "sync")
    assert _served(loopback_team, bob, LOCKS_QUERY) == []


def test_forget_of_a_private_item_says_nothing_about_teammates(loopback_team: Team) -> None:
    ada = loopback_team.add("ada")
    item = _mem(ada, "remember", LOCKS, "--kind", "decision").stdout.strip()
    assert _mem(ada, "forget", item).stderr == ""
    revised = _mem(ada, "revise", _mem(ada, "remember", "Deploys are on Tuesdays").stdout.strip(),
                   "Deploys are on Wednesdays")  # fmt: skip
    assert revised.stderr == ""


def _warnings(result: subprocess.CompletedProcess[str]) -> list[tuple[str, str]]:
    """The (warning, code) of each JSON line a ``--json`` command printed on stderr."""
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    return [(line["warning"], line["code"]) for line in lines]
