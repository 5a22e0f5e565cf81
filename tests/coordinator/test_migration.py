"""Moving a coordinator from its SQLite file to PostgreSQL (`mem coordinator migrate`): a real
team's coordinator, made by real requests, moved into a real PostgreSQL database, then served
from it as it was served before; a move killed mid-copy goes on when run again; a source or a
target that cannot be moved is refused with nothing changed."""

import argparse
import contextlib
import json
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import msgspec
import psycopg
import pytest

from memmesh.cli._common import command_adder
from memmesh.cli._coordinator_migrate import register_migrate
from memmesh.cli.errors import UsageError
from memmesh.coordinator import Coordinator
from memmesh.coordinator.migration import Moved, Refused, migrate
from memmesh.coordinator.protocol import (
    ChainRequest,
    ChangesRequest,
    ChangesResponse,
    DisclosuresRequest,
    JoinRequest,
    MyTalliesRequest,
    PublishItem,
    PublishRequest,
    PublishResponse,
    RetractRequest,
    RetractResponse,
    StatementsRequest,
    TalliesRequest,
)
from memmesh.coordinator.storage import without_password
from memmesh.local.nonces import NonceFile
from memmesh.local.store import Store
from memmesh.net.audience import client_audience
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.signing import coordinator_audience, sign_request
from memmesh.registry import Identity, create_identity
from memmesh.registry import roster_chain as chain
from memmesh.registry.envelopes import Envelope, seal
from memmesh.registry.roster_chain import SignedStatement
from tests._servers import CoordinatorProcess
from tests._signed import caller, signed_client
from tests.coordinator._served import TOKEN
from tests.registry._helpers import TEAM, publication, retraction, tally

WORDS = ("quokka", "ledger", "webhook", "billing", "retry", "kernel", "cache", "deploy")


def _item(n: int) -> str:
    return f"01JABCDEFGHJKMNPQRSTV{n:05d}"


def _text(n: int) -> str:
    return f"The {WORDS[n % len(WORDS)]} service note {n}: {WORDS[(n * 3) % len(WORDS)]} rotates"


@dataclass
class Team:
    """A team on a coordinator: its keys, and what they did there."""

    ada: Identity
    bob: Identity
    cy: Identity
    chain: list[SignedStatement]
    retracted: Envelope


def _publish(coordinator: Coordinator, author: Identity, numbers: Iterable[int]) -> None:
    items = [
        PublishItem(
            envelope=seal(
                publication(author, item_id=_item(n), text=_text(n), team=coordinator.team),
                author,
            )
        )
        for n in numbers
    ]
    answer = coordinator.publish(caller(author), PublishRequest(items=items))
    assert {o.status for o in answer.results} == {"accepted"}, answer


def _signed(
    coordinator: Coordinator,
    ada: Identity,
    statements: list[SignedStatement],
    statement: SignedStatement,
) -> None:
    coordinator.membership.signed.statements(caller(ada), StatementsRequest(statements=[statement]))
    statements.append(statement)


