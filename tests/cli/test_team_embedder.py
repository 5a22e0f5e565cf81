"""One vector space per team, through the real command line: `mem team join` puts the store in
the team's embedder's space, and `status`, `publish` and `recall-team` say when it is not."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from memmesh.local.store import Store
from memmesh.registry import create_identity
from tests.cli._output import json_of
from tests.cli._standin import StandIn, serving
from tests.conftest import MemRunner
from tests.embed.test_static import requires_static

TEAM_YAML = "version: 1\nteam: acme\nidentity:\n  name: bob\nembedder: wordllama\n"
SWITCH = "run `mem reindex --embedder wordllama`"


@pytest.fixture
def standin() -> Iterator[StandIn]:
    with serving(StandIn()) as running:
        yield running


def _bob(tmp_path: Path, *texts: str) -> MemRunner:
    """bob's home before he joins: a team.yaml naming WordLlama, a hashing store of ``texts``."""
    home = tmp_path / "bob"
    with Store(home, embedder="hashing") as store:
        for text in texts:
            store.remember(text)
    (home / "team.yaml").write_text(TEAM_YAML, encoding="utf-8")
    (tmp_path / "cwd").mkdir(exist_ok=True)
    return MemRunner(home, tmp_path / "cwd")


def _without_static(tmp_path: Path) -> dict[str, str]:
    """An environment where the static extra's package cannot be imported."""
    hidden = tmp_path / "without-static" / "wordllama"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('not installed here')\n")
    paths = [str(hidden.parent), os.environ.get("PYTHONPATH", "")]
    return {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}


@requires_static
def test_join_re_embeds_the_store_with_the_teams_embedder_saying_how_far_it_is(
    standin: StandIn, tmp_path: Path
) -> None:
    bob = _bob(tmp_path, "We chose Postgres advisory locks", "The frontend builds with pnpm")

    joined = bob("team", "join", standin.code("bob"))

    assert joined.returncode == 0, joined.stderr
    assert joined.stderr.splitlines()[0] == "re-embedded 2/2"
    assert joined.stderr.splitlines()[-1] == (
        "your store now uses the team's embedder, wordllama, 2 items re-embedded"
    )
    with Store(bob.home) as store:
        assert store.embedder.name == "wordllama"


@requires_static
def test_join_where_the_teams_embedder_is_missing_completes_and_says_what_to_do(
    standin: StandIn, tmp_path: Path
) -> None:
    bob = _bob(tmp_path, "We chose Postgres advisory locks")

    joined = bob("team", "join", standin.code("bob"), env=_without_static(tmp_path))
    as_json = _bob(tmp_path / "again")("team", "join", standin.code("bob"), "--json",
                                       env=_without_static(tmp_path / "again"))  # fmt: skip

    assert joined.returncode == 0, joined.stderr
    assert joined.stderr.splitlines()[-1] == (
        "the team's embedder is wordllama, and the 'wordllama' embedder needs an optional "
        f"extra: pip install 'memmesh[static]'; then {SWITCH} to switch your store to it"
    )
    with Store(bob.home) as store:
        assert store.embedder.name == "hashing"
    assert json_of(as_json)["embedder"] == {
        "name": "wordllama",
        "before": "hashing",
        "reindexed": None,
        "missing": "the 'wordllama' embedder needs an optional extra: pip install "
        f"'memmesh[static]'; then {SWITCH} to switch your store to it",
    }
    assert as_json.stderr == ""


def test_status_publish_and_recall_team_say_when_the_store_is_not_in_the_teams_space(
    tmp_path: Path,
) -> None:
    bob = _bob(tmp_path, "We chose Postgres advisory locks")
    create_identity(bob.home)
    warning = (
        "mem: warning: your store uses the hashing embedder, but team.yaml names wordllama "
        "for the team: teammates' answers are ranked here by words alone, and what you "
        f"publish is embedded again by the coordinator, until you {SWITCH}"
    )

    status = bob("team", "status")
    as_json = json_of(bob("team", "status", "--json"))
    published = bob("team", "publish", "--eligible", "--dry-run")
    asked = bob("team", "recall-team", "which locks do we use", "--timeout", "0.5")

    assert warning.removeprefix("mem: warning: ") in status.stdout.splitlines()
    assert (as_json["store_embedder"], as_json["team_embedder"]) == ("hashing", "wordllama")
    assert as_json["embedder_mismatch"] == warning.removeprefix("mem: warning: ")
    for result in (published, asked):
        assert result.stderr.splitlines().count(warning) == 1, result.stderr
