"""`join_team`: a member's key and a team.yaml to start from, in a real home folder."""

import json
import stat
from pathlib import Path

import pytest

from memmesh.embed import DEFAULT_EMBEDDER
from memmesh.policy import load_policy
from memmesh.registry import IdentityExists, load_identity
from memmesh.team.setup import join_team

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