def _make_team(
    data: Path, keys: Path, url: str | None = None, team: str = TEAM, embedder: str | None = None
) -> Team:
    """A coordinator in ``data`` (on the database ``url``, if given) whose team ``ada`` started
    and ``bob`` and ``cy`` joined, with live items, a tombstone, a purge, tallies and
    disclosures: everything a move copies."""
    ada, bob, cy = (create_identity(keys / name) for name in ("ada", "bob", "cy"))
    coordinator = Coordinator(data, team=team, database=url, embedder=embedder)
    try:
        made = coordinator.membership.bootstrap("ada")
        assert made is not None
        genesis = chain.genesis(ada, team, name="ada")
        coordinator.membership.join(caller(ada), JoinRequest(secret=made[0], genesis=genesis))
        statements = [genesis]

        def state() -> chain.RosterState:
            return chain.verify_chain(statements, root_key_id=ada.key_id, team=team)

        _signed(
            coordinator,
            ada,
            statements,
            chain.add(state(), ada, key=bob.public_key_text, name="bob"),
        )
        _signed(
            coordinator, ada, statements, chain.add(state(), ada, key=cy.public_key_text, name="cy")
        )
        _publish(coordinator, ada, range(0, 14))
        _publish(coordinator, bob, range(20, 29))
        _publish(coordinator, cy, range(40, 44))
        # A new version of one of ada's items moves it to the end of the feed.
        body = publication(
            ada, item_id=_item(3), text=_text(3) + " again", version=2, seq=3, team=team
        )
        coordinator.publish(
            caller(ada), PublishRequest(items=[PublishItem(envelope=seal(body, ada))])
        )
        retracted = seal(retraction(ada, item_id=_item(5), team=team), ada)
        [outcome] = coordinator.retract(caller(ada), RetractRequest(envelopes=[retracted])).results
        assert outcome.status == "accepted"
        assert coordinator.holdings.purge(cy.public_key_text) == 4
        tallies = [
            seal(tally(bob, ada, item_id=_item(n), worked=n, team=team), bob) for n in (1, 2, 4)
        ]
        coordinator.tally(caller(bob), TalliesRequest(envelopes=tallies))
        for query in ("quokka ledger", "webhook retry", "kernel cache"):
            coordinator.search(caller(bob), SearchRequest(query=query, project="billing"))
    finally:
        coordinator.close()
    return Team(ada, bob, cy, statements, retracted)


def _scores(answers: list[SearchResponse]) -> dict[tuple[int, bytes, str], float]:
    """Each hit of each search, by the search and the envelope served, with its scores
    (which of equally scored hits comes first is the search index's business)."""
    return {
        (n, hit.envelope.payload, part): getattr(hit, part)
        for n, answer in enumerate(answers)
        for hit in answer.hits
        for part in ("score", "cosine", "lexical")
    }


def _alike(after: dict[str, Any], before: dict[str, Any]) -> None:
    """What members are served after the move is what they were served before: searches
    score alike (the copies' vectors are normalised again as the database keeps them, which
    may change their last float32 bits), and everything else is the same."""
    assert after["search"] == pytest.approx(before["search"], rel=1e-6)
    assert {**after, "search": None} == {**before, "search": None}


def _seen(coordinator: Coordinator, team: Team) -> dict[str, Any]:
    """What the team's members are served: the changes feed, the roster and its chain,
    searches, receipts, tallies, disclosures, and what the operator lists."""
    ada = caller(team.ada)
    again = coordinator.retract(ada, RetractRequest(envelopes=[team.retracted]))
    return {
        "changes": coordinator.changes(ChangesRequest(cursor=0, limit=500)),
        "roster": coordinator.membership.roster(),
        "chain": coordinator.membership.signed.chain(ada, ChainRequest()),
        "search": _scores(
            [
                coordinator.search(ada, SearchRequest(query=query, project="billing", k=5))
                for query in ("quokka ledger", "webhook retry", "deploy note 27")
            ]
        ),
        "receipt": again.results,
        "tallies": coordinator.tallies_about(ada, MyTalliesRequest()),
        # Ada's own searches disclose bob's items, never hers.
        "disclosures": coordinator.disclosures(ada, DisclosuresRequest()),
        "holdings": coordinator.holdings.keys(),
        "info": coordinator.info(),
    }


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "coordinator"


@pytest.fixture
def team(data: Path, tmp_path: Path) -> Team:
    return _make_team(data, tmp_path / "keys")


def _served(data: Path, team: Team, url: str | None = None) -> dict[str, Any]:
    with contextlib.closing(Coordinator(data, team=TEAM, database=url)) as coordinator:
        return _seen(coordinator, team)


def _moved(outcome: Moved | Refused) -> Moved:
    assert isinstance(outcome, Moved), outcome
    return outcome


# -- the move ----------------------------------------------------------------------------------


