"""recall-team corroboration: one fact that several members published is one hit naming them
all, never a fact hidden behind another, and never a copy that failed verification or that its
author withdrew."""

from pathlib import Path

import pytest

from memmesh.consolidate.corroborate import Statement, corroborating_groups, same_fact
from memmesh.embed import HashingEmbedder
from memmesh.registry import Envelope
from memmesh.team.recall import TeamAnswer
from tests.team._team import (
    NOWHERE,
    PARKED,
    PARKED_AGAIN,
    PARKED_QUERY,
    SIGNED,
    TEAM,
    FakeSource,
    Member,
    Team,
    answer,
    ask,
    peer_in_thread,
    presence_for,
    serving,
)

# Facts on the topic of PARKED that say other things, and an exact copy of it.
PARKED_COPY = (
    "webhook deliveries that fail bill-204 validation are retried with exponential backoff "
    "for up to one hour; then parked in the dead-letter table!"
)
RETRIES = (
    "The billing service retries failed webhook deliveries 5 times with exponential backoff "
    "before it gives up"
)
FEWER_RETRIES = RETRIES.replace("5 times", "3 times")

pytestmark = pytest.mark.usefixtures("team_token")


def _facts(result: TeamAnswer) -> list[list[tuple[str, str]]]:
    """Each hit's authors (name, item id), the best ranked first."""
    return [[(hit.author, hit.id), *((a.author, a.id) for a in hit.also)] for hit in result.hits]


def test_one_fact_in_two_members_words_is_one_hit_naming_both(loopback_team: Team) -> None:
    ada, carol, dave = (loopback_team.add(name) for name in ("ada", "carol", "dave"))
    parked, again = ada.share(PARKED), carol.share(PARKED_AGAIN)
    retries = dave.share(RETRIES)  # its topic, many of its words, another fact

    result = ask(loopback_team.add("bob"), PARKED_QUERY)

    other, both = _facts(result)
    assert other == [("dave", retries)]
    assert sorted(both) == [("ada", parked), ("carol", again)]
    [merged] = [hit for hit in result.hits if hit.also]
    assert sorted(merged.authors) == [("ada", ada.key_id), ("carol", carol.key_id)]
    [also] = merged.also
    by_key = {ada.key_id: PARKED, carol.key_id: PARKED_AGAIN}
    assert {merged.key_id, also.key_id} == set(by_key)
    assert (also.text, also.source) == (by_key[also.key_id], "coordinator")
    assert also.score <= merged.score


def test_the_same_words_in_another_case_and_punctuation_are_one_hit(
    loopback_team: Team,
) -> None:
    ada, carol = loopback_team.add("ada"), loopback_team.add("carol")
    parked, copy = ada.share(PARKED), carol.share(PARKED_COPY)

    result = ask(loopback_team.add("bob"), PARKED_QUERY)

    assert _facts(result) in (
        [[("ada", parked), ("carol", copy)]],
        [[("carol", copy), ("ada", parked)]],
    )


def test_facts_on_one_topic_that_say_different_things_stay_apart(loopback_team: Team) -> None:
    ada, carol, dave = (loopback_team.add(name) for name in ("ada", "carol", "dave"))
    retries, fewer = ada.share(RETRIES), carol.share(FEWER_RETRIES)  # 5 times, 3 times
    parked = dave.share(PARKED)

    result = ask(loopback_team.add("bob"), PARKED_QUERY)

    assert sorted(_facts(result)) == sorted(
        [[("ada", retries)], [("carol", fewer)], [("dave", parked)]]
    )


def test_k_counts_facts_and_a_merged_hit_ranks_and_scores_as_its_best_member(
    loopback_team: Team,
) -> None:
    ada, carol, dave = (loopback_team.add(name) for name in ("ada", "carol", "dave"))
    parked, again = ada.share(PARKED), carol.share(PARKED_AGAIN)
    signed = dave.share(SIGNED)
    bob = loopback_team.add("bob")

    result = ask(bob, PARKED_QUERY, k=2)  # two items of one fact would have filled both places

    both, other = _facts(result)
    assert (sorted(both), other) == ([("ada", parked), ("carol", again)], [("dave", signed)])
    best = result.hits[0]  # whichever statement of the fact ranks first stands for it
    [alone] = ask(bob, PARKED_QUERY, author=best.author).hits
    assert (best.text, best.score) == (alone.text, alone.score)
    assert [h.id for h in ask(bob, PARKED_QUERY, k=1).hits] == [best.id]


def test_with_an_author_named_only_their_items_answer_uncorroborated(
    loopback_team: Team,
) -> None:
    ada, carol = loopback_team.add("ada"), loopback_team.add("carol")
    ada.share(PARKED)
    again = carol.share(PARKED_AGAIN)

    result = ask(loopback_team.add("bob"), PARKED_QUERY, author="carol")

    assert _facts(result) == [[("carol", again)]]


