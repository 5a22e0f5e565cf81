"""What a member believes of the team's signed roster, whatever its coordinator serves: the
chain its admins signed, verified from the root team.yaml pins and kept in the home, never the
coordinator's list. The coordinator here is a small stand-in on 127.0.0.1 that serves a chain
(and lies as an operator would); members' homes, keys and team.yaml are real."""

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from memmesh.coordinator.protocol import ChainRequest, ChainResponse
from memmesh.net.client import Client
from memmesh.net.errors import BadResponse
from memmesh.net.presence import Roster, RosterMember
from memmesh.net.wire import encode
from memmesh.policy import load_policy
from memmesh.registry import create_identity
from memmesh.registry import roster_chain as chain
from memmesh.registry.identity import Identity
from memmesh.registry.roster_chain import SignedStatement
from memmesh.team.chain import CHAIN_FILENAME, keep_chain, kept_chain, trusted_roster
from memmesh.team.errors import RosterNotTrusted
from tests._servers import running

TEAM = "acme"


class FakeCoordinator:
    """Serves ``statements`` as the team's chain (``head_seq`` -1 when there are none), and
    records the start of each page asked for."""

    def __init__(self) -> None:
        self.statements: list[SignedStatement] = []
        self.asked: list[int] = []

    def app(self) -> Starlette:
        async def read(request: Request) -> Response:
            asked = msgspec.json.decode(await request.body(), type=ChainRequest)
            self.asked.append(asked.start)
            page = ChainResponse(
                statements=self.statements[asked.start :], head_seq=len(self.statements) - 1
            )
            return Response(encode(page), media_type="application/json")

        return Starlette(routes=[Route("/v1/roster/chain", read, methods=["POST"])])


class Signed:
    """A team's chain as its admin ``ada`` signs it: ada the root, then bob."""

    def __init__(self, tmp_path: Path) -> None:
        self.ada = create_identity(tmp_path / "ada-key")
        self.bob = create_identity(tmp_path / "bob-key")
        self.statements = [chain.genesis(self.ada, TEAM, name="ada")]
        self.then(chain.add, key=self.bob.public_key_text, name="bob")

    def then(self, make: object, **fields: object) -> SignedStatement:
        state = chain.verify_chain(self.statements, root_key_id=self.ada.key_id, team=TEAM)
        statement: SignedStatement = make(state, self.ada, **fields)  # type: ignore[operator]
        self.statements.append(statement)
        return statement


@pytest.fixture
def signed(tmp_path: Path) -> Signed:
    return Signed(tmp_path)


@pytest.fixture
def fake() -> Iterator[tuple[FakeCoordinator, str]]:
    coordinator = FakeCoordinator()
    with running(coordinator.app()) as url:
        yield coordinator, url


def _home(tmp_path: Path, url: str, *, root: str | None, extra: str = "") -> Path:
    """A member's home whose team.yaml names the coordinator at ``url`` and pins ``root``."""
    home = tmp_path / "member"
    home.mkdir()
    pinned = f"roster_root: {root}\n" if root else ""
    text = f"version: 1\nteam: {TEAM}\ncoordinator: {url}\n{pinned}{extra}"
    (home / "team.yaml").write_text(text, encoding="utf-8")
    return home


def _client(url: str, identity: Identity) -> Client:
    return Client(url, token=None, identity=identity, audience="coordinator:acme")


def _listed(*entries: tuple[str, Identity], head: tuple[int, str] = (1, "")) -> Roster:
    """The coordinator's word: these names and keys are the team's active members."""
    members = [
        RosterMember(name=name, key=i.public_key_text, key_id=i.key_id, admin=False, added_at=1.0)
        for name, i in entries
    ]
    return Roster(members=members, enforced=True, head_seq=head[0], head_hash=head[1])


def _believed(home: Path, url: str, signed: Signed, given: Roster) -> Roster:
    with _client(url, signed.ada) as client:
        roster = trusted_roster(client, home, load_policy(home), given)
    assert roster is not None
    return roster


def _refusal(home: Path, url: str, signed: Signed, given: Roster) -> RosterNotTrusted:
    with pytest.raises(RosterNotTrusted) as refused:
        _believed(home, url, signed, given)
    return refused.value