def test_a_moved_coordinator_serves_its_members_as_before(
    data: Path, team: Team, database_url: str
) -> None:
    before = _served(data, team)

    moved = _moved(migrate(data, database_url))

    assert (moved.verdict, moved.problems, moved.team, moved.earlier) == ("verified", [], TEAM, 0)
    assert moved.rows == {
        "members": 3,
        "invites": 1,
        "roster_statements": 3,
        "publications": 22,
        "tombstones": 1,
        "vectors": 22,
        "purge_marks": 4,
        "tallies": 3,
        "disclosures": moved.rows["disclosures"],
    }
    assert moved.rows["disclosures"] > 0
    _alike(_served(data, team, database_url), before)


def test_the_moved_database_goes_on_where_the_file_stopped(
    data: Path, team: Team, database_url: str
) -> None:
    before = _served(data, team)
    _moved(migrate(data, database_url))

    with contextlib.closing(Coordinator(data, team=TEAM, database=database_url)) as moved:
        _publish(moved, team.bob, [35])
        new_tally = seal(tally(team.bob, team.ada, item_id=_item(6), worked=1), team.bob)
        moved.tally(caller(team.bob), TalliesRequest(envelopes=[new_tally]))
        moved.search(caller(team.bob), SearchRequest(query="quokka ledger", project="billing"))
    after = _served(data, team, database_url)

    head = before["changes"].head
    assert [(c.cursor, c.item_id) for c in after["changes"].changes[-1:]] == [(head + 1, _item(35))]
    cursors = [change.cursor for change in after["tallies"].tallies]
    assert cursors[-1] == max(c.cursor for c in before["tallies"].tallies) + 1
    assert len(after["disclosures"].entries) > len(before["disclosures"].entries)


