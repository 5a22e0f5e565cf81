"""A member who pins the team's signed roster believes what its admins signed, whatever the
coordinator's operator does to the coordinator's store: a relabelled member keeps the chain's
name, a key the operator adds is neither asked nor believed, and an edited, cut or replaced
chain is refused (exit 3) with the member's kept chain unchanged. A real coordinator on
127.0.0.1, its store file edited with sqlite3; real members; `mem` as a real process."""

import time
from pathlib import Path

import msgspec
import pytest

from memmesh.local import teamcache
from memmesh.local.store import Store
from memmesh.net.presence import Roster
from memmesh.policy import load_policy
from memmesh.registry import roster_chain as chain
from memmesh.team.chain import CHAIN_FILENAME
from memmesh.team.check import check_coordinator
from memmesh.team.disclosures import my_disclosures
from memmesh.team.feed import team_feed
from memmesh.team.recall import list_peers
from memmesh.team.refresh import refresh_cache
from tests._signed import signed_client
from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner
from tests.team._signed import SignedTeam
from tests.team._team import LOCKS, LOCKS_QUERY, TOKEN, Member, ask

pytestmark = pytest.mark.usefixtures("team_token")


def _mem(member: Member) -> MemRunner:
    return MemRunner(member.home, Path.cwd())


def _coordinator_says(signed: SignedTeam, asker: Member) -> Roster:
    assert signed.team.coordinator is not None
    url = signed.team.coordinator
    with signed_client(url, asker.identity, team=signed.team.team, token=TOKEN) as client:
        return client.get("/v1/members", Roster)


def _authors(member: Member) -> set[str]:
    """The authors the member's team cache names (after a refresh)."""
    return {item.author for item in teamcache.in_scope(member.home, ["global"])[0]}


def test_a_member_the_operator_relabels_keeps_the_chains_name(signed: SignedTeam) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    bob.share(LOCKS)
    with signed.operator() as db:
        db.execute("UPDATE coord_members SET name = 'mallory' WHERE key_id = ?", (bob.key_id,))

    refreshed = _mem(ada)("team", "cache", "refresh")
    answer = json_of(_mem(ada)("team", "recall-team", LOCKS_QUERY, "--json"))
    text = _mem(ada)("team", "recall-team", LOCKS_QUERY)

    said = {m.key_id: m.name for m in _coordinator_says(signed, ada).members}
    assert said[bob.key_id] == "mallory"  # the operator's word
    assert refreshed.returncode == 0, refreshed.stderr
    assert _authors(ada) == {"bob"}
    assert [a["name"] for a in answer["hits"][0]["authors"]] == ["bob"]
    assert text.returncode == 0, text.stderr
    assert text.stdout.split()[1] == "bob"
    assert "mallory" not in text.stdout


def test_a_key_the_operator_adds_is_neither_asked_nor_believed(signed: SignedTeam) -> None:
    ada = signed.team.members["ada"]
    mallory = signed.member("mallory")
    with signed.operator() as db:
        db.execute(
            "INSERT INTO coord_members (key, key_id, name, admin, added_at) "
            "VALUES (?, ?, 'mallory', 0, ?)",
            (mallory.identity.public_key_text, mallory.key_id, time.time()),
        )
    mallory.share(LOCKS)  # the coordinator takes it: its table admits the key
    signed.team.serve(mallory)
    signed.team.wait_for_presence(mallory)

    answer = ask(ada)
    ada_refresh = _mem(ada)("team", "cache", "refresh")

    assert mallory.key_id in {m.key_id for m in _coordinator_says(signed, ada).members}
    assert answer.hits == []
    assert answer.dropped.get("outside_roster", 0) >= 2  # its item, and its peer
    assert not any(r.name.startswith("peer") for r in answer.sources)
    assert ada_refresh.returncode == 0, ada_refresh.stderr
    assert _authors(ada) == set()


def _refresh_refused(member: Member) -> str:
    refused = _mem(member)("team", "cache", "refresh")
    assert refused.returncode == 3, refused.stderr
    return error_line(refused)


def test_an_edited_statement_is_refused_and_the_kept_chain_stays(
    signed: SignedTeam, monkeypatch: pytest.MonkeyPatch
) -> None:
    bob = signed.team.members["bob"]
    assert _mem(bob)("team", "cache", "refresh").returncode == 0
    kept = (bob.home / CHAIN_FILENAME).read_bytes()
    signed.add(signed.member("carol"))
    added = signed.statements[2]
    edited = msgspec.structs.replace(added, body=added.body.replace(b'"carol"', b'"carla"'))
    signed.serve_unchecked(monkeypatch)
    signed.store_statement(2, edited)

    line = _refresh_refused(bob)

    assert "(bad_signature at statement 2:" in line
    assert (bob.home / CHAIN_FILENAME).read_bytes() == kept