def test_a_pinned_member_believes_the_chain_and_not_the_coordinators_list(
    tmp_path: Path, fake: tuple[FakeCoordinator, str], signed: Signed
) -> None:
    coordinator, url = fake
    coordinator.statements = list(signed.statements)
    mallory = create_identity(tmp_path / "mallory-key")
    home = _home(tmp_path, url, root=signed.ada.key_id)
    # The operator's list: bob relabelled, and a key of its own added.
    given = _listed(("ada", signed.ada), ("alice", signed.bob), ("bob", mallory))

    roster = _believed(home, url, signed, given)

    assert [(m.name, m.key_id) for m in roster.members] == [
        ("ada", signed.ada.key_id),
        ("bob", signed.bob.key_id),
    ]
    assert (roster.head_seq, roster.head_hash) == (1, signed.statements[-1].hash)
    assert kept_chain(home, team=TEAM, root=signed.ada.key_id) == signed.statements


def test_a_roster_naming_the_kept_head_reads_no_chain_and_makes_no_client(
    tmp_path: Path, fake: tuple[FakeCoordinator, str], signed: Signed
) -> None:
    coordinator, url = fake
    coordinator.statements = list(signed.statements)
    home = _home(tmp_path, url, root=signed.ada.key_id)
    head = (1, signed.statements[-1].hash)
    _believed(home, url, signed, _listed(head=head))
    asked = len(coordinator.asked)

    def connect() -> Client:
        raise AssertionError("no client is made when the head is the kept one")

    roster = trusted_roster(connect, home, load_policy(home), _listed(head=head))

    assert roster is not None
    assert [m.name for m in roster.members] == ["ada", "bob"]
    assert len(coordinator.asked) == asked


def test_a_moved_head_reads_only_the_statements_after_the_kept_one(
    tmp_path: Path, fake: tuple[FakeCoordinator, str], signed: Signed
) -> None:
    coordinator, url = fake
    coordinator.statements = list(signed.statements)
    home = _home(tmp_path, url, root=signed.ada.key_id)
    _believed(home, url, signed, _listed())
    carol = create_identity(tmp_path / "carol-key")
    signed.then(chain.add, key=carol.public_key_text, name="carol")
    signed.then(chain.revoke, key=signed.bob.public_key_text)
    coordinator.statements = list(signed.statements)
    coordinator.asked.clear()

    roster = _believed(home, url, signed, _listed(head=(3, signed.statements[-1].hash)))

    assert coordinator.asked == [1]  # from the kept head on, to check it is still there
    assert {m.name: m.revoked_at is not None for m in roster.members} == {
        "ada": False, "bob": True, "carol": False,
    }  # fmt: skip
    assert len(kept_chain(home, team=TEAM, root=signed.ada.key_id)) == 4


def test_a_chain_cut_short_is_refused_as_a_rollback_and_the_kept_chain_stays(
    tmp_path: Path, fake: tuple[FakeCoordinator, str], signed: Signed
) -> None:
    coordinator, url = fake
    signed.then(chain.revoke, key=signed.bob.public_key_text)
    coordinator.statements = list(signed.statements)
    home = _home(tmp_path, url, root=signed.ada.key_id)
    _believed(home, url, signed, _listed())
    kept = (home / CHAIN_FILENAME).read_bytes()
    coordinator.statements = signed.statements[:2]  # the revocation deleted

    refused = _refusal(home, url, signed, _listed())

    assert (refused.reason, refused.code, refused.exit_code) == (
        "rollback", "roster_not_trusted", 3,
    )  # fmt: skip
    assert "rollback" in refused.message
    assert (home / CHAIN_FILENAME).read_bytes() == kept


def test_another_chain_as_long_as_the_kept_one_is_refused_as_a_fork(
    tmp_path: Path, fake: tuple[FakeCoordinator, str], signed: Signed
) -> None:
    coordinator, url = fake
    coordinator.statements = list(signed.statements)
    home = _home(tmp_path, url, root=signed.ada.key_id)
    _believed(home, url, signed, _listed())
    kept = (home / CHAIN_FILENAME).read_bytes()
    # The root's key signs another statement 1: the coordinator serves that branch instead.
    state = chain.verify_chain(signed.statements[:1], root_key_id=signed.ada.key_id, team=TEAM)
    other = chain.add(state, signed.ada, key=signed.bob.public_key_text, name="robert")
    coordinator.statements = [signed.statements[0], other]

    refused = _refusal(home, url, signed, _listed(head=(1, other.hash)))

    assert (refused.reason, refused.seq) == ("fork", 1)
    assert (home / CHAIN_FILENAME).read_bytes() == kept