def _target(url: str) -> dict[str, Any]:
    """What the database at ``url`` holds of a move: its feed (cursor, item, kind) and its
    coord_meta, or nothing when no coordinator ever opened it."""
    with psycopg.connect(url, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass('coord_meta') IS NULL").fetchone() == (True,):
            return {}
        feed = conn.execute(
            "SELECT cursor, item_id, kind FROM coord_envelopes ORDER BY cursor"
        ).fetchall()
        meta: dict[str, str] = dict(conn.execute("SELECT key, value FROM coord_meta").fetchall())
    return {"feed": feed, "meta": meta}


def _source_feed(data: Path) -> list[tuple[int, str, str]]:
    with contextlib.closing(Coordinator(data, team=TEAM)) as coordinator:
        changes = coordinator.changes(ChangesRequest(cursor=0, limit=500)).changes
    return [(c.cursor, c.item_id, c.kind) for c in changes]


# Runs a move in a process of its own, which kills itself (SIGKILL: nothing is cleaned up)
# once the rows copied reach argv[3].
_KILLED_MOVE = """
import os, signal, sys
from pathlib import Path
from memmesh.coordinator.migration import migrate

def step(done, total):
    if done >= int(sys.argv[3]):
        os.kill(os.getpid(), signal.SIGKILL)

migrate(Path(sys.argv[1]), sys.argv[2], batch=2, progress=step)
sys.exit("the move was never killed")
"""


def test_a_move_killed_mid_copy_completes_when_run_again_with_every_cursor_in_place(
    data: Path, team: Team, database_url: str
) -> None:
    before = _served(data, team)
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_MOVE, str(data), database_url, "13"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert killed.returncode == -9, killed.stderr
    # Members, the invite and the chain (7 rows), then three batches of two envelopes.
    partial = _target(database_url)["feed"]
    assert partial == _source_feed(data)[:6]

    moved = _moved(migrate(data, database_url))

    assert (moved.verdict, moved.earlier) == ("verified", 13)
    assert _target(database_url)["feed"] == _source_feed(data)
    _alike(_served(data, team, database_url), before)


def test_a_finished_move_run_again_says_so_and_changes_nothing(
    data: Path, team: Team, database_url: str
) -> None:
    first = _moved(migrate(data, database_url))
    held = _target(database_url)

    again = _moved(migrate(data, database_url))

    assert again == msgspec.structs.replace(first, before=True)
    assert _target(database_url) == held


def test_a_source_written_during_the_copy_is_reported_and_the_next_run_starts_over(
    data: Path, team: Team, database_url: str
) -> None:
    late = Coordinator(data, team=TEAM)
    published: list[int] = []

    def publish_once(done: int, total: int) -> None:
        if done >= 10 and not published:
            _publish(late, team.bob, [30])
            published.append(done)

    try:
        changed = _moved(migrate(data, database_url, batch=2, progress=publish_once))
    finally:
        late.close()
    assert (changed.verdict, changed.problems) == ("source_changed", [])
    assert "migration_done" not in _target(database_url)["meta"]

    moved = _moved(migrate(data, database_url))

    assert (moved.verdict, moved.earlier) == ("verified", 0)
    assert _target(database_url)["feed"] == _source_feed(data)
    assert _target(database_url)["feed"][-1][1] == _item(30)


def test_a_copy_that_differs_from_its_source_is_not_verified_nor_recorded(
    data: Path, team: Team, database_url: str
) -> None:
    def tamper(done: int, total: int) -> None:
        if done < total:
            return
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(
                "UPDATE coord_envelopes SET signature = overlay(signature placing '\\x00' "
                "from 1 for 1) WHERE cursor = 1"
            )
            conn.execute(
                "DELETE FROM coord_vectors WHERE copy_id = "
                "(SELECT copy_id FROM coord_envelopes WHERE cursor = 2)"
            )

    moved = _moved(migrate(data, database_url, progress=tamper))

    assert moved.verdict == "mismatch"
    assert moved.problems[0] == "coord_envelopes: 23 rows on both sides, but not the same ones"
    assert moved.problems[1].startswith("the envelope at cursor 1: ")
    assert "1 live publications have no vector in the database" in moved.problems
    assert "migration_done" not in _target(database_url)["meta"]


def test_the_embedder_of_the_folder_moves_with_its_vectors(
    data: Path, tmp_path: Path, database_url: str
) -> None:
    # Not the default embedder: the database would record that one by itself.
    team = _make_team(data, tmp_path / "keys", embedder="hashing")
    before = _served(data, team)

    moved = _moved(migrate(data, database_url))

    meta = _target(database_url)["meta"]
    assert moved.verdict == "verified"
    assert (meta["embedder"], meta["fingerprint"]) == ("hashing", moved.embedder)
    assert moved.embedder.startswith("hashing")
    _alike(_served(data, team, database_url), before)


# -- refusals ----------------------------------------------------------------------------------


def _member_home(folder: Path) -> Path:
    """A member's home: a store and a key, and no coordinator."""
    with Store(folder):
        pass
    create_identity(folder)
    return folder


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        pytest.param(lambda folder: folder, "holds no coordinator's SQLite data", id="missing"),
        pytest.param(_member_home, "holds no coordinator's tables", id="member-store"),
    ],
)
def test_a_folder_that_holds_no_coordinator_is_refused_and_nothing_is_made(
    tmp_path: Path, database_url: str, make: Any, problem: str
) -> None:
    folder = make(tmp_path / "folder")
    listed = sorted(folder.rglob("*")) if folder.exists() else None

    refused = migrate(folder, database_url)

    assert isinstance(refused, Refused)
    assert refused.reason == "no_coordinator"
    assert problem in refused.problem
    assert _target(database_url) == {}
    assert (sorted(folder.rglob("*")) if folder.exists() else None) == listed


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("mysql://db/memmesh", "is not a PostgreSQL URL (postgresql://USER@HOST/DBNAME)"),
        ("sqlite:///var/lib/memmesh.db", "is not a PostgreSQL URL"),
        ("postgresql://ada:hunter2@db/memmesh?bogus=1", "is not a usable PostgreSQL URL: "),
    ],
)
def test_a_target_that_is_not_postgresql_is_refused(
    data: Path, team: Team, url: str, problem: str
) -> None:
    listed = sorted(data.rglob("*"))

    refused = migrate(data, url)

    assert isinstance(refused, Refused)
    assert refused.reason == "not_postgresql"
    assert problem in refused.problem
    assert "hunter2" not in refused.problem
    assert sorted(data.rglob("*")) == listed