def test_a_copy_its_author_withdrew_corroborates_nothing(tmp_path: Path) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    carol = Member("carol", tmp_path / "carol", team=TEAM, coordinator=NOWHERE)
    parked = ada.remember(PARKED)
    ada.publish(parked)
    stale = ada.envelope(parked)
    ada.retract(parked)  # before any sync: a coordinator may still hold her copy
    coordinator = FakeSource()
    coordinator.hits = answer(stale, _published(carol, PARKED_AGAIN))
    bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=NOWHERE)
    bob.trust(ada, carol)
    ada.trust(bob)
    with peer_in_thread(ada) as ada_url, serving(coordinator) as url:
        coordinator.presences = [presence_for(ada.identity, ada_url, team=TEAM, name="ada")]
        bob.write_policy(coordinator=url)
        result = ask(bob, PARKED_QUERY)

    assert [(h.author, h.text, h.also) for h in result.hits] == [("carol", PARKED_AGAIN, ())]
    assert result.dropped == {"withdrawn_by_author": 1}


def test_copies_failing_verification_corroborate_nothing(tmp_path: Path) -> None:
    carol = Member("carol", tmp_path / "carol", team=TEAM, coordinator=NOWHERE)
    dave = Member("dave", tmp_path / "dave", team=TEAM, coordinator=NOWHERE)
    mallory = Member("mallory", tmp_path / "mallory", team=TEAM, coordinator=NOWHERE)
    forged = _published(dave, PARKED_COPY)
    forged = Envelope(  # dave's signature over another text
        payload=forged.payload.replace(b"bill-204", b"BILL-204"), signature=forged.signature
    )
    coordinator = FakeSource()
    coordinator.hits = answer(_published(carol, PARKED_AGAIN), _published(mallory, PARKED), forged)
    with serving(coordinator) as url:
        bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=url)
        bob.trust(carol, dave)  # mallory is no member
        result = ask(bob, PARKED_QUERY)

    assert [(h.author, h.also) for h in result.hits] == [("carol", ())]
    assert result.dropped == {"outside_roster": 1, "bad_signature": 1}


def test_a_hit_without_corroboration_names_its_author_alone(loopback_team: Team) -> None:
    ada = loopback_team.add("ada")
    ada.share(SIGNED)

    [hit] = ask(loopback_team.add("bob"), PARKED_QUERY).hits

    assert (hit.also, hit.authors) == ((), [("ada", ada.key_id)])


# -- the rule, on its own ---------------------------------------------------------------------


def _same(a: str, b: str) -> bool:
    return same_fact(Statement(a), Statement(b), lambda: 1.0, min_cosine=0.5)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (PARKED, PARKED_AGAIN),
        (PARKED, PARKED_COPY),
        ("Use  pnpm, not npm, in the docs site.", "use pnpm not npm in the docs site"),
    ],
)
def test_restatements_and_copies_state_the_same_fact(first: str, second: str) -> None:
    assert _same(first, second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (RETRIES, FEWER_RETRIES),  # another number
        ("After 5 failed attempts with exponential backoff, the billing service stops retrying "
         "a webhook delivery (BILL-204)",
         "The billing service retries a failed webhook delivery (BILL-204) 3 times with "
         "exponential backoff, then stops"),  # reworded, and another number
        (PARKED, RETRIES),  # a topic and its words, not its code
        ("Run make db-migrate before deploying the billing api to production",
         "Run make db-migrate after deploying the billing api to production"),
        ("ADR-12: we chose Postgres advisory locks over Redis locks for the job scheduler",
         "ADR-12: we chose Redis locks over Postgres advisory locks for the job scheduler"),
        ("Deploy with release.sh --force", "Deploy with release.sh force"),
        ("To clear the cache in etl-pipeline, run `npm ci --legacy-peer-deps`.",
         "Before you clear the cache for tax-engine, run `npm ci --legacy-peer-deps` or the "
         "job fails with E3126."),  # one command, two services
        ("The job scheduler takes Postgres advisory locks, never Redis ones",
         "The job scheduler queue leases each job for thirty seconds in Postgres"),
    ],
)  # fmt: skip
def test_texts_that_say_different_things_are_not_one_fact(first: str, second: str) -> None:
    assert not _same(first, second)


def test_a_group_never_holds_two_items_of_one_author() -> None:
    texts = [PARKED, PARKED_AGAIN, PARKED_COPY]

    groups = corroborating_groups(texts, ["ada", "ada", "carol"], HashingEmbedder(), limit=5)

    assert groups == [[0, 2], [1]]


def _published(member: Member, text: str) -> Envelope:
    """``member``'s publication of a new item holding ``text`` (not synced anywhere)."""
    item_id = member.remember(text)
    member.publish(item_id)
    return member.envelope(item_id)
