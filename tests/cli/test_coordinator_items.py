"""`mem coordinator items` and `purge`, and the quotas of `mem coordinator serve`, through the
real command line: exit codes, exact messages, and what a member's sync shows when refused."""

import contextlib
from pathlib import Path

import pytest

from memmesh.coordinator import Coordinator, coordinator_app
from memmesh.coordinator.protocol import (
    PublishItem,
    PublishRequest,
    PublishResponse,
    RetractRequest,
)
from memmesh.net.errors import Refused
from memmesh.net.quotas import Quotas
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.registry import Identity, create_identity
from memmesh.registry.envelopes import Envelope, seal
from tests._servers import CoordinatorProcess, running
from tests._signed import caller, make_admin, signed_client
from tests.cli._output import error_line, json_error, json_of
from tests.cli._terminal import on_terminal, with_stdin_open
from tests.cli.test_sync import TOKEN, TOKEN_ENV, _member, _unacked
from tests.conftest import MemRunner
from tests.registry._helpers import TEAM, publication, retraction

NOTE = "The zanzibar ledger rotates its keys on Tuesdays\nsecond line"
PUBLISHED_AT = 1_700_000_000.0  # 2023-11-14 22:13 UTC


def _envelope(identity: Identity, n: int, text: str = NOTE, **changes: object) -> Envelope:
    body = publication(
        identity, item_id=f"01JABCDEFGHJKMNPQRSTVWX{n:03d}", text=text, project="global",
        published_at=PUBLISHED_AT, **changes,
    )  # fmt: skip
    return seal(body, identity)


def _publish(c: Coordinator, identity: Identity, *envelopes: Envelope) -> list[str]:
    request = PublishRequest(items=[PublishItem(envelope=e) for e in envelopes])
    return [outcome.status for outcome in c.publish(caller(identity), request).results]


@pytest.fixture
def members(tmp_path: Path) -> tuple[Identity, Identity]:
    return create_identity(tmp_path / "ada"), create_identity(tmp_path / "bob")


@pytest.fixture
def data(tmp_path: Path, members: tuple[Identity, Identity]) -> Path:
    """A coordinator's data folder: ada (on the roster) has two live items and a tombstone,
    bob (not on it) one item."""
    ada, bob = members
    folder = tmp_path / "coordinator"
    with contextlib.closing(Coordinator(folder, team=TEAM)) as c:
        make_admin(c, ada, "ada")
        _publish(c, ada, _envelope(ada, 1), _envelope(ada, 2, "café\x1b[2J"))
        _publish(c, bob, _envelope(bob, 1, "short"))
        _publish(c, ada, _envelope(ada, 3))
        gone = seal(retraction(ada, item_id="01JABCDEFGHJKMNPQRSTVWX003"), ada)
        c.retract(caller(ada), RetractRequest(envelopes=[gone]))
    return folder


def test_items_lists_each_keys_share_the_largest_first(
    mem: MemRunner, data: Path, members: tuple[Identity, Identity]
) -> None:
    ada, bob = members
    result = mem("coordinator", "items", "--data", str(data))

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "member id         name                items   text bytes  key",
        f"{ada.key_id}  ada                     3           69  {ada.public_key_text}",
        f"{bob.key_id}  -                       1            5  {bob.public_key_text}",
    ]


