"""The team commands show the member's own items by the short id the local commands show
(`mem show` takes it), a teammate's by its whole id; ``--json`` gives every id whole."""

from pathlib import Path

import pytest

from memmesh.local.store import Store
from tests.cli._output import json_of
from tests.conftest import MemRunner
from tests.team._team import LOCKS, Team, ask

pytestmark = pytest.mark.usefixtures("team_token")

CACHE = "The CI cache must be keyed on the lockfile hash"
DEPLOYS = "Deploys go through the blue-green script"


def _output(mem: MemRunner, *args: str) -> list[str]:
    result = mem(*args)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_team_commands_show_the_members_own_items_by_their_short_ids(roster_team: Team) -> None:
    ada, bob = roster_team.members["ada"], roster_team.members["bob"]
    ada.write_policy(auto_sync=False)
    deploys = bob.share(DEPLOYS)
    locks, cache = ada.remember(LOCKS), ada.remember(CACHE)
    with Store(ada.home) as store:
        short = store.short_ids([locks, cache])
    mem = MemRunner(ada.home, Path.cwd())

    assert _output(mem, "team", "publish", locks, cache) == [
        f"published  v1  {short[locks]}  [share.kinds: decision]",
        f"published  v1  {short[cache]}  [share.kinds: decision]",
    ]
    assert _output(mem, "team", "sync")[0].startswith("sent 2 in 1 batch: 2 accepted")
    ask(bob, "which locks does the job scheduler use")
    # The coordinator sends what passes the gate (the cache item too); bob's ranking chooses.
    served = _output(mem, "team", "disclosures")
    assert any(f"  {short[locks]}  to bob ({bob.key_id})  via coordinator" in s for s in served)
    assert _output(mem, "team", "retract", cache) == [f"retracted  v1  {short[cache]}"]

    status = _output(mem, "team", "status")
    assert status[0].endswith("; 1 registry entry awaiting sync")
    assert status[-1] == (
        f"retractions without the coordinator's receipt: 1 ({short[cache]}); "
        "`mem team sync` asks again"
    )
    assert [line.split(maxsplit=2)[2] for line in _output(mem, "team", "log")] == [
        f"publication v1  {short[locks]}",
        f"publication v1  {short[cache]}",
        f"retraction  v1  {short[cache]}",
    ]
    assert _output(mem, "team", "sync")[0].startswith("sent 1 in 1 batch: 1 accepted")
    # A teammate's item is not in this store: its whole id is what names it.
    feed = [line.split("  ")[1:4] for line in _output(mem, "team", "feed")]
    assert feed == [
        ["ada", "retracted v1", short[cache]],
        ["ada", "published v1", short[locks]],
        ["bob", "published v1", deploys],
    ]

    entries = json_of(mem("team", "log", "--json"))["entries"]
    assert [entry["item_id"] for entry in entries] == [locks, cache, cache]
    listed = json_of(mem("team", "feed", "--json"))["entries"]
    assert [entry["item_id"] for entry in listed] == [cache, locks, deploys]
