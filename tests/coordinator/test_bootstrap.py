"""The first admin's join code: made while the roster is empty, kept private in the data
folder, the same across restarts until used, and gone once someone has joined."""

import stat
from pathlib import Path

import pytest

from memmesh.coordinator import Coordinator
from memmesh.coordinator.bootstrap import ADMIN_CODE_FILENAME, admin_join_code
from memmesh.coordinator.invites import JoinCode
from memmesh.coordinator.protocol import JoinRequest
from memmesh.net.errors import Forbidden
from memmesh.registry import Identity, create_identity, roster_chain
from tests._clock import START, FakeClock
from tests._signed import caller
from tests.registry._helpers import TEAM

URL = "https://team-host:8400"
PIN = "sha256:" + "ab" * 32


def _starting(secret: str, identity: Identity, name: str) -> JoinRequest:
    """The first admin's join: the code's secret, and the genesis of the signed roster."""
    return JoinRequest(secret=secret, genesis=roster_chain.genesis(identity, TEAM, name=name))


def _code(c: Coordinator, data: Path, **options: str) -> JoinCode | None:
    return admin_join_code(c.membership, data, url=URL, pin=PIN, **options)


def test_an_empty_roster_gets_one_admin_code_written_privately(
    coordinator: Coordinator, data: Path
) -> None:
    code = _code(coordinator, data)

    assert code is not None
    assert (code.url, code.team, code.name, code.pin, code.admin) == (URL, TEAM, "admin", PIN, True)
    assert code.start  # its joiner starts the signed roster
    assert code.root is None
    path = data / ADMIN_CODE_FILENAME
    assert path.read_text(encoding="utf-8") == code.encode() + "\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert JoinCode.decode(code.encode(), now=START) == code


def test_the_code_stays_the_same_across_restarts_until_it_is_used(
    coordinator: Coordinator, data: Path, tmp_path: Path
) -> None:
    first = _code(coordinator, data)
    again = _code(coordinator, data)
    assert first is not None
    assert again is not None
    assert again.secret == first.secret

    ada = create_identity(tmp_path / "ada")
    joined = coordinator.membership.join(caller(ada), _starting(first.secret, ada, "admin"))

    assert (joined.member.name, joined.member.admin) == ("admin", True)
    assert _code(coordinator, data) is None
    assert not (data / ADMIN_CODE_FILENAME).exists()


def test_the_code_admits_one_key_only(coordinator: Coordinator, data: Path, tmp_path: Path) -> None:
    code = _code(coordinator, data)
    assert code is not None
    ada, mallory = create_identity(tmp_path / "ada"), create_identity(tmp_path / "mallory")
    coordinator.membership.join(caller(ada), _starting(code.secret, ada, "admin"))

    with pytest.raises(Forbidden):
        coordinator.membership.join(caller(mallory), _starting(code.secret, mallory, "admin"))


def test_an_expired_or_renamed_code_is_replaced_and_the_old_one_admits_nobody(
    coordinator: Coordinator, data: Path, clock: FakeClock, tmp_path: Path
) -> None:
    first = _code(coordinator, data)
    assert first is not None
    renamed = _code(coordinator, data, name="root")
    assert renamed is not None
    clock.now = renamed.expires_at
    fresh = _code(coordinator, data, name="root")
    assert fresh is not None

    assert len({first.secret, renamed.secret, fresh.secret}) == 3
    assert (renamed.name, fresh.expires_at) == ("root", clock.now + 7 * 24 * 3600)
    for old in (first, renamed):
        joiner = create_identity(tmp_path / old.name / "x")
        with pytest.raises(Forbidden):
            coordinator.membership.join(caller(joiner), _starting(old.secret, joiner, old.name))
    ada = create_identity(tmp_path / "ada")
    joined = coordinator.membership.join(caller(ada), _starting(fresh.secret, ada, "root"))
    assert joined.member.name == "root"