def test_a_database_holding_another_team_is_refused_and_left_as_it_was(
    data: Path, team: Team, tmp_path: Path, database_url: str
) -> None:
    _make_team(tmp_path / "others", tmp_path / "other-keys", url=database_url, team="others")
    held = _target(database_url)

    refused = migrate(data, database_url)

    assert isinstance(refused, Refused)
    assert refused.reason == "target_in_use"
    assert "already holds team 'others''s coordinator data" in refused.problem
    assert _target(database_url) == held
    assert not (data / "search-cache").exists()


def test_a_database_opened_with_another_embedder_is_refused(
    data: Path, team: Team, tmp_path: Path, database_url: str
) -> None:
    with contextlib.closing(
        Coordinator(tmp_path / "other", team=TEAM, database=database_url, embedder="hashing")
    ):
        pass
    held = _target(database_url)

    refused = migrate(data, database_url)

    assert isinstance(refused, Refused)
    assert refused.reason == "other_embedder"
    assert "with the embedder hashing" in refused.problem
    assert _target(database_url) == held


def test_a_database_holding_another_coordinator_s_move_is_refused(
    data: Path, team: Team, tmp_path: Path, database_url: str
) -> None:
    _moved(migrate(data, database_url))
    other = tmp_path / "other"
    _make_team(other, tmp_path / "other-keys", team="others")
    held = _target(database_url)

    refused = migrate(other, database_url)

    assert isinstance(refused, Refused)
    assert refused.reason == "other_source"
    assert str(data) in refused.problem
    assert _target(database_url) == held


def test_a_source_written_after_its_move_is_refused(
    data: Path, team: Team, database_url: str
) -> None:
    _moved(migrate(data, database_url))
    with contextlib.closing(Coordinator(data, team=TEAM)) as again_on_sqlite:
        _publish(again_on_sqlite, team.bob, [31])
    held = _target(database_url)

    refused = migrate(data, database_url)

    assert isinstance(refused, Refused)
    assert refused.reason == "moved_before"
    assert _target(database_url) == held


def test_a_coordinator_still_running_on_the_folder_is_refused(
    data: Path, team: Team, database_url: str
) -> None:
    running = CoordinatorProcess(data, team=TEAM, token="t").start()
    try:
        refused = migrate(data, database_url)
    finally:
        running.stop()

    assert isinstance(refused, Refused)
    assert refused.reason == "source_running"
    assert "stop the coordinator" in refused.problem
    assert _target(database_url) == {}


# -- the command -------------------------------------------------------------------------------


def _command(*words: str) -> int:
    """`mem coordinator migrate WORDS`, parsed and run as the command line does."""
    parser = argparse.ArgumentParser(prog="mem coordinator")
    register_migrate(command_adder(parser.add_subparsers()))
    args = parser.parse_args(["migrate", *words])
    code: int = args.handler(args)
    return code