def test_an_edited_statement_after_the_kept_head_is_refused_and_nothing_is_kept(
    tmp_path: Path, fake: tuple[FakeCoordinator, str], signed: Signed
) -> None:
    coordinator, url = fake
    coordinator.statements = list(signed.statements)
    home = _home(tmp_path, url, root=signed.ada.key_id)
    _believed(home, url, signed, _listed())
    kept = (home / CHAIN_FILENAME).read_bytes()
    carol = create_identity(tmp_path / "carol-key")
    added = signed.then(chain.add, key=carol.public_key_text, name="carol")
    edited = msgspec.structs.replace(added, body=added.body.replace(b'"carol"', b'"carla"'))
    coordinator.statements = [*signed.statements[:2], edited]

    refused = _refusal(home, url, signed, _listed(head=(2, edited.hash)))

    assert (refused.reason, refused.seq) == ("bad_signature", 2)
    assert (home / CHAIN_FILENAME).read_bytes() == kept


def test_a_chain_from_another_root_is_refused(
    tmp_path: Path, fake: tuple[FakeCoordinator, str], signed: Signed
) -> None:
    coordinator, url = fake
    mallory = create_identity(tmp_path / "mallory-key")
    coordinator.statements = [chain.genesis(mallory, TEAM, name="ada")]
    home = _home(tmp_path, url, root=signed.ada.key_id)

    refused = _refusal(home, url, signed, _listed())

    assert (refused.reason, refused.seq) == ("not_root", 0)
    assert not (home / CHAIN_FILENAME).exists()


def test_a_coordinator_that_says_the_roster_is_not_signed_is_refused(
    tmp_path: Path, fake: tuple[FakeCoordinator, str], signed: Signed
) -> None:
    _, url = fake
    home = _home(tmp_path, url, root=signed.ada.key_id)

    refused = _refusal(home, url, signed, _listed(head=(-1, "")))

    assert refused.reason == "unsigned"


def test_an_unpinned_member_pins_the_root_on_first_sight_then_refuses_a_forged_chain(
    tmp_path: Path,
    fake: tuple[FakeCoordinator, str],
    signed: Signed,
    caplog: pytest.LogCaptureFixture,
) -> None:
    coordinator, url = fake
    coordinator.statements = list(signed.statements)
    home = _home(tmp_path, url, root=None, extra="# the team's own words\ndiscovery: false\n")
    given = _listed(("ada", signed.ada), ("alice", signed.bob), head=(1, "x"))

    with caplog.at_level(logging.WARNING):
        roster = _believed(home, url, signed, given)
    mallory = create_identity(tmp_path / "mallory-key")
    coordinator.statements = [chain.genesis(mallory, TEAM, name="ada")]
    (home / CHAIN_FILENAME).unlink()  # even with nothing kept, the pinned root decides
    refused = _refusal(home, url, signed, given)

    assert [m.name for m in roster.members] == ["ada", "bob"]
    text = (home / "team.yaml").read_text(encoding="utf-8")
    assert text.startswith(
        f"version: 1\nteam: {TEAM}\ncoordinator: {url}\n# the team's own words\ndiscovery: false\n"
    )
    assert load_policy(home).roster_root == signed.ada.key_id
    assert [r.getMessage() for r in caplog.records] == [
        f"pinned the team's signed roster: root {signed.ada.key_id}"
    ]
    assert refused.reason == "not_root"


def test_an_unpinned_member_takes_an_unsigned_roster_as_the_coordinator_gives_it(
    tmp_path: Path, fake: tuple[FakeCoordinator, str], signed: Signed
) -> None:
    coordinator, url = fake
    home = _home(tmp_path, url, root=None)
    given = _listed(("ada", signed.ada), head=(-1, ""))

    roster = _believed(home, url, signed, given)

    assert roster == given
    assert coordinator.asked == []
    assert load_policy(home).roster_root is None


