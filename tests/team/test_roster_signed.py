"""An admin's change racing another admin's on the signed roster: the coordinator takes the
first, and the second is read, checked and signed again on the new head, up to three times;
with a real coordinator on 127.0.0.1."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memmesh.net.errors import Refused
from memmesh.policy import load_policy
from memmesh.registry import load_identity
from memmesh.registry.roster_chain import RosterState
from memmesh.team import _roster_signed, chain, roster
from tests.cli._signed_team import SignedTeam
from tests.team._team import Team


@pytest.fixture
def signed(loopback_team: Team, tmp_path: Path) -> SignedTeam:
    """ada, who started the signed roster, and bob and carol, whom she invited; bob an admin."""
    team = SignedTeam(loopback_team, tmp_path / "homes")
    team.start("ada")
    team.join("bob")
    team.join("carol")
    assert team.mem("ada")("team", "members", "promote", "bob").returncode == 0
    return team


def _as(signed: SignedTeam, home: str) -> dict[str, Any]:
    folder = signed.root / home
    return {"policy": load_policy(folder), "identity": load_identity(folder), "home": folder}


def _racing(
    monkeypatch: pytest.MonkeyPatch, other: Callable[[], object], *, times: int
) -> list[int]:
    """Make another admin's change (``other``) land right after each of the next ``times``
    reads of the roster, before what was read is signed and sent; returns the heads read."""
    real = chain.verified_state
    heads: list[int] = []
    inside = [False]

    def read(*args: Any, **kwargs: Any) -> RosterState:
        state = real(*args, **kwargs)
        if inside[0]:
            return state  # the other admin's own read
        heads.append(state.head.seq)
        if len(heads) <= times:
            inside[0] = True
            try:
                other()
            finally:
                inside[0] = False
        return state

    monkeypatch.setattr(_roster_signed, "verified_state", read, raising=True)
    return heads


def test_two_admins_changing_at_once_both_land(
    signed: SignedTeam, monkeypatch: pytest.MonkeyPatch
) -> None:
    heads = _racing(
        monkeypatch, lambda: roster.promote(member="carol", **_as(signed, "bob")), times=1
    )

    renamed = roster.rename(member="carol", name="caroline", **_as(signed, "ada"))

    assert heads == [5, 6]  # read, raced, read again on the new head
    assert (renamed.admin, renamed.name.split()[0]) == (True, "caroline")
    served = {m.key_id: m for m in signed.coordinator_roster().members}
    assert served[signed.key_id("carol")].admin
    assert signed.coordinator_roster().head_seq == 7


def test_a_change_raced_on_every_try_gives_up_after_three(
    signed: SignedTeam, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = iter(["c1", "c2", "c3"])
    carol = signed.key_id("carol")
    _racing(
        monkeypatch,
        lambda: roster.rename(member=carol, name=next(names), **_as(signed, "bob")),
        times=3,
    )

    with pytest.raises(Refused) as caught:
        roster.promote(member=carol, **_as(signed, "ada"))

    assert (caught.value.http_status, caught.value.error_code) == (409, "stale_roster_head")
    served = {m.key_id: m for m in signed.coordinator_roster().members}
    assert not served[carol].admin
    assert signed.coordinator_roster().head_seq == 8  # bob's three renames, none of ada's