def test_a_deleted_revocation_is_refused_as_a_rollback(signed: SignedTeam) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    carol = signed.member("carol")
    signed.add(carol)
    signed.revoke(bob)
    assert _mem(carol)("team", "cache", "refresh").returncode == 0
    kept = (carol.home / CHAIN_FILENAME).read_bytes()
    with signed.operator() as db:
        db.execute(f"DELETE FROM {signed.chain_table} WHERE seq = 3")
        db.execute("UPDATE coord_members SET revoked_at = NULL WHERE key_id = ?", (bob.key_id,))

    line = _refresh_refused(carol)

    assert "rollback" in line
    assert (carol.home / CHAIN_FILENAME).read_bytes() == kept
    assert ada.key_id != carol.key_id


def test_another_chain_served_in_place_of_the_teams_is_refused(signed: SignedTeam) -> None:
    bob = signed.team.members["bob"]
    assert _mem(bob)("team", "cache", "refresh").returncode == 0
    kept = (bob.home / CHAIN_FILENAME).read_bytes()
    mallory = signed.member("mallory")
    forged = [chain.genesis(mallory.identity, signed.team.team, name="ada")]
    state = chain.verify_chain(forged, root_key_id=mallory.key_id, team=signed.team.team)
    forged.append(chain.add(state, mallory.identity, key=bob.identity.public_key_text, name="bob"))
    with signed.operator() as db:
        db.execute(f"DELETE FROM {signed.chain_table}")
        db.executemany(
            f"INSERT INTO {signed.chain_table} (seq, hash, body, signatures) VALUES (?, ?, ?, ?)",
            [signed.row(seq, s) for seq, s in enumerate(forged)],
        )

    line = _refresh_refused(bob)
    asked = _mem(bob)("team", "recall-team", LOCKS_QUERY)
    checked = check_coordinator(bob.policy(), bob.identity, home=bob.home)

    assert "(fork at statement 1:" in line
    assert asked.returncode == 3
    assert "(fork at statement 1:" in error_line(asked)
    assert (checked.state, checked.code, checked.exit_code) == (
        "untrusted", "roster_not_trusted", 3,
    )  # fmt: skip
    assert (bob.home / CHAIN_FILENAME).read_bytes() == kept


def test_an_unpinned_member_pins_the_root_on_first_sight_and_then_refuses_a_forgery(
    signed: SignedTeam,
) -> None:
    carol = signed.member("carol", pinned=False)
    signed.add(carol)

    first = _mem(carol)("team", "cache", "refresh")
    second = _mem(carol)("team", "cache", "refresh")
    with signed.operator() as db:
        db.execute(f"DELETE FROM {signed.chain_table} WHERE seq = 2")
    line = _refresh_refused(carol)

    assert first.returncode == 0, first.stderr
    assert first.stderr == f"pinned the team's signed roster: root {signed.root}\n"
    assert load_policy(carol.home).roster_root == signed.root
    assert (second.returncode, second.stderr) == (0, "")
    assert "rollback" in line


def test_names_alike_over_time_show_the_member_id(signed: SignedTeam) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    bob.share(LOCKS)
    signed.rename(bob, "robert")
    newcomer = signed.member("bob2")
    signed.post(
        chain.add(signed.state, ada.identity, key=newcomer.identity.public_key_text, name="bob")
    )
    signed.team.serve(bob)
    signed.team.wait_for_presence(bob)

    text = _mem(ada)("team", "recall-team", LOCKS_QUERY)
    refreshed = _mem(ada)("team", "cache", "refresh")
    feed = team_feed(ada.policy(), ada.identity, home=ada.home)
    peers, _ = list_peers(ada.policy(), identity=ada.identity, home=ada.home)
    checked = check_coordinator(bob.policy(), bob.identity, home=bob.home)

    shown = f"robert ({bob.key_id[:6]})"
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"{text.stdout.split()[0]}  {shown}")
    assert refreshed.returncode == 0, refreshed.stderr
    assert _authors(ada) == {shown}
    assert [e.author for e in feed.entries] == [shown]
    assert [(p.name, p.key_id) for p in peers] == [(shown, bob.key_id)]
    assert checked.name == shown


def test_a_refresh_after_the_chain_moved_names_and_drops_authors_anew(signed: SignedTeam) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    bob.share(LOCKS)
    first = refresh_cache(ada.home, ada.policy(), ada.identity)
    signed.rename(bob, "robert")
    renamed = refresh_cache(ada.home, ada.policy(), ada.identity)
    authors = _authors(ada)
    signed.revoke(bob)
    revoked = refresh_cache(ada.home, ada.policy(), ada.identity)

    assert (first.items, renamed.full, revoked.full) == (1, True, True)
    assert authors == {f"robert ({bob.key_id[:6]})"}
    assert revoked.items == 0


def test_a_disclosure_names_its_asker_as_the_chain_does_not_as_the_operator(
    signed: SignedTeam,
) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    with signed.operator() as db:
        db.execute("UPDATE coord_members SET name = 'mallory' WHERE key_id = ?", (bob.key_id,))
        db.execute(
            "INSERT INTO coord_disclosures (served_at, asker_key, author_key, item_id) "
            "VALUES (?, ?, ?, 'item-1')",
            (time.time(), bob.identity.public_key_text, ada.identity.public_key_text),
        )

    with Store(ada.home, author=ada.name) as store:
        disclosed = my_disclosures(ada.policy(), ada.identity, store)

    assert [(d.asker_key_id, d.asker_name) for d in disclosed] == [(bob.key_id, "bob")]
