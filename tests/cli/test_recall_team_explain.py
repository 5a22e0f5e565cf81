"""`mem team recall-team --explain`: per source, what it returned and what the asker made of
each hit (kept, or cut and why), through the real command line against a real coordinator and
peer daemon on 127.0.0.1, or a fake source where a source must send what no real one would."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memmesh.registry import Envelope
from tests.cli._output import json_of
from tests.conftest import MemRunner
from tests.team._team import (
    LOCKS,
    LOCKS_QUERY,
    NOWHERE,
    TEAM,
    FakeSource,
    Member,
    Team,
    answer,
    serving,
    team_on_loopback,
)

pytestmark = pytest.mark.usefixtures("team_token")

WEBHOOKS = "The billing service retries failed webhooks 5 times with exponential backoff"
INVOICES = "The billing service sends invoices on the first day of every month"
COFFEE = "The office coffee machine is descaled on Fridays"
BILLING_QUERY = "what does the billing service do"


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    with team_on_loopback(tmp_path) as members:
        yield members


def _tampered(envelope: Envelope) -> Envelope:
    """``envelope`` with its signed text changed: its signature no longer holds."""
    return Envelope(
        payload=envelope.payload.replace(b"first day", b"fifth day"),
        signature=envelope.signature,
    )


def _explained(member: Member, query: str, *args: str) -> tuple[dict[str, Any], str]:
    """The --json answer and the text answer of an explained recall-team."""
    run = MemRunner(member.home, Path.cwd())
    data = json_of(run("team", "recall-team", query, "--explain", *args, "--json"))
    text = run("team", "recall-team", query, "--explain", *args)
    assert text.returncode == 0, text.stderr
    return data, text.stdout


def _fates(data: dict[str, Any], source: str) -> list[tuple[str, str]]:
    [explained] = [s for s in data["explanation"]["sources"] if s["name"] == source]
    return [(each["id"], each["fate"]) for each in explained["returned"]]


def test_an_abstention_says_what_each_source_returned_and_why_it_was_cut(
    tmp_path: Path,
) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    coffee, invoices = ada.remember(COFFEE), ada.remember(INVOICES)
    ada.publish(coffee, invoices)
    fake = FakeSource()
    # Far from the query as our embedder reads it: nothing but the words can make it relevant.
    fake.hits = answer(ada.envelope(coffee), _tampered(ada.envelope(invoices)), cosine=0.05)
    with serving(fake) as url:
        bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=url)
        bob.trust(ada)
        data, text = _explained(bob, BILLING_QUERY)

    assert (data["hits"], data["abstained"]) == ([], True)
    assert data["sources"][0]["hits"] == 2
    assert _fates(data, "coordinator") == [(coffee, "below_gate"), (invoices, "bad_signature")]
    [first, second] = data["explanation"]["sources"][0]["returned"]
    assert (first["author"], first["key_id"], first["version"]) == ("ada", ada.key_id, 1)
    assert first["source_score"] == 0.05
    assert first["score"] is None
    assert second["author"] == ""  # nothing it claims is taken on trust
    lines = text.splitlines()
    assert lines[0] == "nothing relevant from the team (abstained)"
    assert "explain: what each source returned, and what became of it" in lines
    assert "  coordinator returned 2:" in lines
    assert any(
        line.startswith(
            f"    {coffee[:10]}  ada  v1  source score 0.050: cut, below the relevance gate"
        )
        for line in lines
    ), text
    assert any(
        line.startswith(f"    {invoices[:10]}  ?  source score 0.050: cut, unverifiable")
        for line in lines
    ), text


def test_kept_duplicate_and_beyond_k_hits_are_told_apart(tmp_path: Path) -> None:
    ada = Member("ada", tmp_path / "ada", team=TEAM, coordinator=NOWHERE)
    webhooks, invoices = ada.remember(WEBHOOKS), ada.remember(INVOICES)
    ada.publish(webhooks, invoices)
    fake = FakeSource()
    fake.hits = answer(ada.envelope(webhooks), ada.envelope(webhooks), ada.envelope(invoices))
    with serving(fake) as url:
        bob = Member("bob", tmp_path / "bob", team=TEAM, coordinator=url)
        bob.trust(ada)
        data, text = _explained(bob, BILLING_QUERY, "-k", "1")

    assert [hit["id"] for hit in data["hits"]] == [webhooks]
    assert _fates(data, "coordinator") == [
        (webhooks, "returned"), (webhooks, "duplicate"), (invoices, "ranked_below_k"),
    ]  # fmt: skip
    [kept, _, beyond] = data["explanation"]["sources"][0]["returned"]
    assert (kept["rank"], kept["score"]) == (1, data["hits"][0]["score"])
    assert beyond["rank"] == 2
    assert data["explanation"]["k"] == 1
    assert ": kept, hit #1, score " in text
    assert ": cut, a duplicate of the copy kept" in text
    assert ": cut, ranked #2, below -k 1" in text


def test_the_live_author_s_word_is_explained_over_the_coordinator_s_copy(team: Team) -> None:
    ada, bob = team.add("ada"), team.add("bob")
    locks = ada.share(LOCKS)
    team.serve(ada)
    team.wait_for_presence(ada)

    live, _ = _explained(bob, LOCKS_QUERY)
    ada.retract(locks)  # not synced: the coordinator still serves its copy
    withdrawn, text = _explained(bob, LOCKS_QUERY)

    assert _fates(live, "ada") == [(locks, "returned")]
    assert _fates(live, "coordinator") == [(locks, "replaced_by_author")]
    assert withdrawn["abstained"] is True
    assert _fates(withdrawn, "ada") == []
    assert _fates(withdrawn, "coordinator") == [(locks, "withdrawn_by_author")]
    assert "  ada returned nothing" in text.splitlines()
    assert "cut, withdrawn: its author's live peer no longer publishes this version" in text


def test_without_explain_the_answer_has_no_explanation(team: Team) -> None:
    ada, bob = team.add("ada"), team.add("bob")
    ada.share(LOCKS)
    run = MemRunner(bob.home, Path.cwd())

    data = json_of(run("team", "recall-team", LOCKS_QUERY, "--json"))
    text = run("team", "recall-team", LOCKS_QUERY)

    assert "explanation" not in data
    assert "explain:" not in text.stdout
