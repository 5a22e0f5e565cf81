"""The agent's `recall_team` tool against a real coordinator on 127.0.0.1: one fact that
several members published is one hit, naming the other authors and their items in ``also``."""

import pytest

from memmesh.agents.tools import Tools
from memmesh.local.store import Store
from tests.team._team import PARKED, PARKED_AGAIN, PARKED_QUERY, SIGNED, Team

pytestmark = pytest.mark.usefixtures("team_token")


def test_recall_team_lists_the_other_authors_of_a_fact_in_also(loopback_team: Team) -> None:
    ada, carol, dave = (loopback_team.add(name) for name in ("ada", "carol", "dave"))
    parked, again = ada.share(PARKED), carol.share(PARKED_AGAIN)
    signed = dave.share(SIGNED)
    bob = loopback_team.add("bob")

    with Store(bob.home, author="bob") as store:
        answer = Tools(bob.home, store).recall_team(PARKED_QUERY, k=2)

    merged, alone = answer["hits"]
    # Whichever of the two statements ranks first carries the other in ``also``.
    [other] = merged["also"]
    assert {(merged["id"], merged["author"], merged["author_id"]), tuple(other.values())} == {
        (parked, "ada", ada.key_id),
        (again, "carol", carol.key_id),
    }
    assert (alone["id"], alone["author"]) == (signed, "dave")
    assert "also" not in alone  # short on purpose: only a corroborated hit carries it


def test_outcome_without_an_id_after_recall_team_credits_its_hits_not_an_older_recall(
    loopback_team: Team,
) -> None:
    ada = loopback_team.add("ada")
    parked = ada.share(PARKED)
    bob = loopback_team.add("bob")

    with Store(bob.home, author="bob") as store:
        own, _ = store.remember("Rotate the staging database password every quarter")
        tools = Tools(bob.home, store)
        assert [hit["id"] for hit in tools.recall("staging database password")["hits"]] == [own.id]
        assert [hit["id"] for hit in tools.recall_team(PARKED_QUERY, k=1)["hits"]] == [parked]

        answer = tools.outcome(None, "worked")

        (credited,) = answer["credited"]
        assert (credited["id"], credited["teammate"]) == (parked, True)
        assert store.get(own.id).worked == 0  # the older local recall's item is left alone