def test_the_command_prints_what_it_moved_and_its_verdict(
    data: Path, team: Team, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _command("--from", str(data), "--to", database_url)
    text = capsys.readouterr().out
    again = _command("--from", str(data), "--to", database_url, "--json")
    shown = json.loads(capsys.readouterr().out)

    assert code == again == 0
    shown_url = without_password(database_url)
    assert f"moved: {data} into {shown_url} (team '{TEAM}', embedder " in text
    assert "live items 22 (vectors 22), tombstones 1, purge marks 4" in text
    assert "\nverified: every table holds the same rows" in text
    assert f"serve it with: mem coordinator serve --data {data} --database {shown_url}" in text
    assert (shown["verdict"], shown["before"], shown["team"]) == ("verified", True, TEAM)
    assert shown["moved_at"].endswith("+00:00")
    assert shown["rows"]["members"] == 3


def test_the_command_refuses_a_database_in_use_as_a_usage_error(
    data: Path, team: Team, tmp_path: Path, database_url: str
) -> None:
    _make_team(tmp_path / "others", tmp_path / "other-keys", url=database_url, team="others")

    with pytest.raises(UsageError) as refused:
        _command("--from", str(data), "--to", database_url)

    assert refused.value.exit_code == 2
    assert "move into an empty database" in str(refused.value)
    assert "(see `mem coordinator migrate --help`)" in str(refused.value)


# -- served from the database ------------------------------------------------------------------


def _answers(url: str, ada: Identity, bob: Identity, retracted: Envelope) -> dict[str, Any]:
    """What the coordinator at ``url`` answers its members over HTTP: a search, the changes
    feed, and the receipt of a retraction it applied before."""
    search = SearchRequest(query="quokka ledger", project="billing")
    with (
        signed_client(url, ada, team=TEAM, token=TOKEN) as as_ada,
        signed_client(url, bob, team=TEAM, token=TOKEN) as as_bob,
    ):
        return {
            "search": _scores([as_bob.post("/v1/search", search, SearchResponse)]),
            "changes": as_bob.post("/v1/changes", ChangesRequest(), ChangesResponse),
            "receipt": as_ada.post(
                "/v1/retract", RetractRequest(envelopes=[retracted]), RetractResponse
            ).results,
        }


def _signed_headers(identity: Identity, url: str, path: str, body: bytes) -> dict[str, str]:
    """The headers of one request ``identity`` signs for the coordinator at ``url``."""
    audience = client_audience(coordinator_audience(TEAM), url)
    return {
        **sign_request(identity, "POST", path, body, audience),
        "Authorization": f"Bearer {TOKEN}",
        "content-type": "application/json",
    }


def test_served_from_the_database_it_answers_as_before_and_refuses_a_replayed_request(
    tmp_path: Path, database_url: str
) -> None:
    data = tmp_path / "coordinator"
    ada, bob = create_identity(tmp_path / "ada"), create_identity(tmp_path / "bob")
    on_sqlite = CoordinatorProcess(data, team=TEAM, token=TOKEN).start()
    try:
        with signed_client(on_sqlite.url, ada, team=TEAM, token=TOKEN) as client:
            items = [
                PublishItem(envelope=seal(publication(ada, item_id=_item(n), text=_text(n)), ada))
                for n in range(6)
            ]
            client.post("/v1/publish", PublishRequest(items=items), PublishResponse)
            retracted = seal(retraction(ada, item_id=_item(2)), ada)
            client.post("/v1/retract", RetractRequest(envelopes=[retracted]), RetractResponse)
        before = _answers(on_sqlite.url, ada, bob, retracted)
        body = msgspec.json.encode(ChangesRequest())
        headers = _signed_headers(bob, on_sqlite.url, "/v1/changes", body)
        first = httpx.post(f"{on_sqlite.url}/v1/changes", content=body, headers=headers)
    finally:
        on_sqlite.stop()
    assert first.status_code == 200, first.text

    moved = _moved(migrate(data, database_url, nonces=NonceFile(data)))

    assert moved.verdict == "verified"
    assert moved.rows["nonces_moved"] >= 4
    on_postgres = CoordinatorProcess(
        data, team=TEAM, token=TOKEN, port=on_sqlite.port, args=("--database", database_url)
    ).start()
    try:
        after = _answers(on_postgres.url, ada, bob, retracted)
        replayed = httpx.post(f"{on_postgres.url}/v1/changes", content=body, headers=headers)
    finally:
        on_postgres.stop()
    _alike(after, before)
    assert after["search"] != {}
    assert after["receipt"][0].status == "duplicate"
    assert replayed.status_code == 401
