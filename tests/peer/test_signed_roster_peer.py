"""A peer daemon whose member pins the team's signed roster answers by the chain its admins
signed: a key the coordinator's operator puts in its table is refused though the coordinator
admits it, a chain the operator forges is logged and the last verified roster kept, and an
admin's signed revocation still reaches the peer within the bound. A real coordinator on
127.0.0.1 (its store file edited with sqlite3) and real `mem team serve` processes."""

import time

import msgspec
import pytest

from memmesh.peer.chain import keep_chain
from memmesh.peer.heartbeat import REVOCATION_BOUND_S
from memmesh.registry import roster_chain as chain
from tests.team._signed import SignedTeam
from tests.team._team import LOCKS, Member, PeerDaemon, peer_status

pytestmark = pytest.mark.usefixtures("team_token")


def _serving(signed: SignedTeam, member: Member, *, heartbeat: float = 0.5) -> PeerDaemon:
    member.share(LOCKS)
    daemon = PeerDaemon(member, heartbeat=heartbeat)
    signed.team.daemons.append(daemon)
    daemon.launch()
    daemon.wait_ready()
    return daemon


def _answered(asker: Member, peer: Member, url: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while peer_status(asker, peer, url) != 200:
        assert time.monotonic() < deadline, f"{asker.name} was never answered"
        time.sleep(0.1)


def _admit_behind_the_admins_back(signed: SignedTeam, intruder: Member) -> None:
    with signed.operator() as db:
        db.execute(
            "INSERT INTO coord_members (key, key_id, name, admin, added_at) VALUES (?, ?, ?, 0, ?)",
            (intruder.identity.public_key_text, intruder.key_id, intruder.name, time.time()),
        )


def test_a_key_the_operator_adds_is_refused_by_a_pinned_peer(signed: SignedTeam) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    daemon = _serving(signed, ada)
    _answered(bob, ada, daemon.url)
    mallory = signed.member("mallory")
    _admit_behind_the_admins_back(signed, mallory)
    mallory.sync()  # the coordinator admits the key now

    time.sleep(2.0)  # several heartbeats and roster checks
    status = peer_status(mallory, ada, daemon.url)

    assert status == 403
    assert peer_status(bob, ada, daemon.url) == 200


def test_a_forged_chain_is_logged_and_the_peer_keeps_the_last_verified_roster(
    signed: SignedTeam, monkeypatch: pytest.MonkeyPatch
) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    daemon = _serving(signed, ada)
    _answered(bob, ada, daemon.url)
    mallory, carol = signed.member("mallory"), signed.member("carol")
    # The operator turns ada's signed add of carol into an add of its own key, appends it,
    # and admits that key.
    added = chain.add(signed.state, ada.identity, key=carol.identity.public_key_text, name="m")
    body = added.body.replace(
        carol.identity.public_key_text.encode(), mallory.identity.public_key_text.encode()
    )
    signed.serve_unchecked(monkeypatch)
    signed.store_statement(2, msgspec.structs.replace(added, body=body))
    _admit_behind_the_admins_back(signed, mallory)

    deadline = time.monotonic() + 10
    while "does not verify" not in daemon.log.read_text(encoding="utf-8"):
        assert time.monotonic() < deadline, daemon.log.read_text(encoding="utf-8")
        time.sleep(0.2)

    assert peer_status(mallory, ada, daemon.url) == 403
    assert peer_status(bob, ada, daemon.url) == 200


def test_a_signed_revocation_reaches_a_pinned_peer_within_the_bound(signed: SignedTeam) -> None:
    ada, bob = signed.team.members["ada"], signed.team.members["bob"]
    daemon = _serving(signed, ada, heartbeat=30.0)
    _answered(bob, ada, daemon.url)

    signed.revoke(bob)
    revoked = time.monotonic()
    status = 200
    while status == 200 and time.monotonic() - revoked < REVOCATION_BOUND_S + 3:
        status = peer_status(bob, ada, daemon.url)
        time.sleep(0.1)
    took = time.monotonic() - revoked

    assert status == 403
    assert took <= REVOCATION_BOUND_S


def test_an_unpinned_peer_pins_the_root_on_first_sight(signed: SignedTeam) -> None:
    carol = signed.member("carol", pinned=False)
    signed.add(carol)
    bob = signed.team.members["bob"]
    daemon = _serving(signed, carol)

    _answered(bob, carol, daemon.url)

    assert carol.policy().roster_root == signed.root
    assert f"pinned the team's signed roster: root {signed.root}" in daemon.log.read_text(
        encoding="utf-8"
    )


def test_an_unpinned_peer_that_kept_the_chain_refuses_a_roster_said_to_be_unsigned(
    signed: SignedTeam,
) -> None:
    # carol's team.yaml pins no root, but her home kept the verified chain: the operator who
    # empties the chain table and admits its own key does not have its list believed.
    carol = signed.member("carol", pinned=False)
    signed.add(carol)
    keep_chain(carol.home, signed.team.team, signed.root, list(signed.statements))
    mallory = signed.member("mallory")
    with signed.operator() as db:
        db.execute(f"DELETE FROM {signed.chain_table}")
    _admit_behind_the_admins_back(signed, mallory)
    daemon = _serving(signed, carol)

    time.sleep(2.0)  # several heartbeats and roster checks
    status = peer_status(mallory, carol, daemon.url)

    assert status == 403
    assert carol.policy().roster_root is None
