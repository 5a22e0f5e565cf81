"""The agent's `recall_team` tool against a real coordinator on 127.0.0.1: two members'
contradicting items each name the other in ``contradicted_by`` (their author, item and what
they disagree on, not their words again); a hit nobody contradicts carries no such field."""

import pytest

from memmesh.agents.tools import Tools
from memmesh.local.store import Store
from tests.team._team import Team

REDIS = "We use Redis locks for the job queue"
POSTGRES = "We use Postgres advisory locks for the job queue"
BACKOFF = "The job queue retries a failed job with exponential backoff"

pytestmark = pytest.mark.usefixtures("team_token")


def test_recall_team_names_who_says_otherwise_of_each_hit(loopback_team: Team) -> None:
    ada, bob, carol = (loopback_team.add(name) for name in ("ada", "bob", "carol"))
    redis, postgres, backoff = ada.share(REDIS), bob.share(POSTGRES), bob.share(BACKOFF)

    with Store(carol.home, author="carol") as store:
        answer = Tools(carol.home, store).recall_team("which locks does the job queue use", k=5)

    hits = {hit["id"]: hit for hit in answer["hits"]}
    assert hits[redis]["contradicted_by"] == [
        {
            "id": postgres,
            "author": "bob",
            "author_id": bob.key_id,
            "reason": "locks job queue: redis locks against postgres advisory locks",
        }
    ]
    assert [(o["id"], o["author"]) for o in hits[postgres]["contradicted_by"]] == [(redis, "ada")]
    assert "contradicted_by" not in hits.get(backoff, {})  # short on purpose, like ``also``