def test_items_of_a_member_lists_its_items_with_their_first_line_escaped(
    mem: MemRunner, data: Path, members: tuple[Identity, Identity]
) -> None:
    ada, _ = members
    by_name = mem("coordinator", "items", "--data", str(data), "--member", "ada")
    by_key = json_of(
        mem("coordinator", "items", "--data", str(data), "--key", ada.key_id, "--json")
    )

    assert by_name.returncode == 0, by_name.stderr
    lines = by_name.stdout.splitlines()
    assert lines[0].split() == [
        "id",
        "status",
        "v",
        "bytes",
        "published",
        "stored",
        "first",
        "line",
    ]
    assert [line.split()[:4] for line in lines[1:]] == [
        ["01JABCDEFGHJKMNPQRSTVWX001", "live", "1", "60"],
        ["01JABCDEFGHJKMNPQRSTVWX002", "live", "1", "9"],
        ["01JABCDEFGHJKMNPQRSTVWX003", "retracted", "1", "0"],
    ]
    assert "  2023-11-14 22:13  " in lines[1]
    assert lines[1].endswith("The zanzibar ledger rotates its keys on Tuesdays")
    assert lines[2].endswith("café\\x1b[2J")
    assert by_key["key"] == ada.public_key_text
    assert by_key["items"][0] == {
        "item_id": "01JABCDEFGHJKMNPQRSTVWX001", "status": "live", "version": 1,
        "text_bytes": 60, "published_at": "2023-11-14T22:13:20+00:00",
        "stored_at": by_key["items"][0]["stored_at"],
        "first_line": "The zanzibar ledger rotates its keys on Tuesdays",
    }  # fmt: skip


def test_items_of_an_unknown_key_or_member_exits_1(mem: MemRunner, data: Path) -> None:
    key = mem("coordinator", "items", "--data", str(data), "--key", "nobody")
    member = mem("coordinator", "items", "--data", str(data), "--member", "carol")

    assert key.returncode == member.returncode == 1
    assert error_line(key) == "mem: error: the coordinator keeps no items for the key 'nobody'"
    assert error_line(member) == "mem: error: the roster has no member 'carol'"


def test_items_of_a_folder_without_coordinator_data_exits_2_and_makes_nothing(
    mem: MemRunner, tmp_path: Path
) -> None:
    empty = tmp_path / "typo"
    result = mem("coordinator", "items", "--data", str(empty))

    assert result.returncode == 2
    assert error_line(result) == (
        f"mem: error: {empty} holds no coordinator data (no memory.db) "
        "(see `mem coordinator items --help`)"
    )
    assert not empty.exists()


def test_purge_asks_on_the_terminal_and_any_answer_but_yes_purges_nothing(
    mem: MemRunner, data: Path, members: tuple[Identity, Identity], home: Path
) -> None:
    ada, _ = members
    code, out, shown = on_terminal(
        home, "coordinator", "purge", "--data", str(data), "--member", "ada", typed="\n"
    )

    assert (code, out) == (1, "")
    assert shown == (
        f"Erase the 2 live items of the key {ada.public_key_text} from the coordinator, for "
        "good? [y/N] mem: error: nothing was purged: not confirmed (answer y, or give --yes)\n"
    )
    assert _statuses(mem, data) == ["live", "live", "retracted"]


def test_purge_without_a_terminal_asks_nothing_and_purges_nothing(
    mem: MemRunner, home: Path, data: Path, members: tuple[Identity, Identity]
) -> None:
    # Standard input is a pipe that stays open and that nobody writes to: no wait on it.
    code, out, err = with_stdin_open(
        home, "coordinator", "purge", "--data", str(data), "--member", "ada"
    )

    assert (code, out) == (1, "")
    assert err == (
        "mem: error: nothing was purged: there is no terminal to ask on: give --yes to go ahead\n"
    )
    assert _statuses(mem, data) == ["live", "live", "retracted"]


def test_purge_with_json_and_no_yes_is_a_json_error(
    mem: MemRunner, data: Path, members: tuple[Identity, Identity]
) -> None:
    result = mem("coordinator", "purge", "--data", str(data), "--member", "ada", "--json")

    assert json_error(result) == {
        "error": "nothing was purged: with --json nothing is asked: give --yes to go ahead",
        "code": "not_confirmed",
        "exit": 1,
    }
    assert _statuses(mem, data) == ["live", "live", "retracted"]


def _statuses(mem: MemRunner, data: Path) -> list[str]:
    """The statuses of ada's items on the coordinator in ``data``."""
    listed = mem("coordinator", "items", "--data", str(data), "--member", "ada", "--json")
    return [item["status"] for item in json_of(listed)["items"]]