def test_a_renamed_member_and_the_key_now_named_as_they_were_show_their_member_ids(
    tmp_path: Path, fake: tuple[FakeCoordinator, str], signed: Signed
) -> None:
    coordinator, url = fake
    carol = create_identity(tmp_path / "carol-key")
    signed.then(chain.rename, key=signed.bob.public_key_text, name="robert")
    signed.then(chain.add, key=carol.public_key_text, name="bob", at=time.time())
    coordinator.statements = list(signed.statements)
    home = _home(tmp_path, url, root=signed.ada.key_id)

    roster = _believed(home, url, signed, _listed(("bob", signed.bob), ("bob2", carol)))

    names = {m.key_id: m.name for m in roster.members}
    assert names[signed.ada.key_id] == "ada"
    assert names[signed.bob.key_id] == f"robert ({signed.bob.key_id[:6]})"
    assert names[carol.key_id] == f"bob ({carol.key_id[:6]})"


def test_an_unpinned_member_that_kept_a_chain_refuses_a_roster_said_to_be_unsigned(
    tmp_path: Path, fake: tuple[FakeCoordinator, str], signed: Signed
) -> None:
    # team.yaml could not take the pin, but the verified chain was kept: the operator cannot
    # now say the roster is not signed and have its own list believed.
    _, url = fake
    home = _home(tmp_path, url, root=None)
    keep_chain(home, TEAM, signed.ada.key_id, list(signed.statements))
    mallory = create_identity(tmp_path / "mallory-key")

    refused = _refusal(home, url, signed, _listed(("mallory", mallory), head=(-1, "")))

    assert refused.reason == "unsigned"


def test_an_unpinned_member_that_kept_a_chain_never_pins_the_root_of_another(
    tmp_path: Path, fake: tuple[FakeCoordinator, str], signed: Signed
) -> None:
    coordinator, url = fake
    home = _home(tmp_path, url, root=None)
    keep_chain(home, TEAM, signed.ada.key_id, list(signed.statements))
    mallory = create_identity(tmp_path / "mallory-key")
    coordinator.statements = [chain.genesis(mallory, TEAM, name="ada")]
    forged = coordinator.statements[0]

    refused = _refusal(home, url, signed, _listed(("ada", mallory), head=(0, forged.hash)))

    assert refused.reason == "rollback"
    assert load_policy(home).roster_root is None


@pytest.mark.parametrize(
    "damage",
    [
        b"\xff\xfe not json",
        b'{"format": 1, "team": "acme", "root": "ROOT", "statements": [{"body": "", '
        b'"signatures": []}]}',
        b'{"format": 1, "team": "acme", "root": "ROOT", "statements": "many"}',
        b'{"format": 1, "team": "acme", "root": "ROOT", "statements": [{"body": "e30=", '
        b'"signatures": ["' + b"A" * 86 + b"==" + b'"]}]}',
        b"[]",
        b'{"format": 1, "team": "acme", "root": "ROOT", "statements": ['
        + b", ".join([b'{"body": "e30=", "signatures": ["' + b"A" * 86 + b"==" + b'"]}'] * 3)
        + b"]}",
    ],
)
def test_a_damaged_kept_chain_is_ignored_and_the_chain_read_again(
    tmp_path: Path, fake: tuple[FakeCoordinator, str], signed: Signed, damage: bytes
) -> None:
    coordinator, url = fake
    coordinator.statements = list(signed.statements)
    home = _home(tmp_path, url, root=signed.ada.key_id)
    (home / CHAIN_FILENAME).write_bytes(damage.replace(b"ROOT", signed.ada.key_id.encode()))

    roster = _believed(home, url, signed, _listed(("ada", signed.ada)))

    assert [m.name for m in roster.members] == ["ada", "bob"]
    assert coordinator.asked == [0]
    assert kept_chain(home, team=TEAM, root=signed.ada.key_id) == signed.statements


def test_pages_that_never_end_nor_follow_are_refused_after_a_bounded_read(
    tmp_path: Path, signed: Signed
) -> None:
    asked: list[int] = []

    async def read(request: Request) -> Response:
        asked.append(msgspec.json.decode(await request.body(), type=ChainRequest).start)
        page = ChainResponse(statements=list(signed.statements), head_seq=1, more=True)
        return Response(encode(page), media_type="application/json")

    app = Starlette(routes=[Route("/v1/roster/chain", read, methods=["POST"])])
    with running(app) as url:
        home = _home(tmp_path, url, root=signed.ada.key_id)
        with pytest.raises(BadResponse):
            _believed(home, url, signed, _listed(("ada", signed.ada)))

    assert 1 < len(asked) <= 100
    assert not (home / CHAIN_FILENAME).exists()
