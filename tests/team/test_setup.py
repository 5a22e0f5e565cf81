"""`join_team`: a member's key and a team.yaml to start from, in a real home folder."""

import json
import stat
from pathlib import Path

import pytest

from memmesh import embed
from memmesh.embed import DEFAULT_EMBEDDER
from memmesh.local import recall
from memmesh.local.store import Store
from memmesh.policy import Policy, load_policy, parse_policy
from memmesh.registry import IdentityExists, load_identity
from memmesh.team.setup import TeamEmbedder, join_team, use_team_embedder
from tests.embed.test_static import requires_static

COORDINATOR = "http://127.0.0.1:8400"


def test_joining_writes_a_private_key_and_a_policy_sharing_nothing(home: Path) -> None:
    joined = join_team(home, name="ada", team="acme")
    assert joined.member_id == load_identity(home).key_id
    assert joined.public_key == load_identity(home).public_key_text
    assert (joined.name, joined.team) == ("ada", "acme")
    assert joined.policy_path == home / "team.yaml"
    assert joined.policy_written
    assert stat.S_IMODE((home / "identity.key").stat().st_mode) == 0o600
    policy = load_policy(home)
    assert (policy.team, policy.coordinator, policy.share.kinds) == ("acme", None, ())
    # The team's embedder is written out, not left to the key's absent value.
    assert f"\nembedder: {json.dumps(DEFAULT_EMBEDDER)}\n" in joined.policy_path.read_text()


def test_joining_with_kinds_and_a_coordinator_writes_them_into_the_policy(home: Path) -> None:
    join_team(home, name="ada", team="acme", coordinator=COORDINATOR, kinds=["decision", "gotcha"])
    policy = load_policy(home)
    assert policy.coordinator == COORDINATOR
    assert policy.share.kinds == ("decision", "gotcha")
    assert policy.identity is not None
    assert policy.identity.name == "ada"


def test_joining_keeps_an_existing_policy(home: Path) -> None:
    home.mkdir()
    existing = "version: 1\nteam: acme\n"
    (home / "team.yaml").write_text(existing, encoding="utf-8")
    joined = join_team(home, name="ada", team="other", kinds=["decision"])
    assert not joined.policy_written
    assert (home / "team.yaml").read_text(encoding="utf-8") == existing


def test_joining_twice_refuses_and_changes_nothing(home: Path) -> None:
    first = join_team(home, name="ada")
    key = (home / "identity.key").read_bytes()
    policy = (home / "team.yaml").read_bytes()
    with pytest.raises(IdentityExists):
        join_team(home, name="bob", team="other", kinds=["fact"])
    assert (home / "identity.key").read_bytes() == key
    assert (home / "team.yaml").read_bytes() == policy
    assert load_identity(home).key_id == first.member_id


# -- the member's store, in the team's vector space --------------------------------------------


@requires_static
def test_a_store_holding_items_is_re_embedded_with_the_teams_embedder(home: Path) -> None:
    with Store(home, embedder="hashing") as store:
        item, _ = store.remember("We chose Postgres advisory locks for the job scheduler")
        store.remember("The frontend builds with pnpm")
        calls: list[tuple[int, int]] = []
        switched = use_team_embedder(store, _team("wordllama"), lambda *c: calls.append(c))
        assert switched == TeamEmbedder(name="wordllama", before="hashing", reindexed=2)
        assert calls[-1] == (2, 2)
        assert store.embedder.name == "wordllama"
    with Store(home) as again:  # the file says so, for every later command
        assert again.embedder.name == "wordllama"
        assert [h.item.id for h in recall(again, "which locks does the scheduler use").hits] == [
            item.id
        ]


@requires_static
def test_an_empty_store_is_only_switched(home: Path) -> None:
    with Store(home) as store:
        calls: list[tuple[int, int]] = []
        switched = use_team_embedder(store, _team("wordllama"), lambda *c: calls.append(c))
        assert (switched.reindexed, switched.missing, calls) == (0, "", [])
        assert store.embedder.name == "wordllama"


def test_a_store_in_the_teams_space_already_is_left_alone(home: Path) -> None:
    with Store(home, embedder="hashing") as store:
        store.remember("The frontend builds with pnpm")
        switched = use_team_embedder(store, _team("hashing"))
    assert switched == TeamEmbedder(name="hashing", before="hashing")


def test_without_the_embedders_extra_nothing_changes_and_it_says_what_to_install_and_run(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing() -> embed.Embedder:
        raise embed.EmbedderUnavailable("wordllama", "static")

    monkeypatch.setitem(embed._FACTORIES, "wordllama", missing)
    with Store(home, embedder="hashing") as store:
        store.remember("The frontend builds with pnpm")
        switched = use_team_embedder(store, _team("wordllama"))
        assert store.embedder.name == "hashing"
    assert switched.reindexed is None
    assert switched.missing == (
        "the 'wordllama' embedder needs an optional extra: pip install 'memmesh[static]'; "
        "then run `mem reindex --embedder wordllama` to switch your store to it"
    )


def _team(embedder: str) -> Policy:
    return parse_policy(f"team: acme\nembedder: {embedder}\n")
