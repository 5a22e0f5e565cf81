"""A teammate's anchored item in the asker's own checkout: `mem team recall-team`, run inside
a checkout of the hit's project, says that the item may be stale there once the anchored file
changed in it; elsewhere it says nothing, and the author's folder never reaches the asker."""

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memmesh.local.anchors import anchor_file, save
from memmesh.local.store import Store
from tests.cli._output import json_of
from tests.conftest import MemRunner
from tests.team._team import Member, Team, team_on_loopback

TEXT = "retry() in the billing worker gives up after 3 attempts"
QUERY = "how many attempts does retry make in the billing worker"
SOURCE = "def retry():\n    return 3\n"

pytestmark = pytest.mark.usefixtures("team_token")


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    with team_on_loopback(tmp_path) as members:
        yield members


def _checkout(folder: Path) -> Path:
    """A git checkout named billing, holding worker.py as both members first had it."""
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (folder / "worker.py").write_text(SOURCE)
    return folder


def _share_anchored(ada: Member, checkout: Path) -> str:
    item_id = ada.remember(TEXT, kind="gotcha", project="billing")
    with Store(ada.home, author=ada.name) as store, store.transaction() as tx:
        save(tx, item_id, [anchor_file(checkout, "worker.py", 0, 0, store.clock())])
    ada.publish(item_id)
    ada.sync()
    return item_id


def _ask(member: Member, cwd: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return MemRunner(member.home, cwd)("team", "recall-team", QUERY, "-k", "5", *options)


def _hit(data: dict[str, Any], item_id: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [hit for hit in data["hits"] if hit["id"] == item_id]
    (hit,) = found
    return hit


def test_a_teammate_s_item_may_be_stale_in_the_asker_s_checkout_once_its_file_changed(
    team: Team, tmp_path: Path
) -> None:
    ada, carol = team.add("ada"), team.add("carol")
    item_id = _share_anchored(ada, _checkout(tmp_path / "ada-secret-folder" / "billing"))
    mine = _checkout(tmp_path / "carol" / "billing")

    fresh = json_of(_ask(carol, mine, "--json"))
    assert _hit(fresh, item_id)["stale"] == []
    assert [a["path"] for a in _hit(fresh, item_id)["anchors"]] == ["worker.py"]

    (mine / "worker.py").write_text("def retry():\n    return settings.ATTEMPTS\n")

    stale = json_of(_ask(carol, mine, "--json"))
    (changed,) = _hit(stale, item_id)["stale"]
    assert (changed["path"], changed["gone"]) == ("worker.py", False)
    assert "ada-secret-folder" not in str(stale)
    text = _ask(carol, mine).stdout.splitlines()
    [at] = [n for n, line in enumerate(text) if TEXT in line]
    assert text[at + 1].startswith("   in your checkout, may be stale: worker.py changed since ")


def test_outside_a_checkout_of_the_project_nothing_is_looked_at(team: Team, tmp_path: Path) -> None:
    ada, carol = team.add("ada"), team.add("carol")
    item_id = _share_anchored(ada, _checkout(tmp_path / "ada" / "billing"))
    other = _checkout(tmp_path / "carol" / "web")  # another project's checkout, same file name
    (other / "worker.py").write_text("nothing alike\n")

    elsewhere = json_of(_ask(carol, other, "--project", "billing", "--json"))

    assert _hit(elsewhere, item_id)["stale"] == []
    assert "in your checkout" not in _ask(carol, other, "--project", "billing").stdout