def test_purge_erases_a_keys_live_items_for_good(
    mem: MemRunner, data: Path, members: tuple[Identity, Identity]
) -> None:
    ada, bob = members
    # --key=KEY: a public key may start with "-", which argparse would take for an option.
    key = f"--key={ada.public_key_text}"
    result = mem("coordinator", "purge", "--data", str(data), key, "--yes")

    assert result.returncode == 0, result.stderr
    assert result.stdout == f"purged 2 live items of the key {ada.public_key_text}\n"
    # Its tombstone went too: the coordinator's purge marks keep the versions refused.
    listed = mem("coordinator", "items", "--data", str(data), "--key", ada.key_id, "--json")
    assert listed.returncode == 1
    assert json_error(listed)["code"] == "not_found"
    with contextlib.closing(Coordinator(data, team=TEAM)) as c:
        # Sent again, the purged versions never come back; a newer one is the member's own.
        assert _publish(c, ada, _envelope(ada, 1), _envelope(ada, 2, "café\x1b[2J")) == [
            "stale", "stale",
        ]  # fmt: skip
        assert _publish(c, ada, _envelope(ada, 1, "rotated again", version=2)) == ["accepted"]
        hits = c.search(caller(bob), SearchRequest(query="zanzibar ledger", project="global"))
        assert hits.hits == []
        with c.store.read() as tx:
            texts = [text for (text,) in tx.execute("SELECT text FROM items")]
        assert not [text for text in texts if "zanzibar" in text]


def test_sync_past_the_members_quota_prints_one_line_and_keeps_the_entries_queued(
    mem: MemRunner, home: Path, tmp_path: Path
) -> None:
    limited = Coordinator(tmp_path / "limited", team=TEAM, quotas=Quotas(member_items=1))
    try:
        with running(coordinator_app(limited, token=TOKEN)) as url:
            _member(home, url)
            result = mem("team", "sync", env=TOKEN_ENV)
            assert limited.info().published == 0
    finally:
        limited.close()

    assert result.returncode == 1
    assert error_line(result) == (
        "mem: error: this member's share of the coordinator is full: it holds 0 items and this "
        "batch adds 2, past the limit of 1; nothing of the batch was stored. Retract items no "
        "longer needed, or ask the coordinator's operator to raise --member-items (HTTP 413)"
    )
    assert _unacked(home) == 3  # the retracted one is settled, never to be sent


def test_serve_takes_its_quotas_from_the_command_line_and_purge_works_while_it_runs(
    mem: MemRunner, tmp_path: Path, members: tuple[Identity, Identity]
) -> None:
    ada, _ = members
    process = CoordinatorProcess(
        tmp_path / "served",
        team=TEAM,
        token=None,
        args=["--member-items", "2", "--total-bytes", "1K"],
    )
    try:
        process.start()
        with signed_client(process.url, ada, team=TEAM) as client:
            first = PublishRequest(items=[PublishItem(envelope=_envelope(ada, n)) for n in (1, 2)])
            results = client.post("/v1/publish", first, PublishResponse).results
            assert [outcome.status for outcome in results] == ["accepted", "accepted"]
            third = PublishRequest(items=[PublishItem(envelope=_envelope(ada, 3))])
            with pytest.raises(Refused) as refused:
                client.post("/v1/publish", third, PublishResponse)
            search = SearchRequest(query="zanzibar ledger", project="global")
            assert client.post("/v1/search", search, SearchResponse).hits

            purged = mem(
                "coordinator", "purge", "--data", str(process.data), "--key", ada.key_id, "--yes"
            )

            assert purged.returncode == 0, purged.stderr
            assert client.post("/v1/search", search, SearchResponse).hits == []
    finally:
        process.stop()
    assert refused.value.http_status == 413
    assert refused.value.message.endswith("raise --member-items (HTTP 413)")


def test_a_quota_flag_that_is_not_a_size_is_a_usage_error(mem: MemRunner, tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    result = mem("coordinator", "serve", "--data", data, "--team", TEAM, "--member-bytes", "4 pc")

    assert result.returncode == 2
    assert error_line(result) == (
        "mem coordinator serve: error: argument --member-bytes: '4 pc' is not a size like "
        "4194304, 512K, 4M or 1G (see `mem coordinator serve --help`)"
    )
    assert not (tmp_path / "d").exists()
