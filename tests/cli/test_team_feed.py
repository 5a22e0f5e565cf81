"""`mem team feed` through the real command line, against a real coordinator: who published
or retracted what, newest first, named by the roster, bounded, printed harmlessly."""

from pathlib import Path

import pytest

from memmesh.local.items import iso
from memmesh.registry.envelopes import Publication, open_envelope
from tests.cli._output import json_of
from tests.conftest import MemRunner
from tests.team._team import LOCKS, Member, Team

pytestmark = pytest.mark.usefixtures("team_token")

MAIL = "We chose Celery for the mail queue"
HOSTILE = "Deploys need the \x1b[2J VPN\nfake: line " + "x" * 120


def _published_at(member: Member, item_id: str) -> str:
    body = open_envelope(member.envelope(item_id))
    assert isinstance(body, Publication)
    return iso(body.published_at)


def test_feed_lists_who_published_or_retracted_what_newest_first(roster_team: Team) -> None:
    ada, bob = roster_team.members["ada"], roster_team.members["bob"]
    locks = ada.share(LOCKS)
    locks_at = _published_at(ada, locks)
    mail = ada.share(MAIL)
    ada.retract(mail)
    ada.sync()
    hostile = bob.share(HOSTILE, kind="gotcha", project="ops")
    hostile_at = _published_at(bob, hostile)
    mem = MemRunner(ada.home, Path.cwd())

    listed = json_of(mem("team", "feed", "--json"))
    shown = mem("team", "feed", "--limit", "2")
    everything = mem("team", "feed")

    entries = listed["entries"]
    assert [(e["action"], e["item_id"], e["author"], e["version"]) for e in entries] == [
        ("published", hostile, "bob", 1),
        ("retracted", mail, "ada", 1),
        ("published", locks, "ada", 1),
    ]
    assert (entries[0]["text"], entries[0]["at"], entries[1]["text"]) == (HOSTILE, hostile_at, "")
    assert (listed["dropped"], listed["complete"]) == ({}, True)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        f"{hostile_at}  bob  published v1  {hostile}  [gotcha, ops] "
        + "Deploys need the \\x1b[2J VPN\\nfake: line "
        + "x" * (99 - len("Deploys need the \x1b[2J VPN\nfake: line "))
        + "\u2026",
        f"{entries[1]['at']}  ada  retracted v1  {mail[:10]}",
    ]
    assert everything.stdout.splitlines()[-1] == (
        f"{locks_at}  ada  published v1  {locks[:10]}  [decision, global] {LOCKS}"
    )


def test_feed_of_a_team_that_shared_nothing_says_so(roster_team: Team) -> None:
    result = MemRunner(roster_team.members["bob"].home, Path.cwd())("team", "feed")

    assert result.returncode == 0, result.stderr
    assert result.stdout == "nothing shared in team acme yet\n"
