"""`team_status`: a member's active items counted per project, on a real store and registry."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from memmesh import embed
from memmesh.local.store import Store
from memmesh.policy import PolicyInvalid
from memmesh.registry import load_identity
from memmesh.team.member import Member as Acting
from memmesh.team.status import ProjectStatus, Tally, team_status
from tests.team._team import NOWHERE, SHARED_KINDS, TEAM, Member, Team


@pytest.fixture
def ada(tmp_path: Path) -> Member:
    # A coordinator that never answers: publishing is allowed, nothing is ever acknowledged.
    return Team(tmp_path, NOWHERE).add("ada")


@pytest.fixture
def acting(ada: Member) -> Iterator[Acting]:
    """ada at work on her store, with her policy as it is now."""
    with Store(ada.home, author="ada") as store:
        yield Acting(store, ada.identity, ada.policy())


def test_status_counts_private_eligible_published_and_blocked_per_project(
    ada: Member, acting: Acting
) -> None:
    published = ada.remember("We chose Postgres advisory locks", project="shop")
    ada.remember("The CI cache is keyed on the lockfile hash", kind="gotcha", project="shop")
    ada.remember("Laptops run macOS 14", kind="fact", project="global")
    ada.publish(published)

    status = team_status(acting)
    assert (status.member_id, status.team, status.coordinator) == (ada.key_id, TEAM, NOWHERE)
    assert status.public_key == ada.identity.public_key_text
    assert status.awaiting_sync == 1
    assert list(status.projects) == ["global", "shop"]
    assert status.projects["shop"] == ProjectStatus(
        private=1, eligible=1, published=1, withheld=0, blocked={}
    )
    assert status.projects["global"] == ProjectStatus(
        private=1,
        eligible=0,
        published=0,
        withheld=0,
        blocked={"share.kinds: fact is not shared": 1},
    )


def test_a_publication_the_policy_no_longer_allows_counts_as_withheld(ada: Member) -> None:
    published = ada.remember("Always squash-merge feature branches", kind="convention")
    ada.publish(published)
    ada.write_policy(share={"kinds": [k for k in SHARED_KINDS if k != "convention"]})
    with Store(ada.home, author="ada") as store:
        status = team_status(Acting(store, load_identity(ada.home), ada.policy()))
    assert status.projects["global"] == ProjectStatus(
        private=0, eligible=0, published=0, withheld=1, blocked={}
    )
    # The next sync takes it back.
    assert status.policy_withholds == [published]


def test_status_counts_nothing_to_take_back_without_a_coordinator(ada: Member) -> None:
    published = ada.remember("Always squash-merge feature branches", kind="convention")
    ada.publish(published)
    ada.write_policy(coordinator=None)
    with Store(ada.home, author="ada") as store:
        status = team_status(Acting(store, load_identity(ada.home), ada.policy()))
    assert status.projects["global"].withheld == 1
    assert status.policy_withholds == []


def test_status_without_a_usable_policy_says_why(ada: Member) -> None:
    (ada.home / "team.yaml").write_text("version: 1\nteam: [not, a, name]\n", encoding="utf-8")
    with Store(ada.home, author="ada") as store:
        member = Acting(store, ada.identity, None, reconcile_first=False)
        with pytest.raises(PolicyInvalid):
            team_status(member)


def test_status_names_both_embedders_and_the_switch_when_the_store_is_not_the_teams(
    ada: Member,
) -> None:
    ada.remember("We chose Postgres advisory locks")
    with Store(ada.home, author="ada") as store:
        same = team_status(Acting(store, ada.identity, ada.policy()))
        ada.write_policy(embedder="wordllama")
        other = team_status(Acting(store, ada.identity, ada.policy()))
    default = embed.DEFAULT_EMBEDDER
    assert (same.store_embedder, same.team_embedder, same.embedder_mismatch) == (
        default,
        default,
        None,
    )
    assert (other.store_embedder, other.team_embedder) == (default, "wordllama")
    assert other.embedder_mismatch == (
        f"your store uses the {default} embedder, but team.yaml names wordllama for the team: "
        "teammates' answers are ranked here by words alone, and what you publish is embedded "
        "again by the coordinator, until you run `mem reindex --embedder wordllama`"
    )


def test_a_kept_tally_counts_as_a_fresh_count_after_every_kind_of_change(ada: Member) -> None:
    shop = ada.remember("We chose Postgres advisory locks", project="shop")
    gotcha = ada.remember("The CI cache is keyed on the lockfile hash", kind="gotcha")
    fact = ada.remember("Laptops run macOS 14", kind="fact", project="shop")
    tally = Tally()

    def same(store: Store, *, reconcile_first: bool = True) -> None:
        acting = Acting(store, ada.identity, ada.policy(), reconcile_first=reconcile_first)
        kept = team_status(acting, tally)
        assert kept == team_status(acting)
        assert kept == team_status(acting, tally)  # nothing changed in between

    with Store(ada.home, author="ada") as store:
        same(store)
        ada.publish(shop, gotcha)  # the registry's head moves
        same(store)
        store.outcome(fact, "worked")
        store.edit(fact, project="global", kind="decision")
        ada.remember("Deploys freeze on Fridays", kind="convention", project="ops")
        same(store)
        store.revise(gotcha, "The CI cache is keyed on the lockfile and the runner image")
        same(store, reconcile_first=False)  # published, its text changed: withheld
        same(store)  # retracted first, as `mem team status` does
        ada.write_policy(share={"kinds": ["decision"]})  # a new policy: counted anew
        same(store)
        ada.retract(shop)
        store.forget(fact)
        ada.remember(f"deploy token ghp_{'a1B2c3D4' * 4}Zz99", project="ops")  # a secret
        same(store)
    ada.remember("Releases are tagged from main", project="ops")  # another process writes
    with Store(ada.home, author="ada") as store:
        same(store)
