"""The signed roster on a real served coordinator: it starts with the first admin's genesis,
grows only by statements its admins signed after the stored head, is served to members and to
a joiner holding an open invite, and, once it exists, is the only way the roster changes."""

import threading
import time
from pathlib import Path
from typing import Any, TypeVar

import httpx
import msgspec
import pytest

from memmesh.coordinator import Coordinator, signed_roster
from memmesh.coordinator import _members as members_table
from memmesh.coordinator.bootstrap import admin_join_code
from memmesh.coordinator.errors import StaleRosterHead
from memmesh.coordinator.invites import new_secret, secret_digest
from memmesh.coordinator.protocol import (
    INVITE_PROOF_CONTEXT,
    ChainRequest,
    ChainResponse,
    ChangesRequest,
    ChangesResponse,
    InviteProof,
    InviteRequest,
    JoinRequest,
    JoinResponse,
    MemberAdd,
    MemberAdmin,
    MemberRevoke,
    PresenceList,
    PublishItem,
    PublishRequest,
    PublishResponse,
    Roster,
    RosterMember,
    StatementsRequest,
    StatementsResponse,
)
from memmesh.net.errors import Refused
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.signing import coordinator_audience
from memmesh.net.wire import encode
from memmesh.registry import Identity
from memmesh.registry import roster_chain as chain
from memmesh.registry.envelopes import seal
from memmesh.registry.errors import RosterChainBroken
from memmesh.registry.roster_chain import RosterState, SignedStatement
from tests._clock import START
from tests._signed import SignedAuth, add_member, caller
from tests.coordinator._served import TOKEN, Served
from tests.coordinator._signed_team import SignedTeam, post, signed_team
from tests.registry._helpers import TEAM, publication

HOUR = 3600.0
T = TypeVar("T")


def _refusal(served: Served, signer: Identity, path: str, body: Any) -> Refused:
    """The coordinator's refusal of ``body`` at ``path``, signed by ``signer``."""
    with served.client(signer) as client, pytest.raises(Refused) as refused:
        client.post(path, body, dict)
    return refused.value


def _raw(served: Served, signer: Identity, path: str, content: bytes) -> httpx.Response:
    """``content`` as it is, posted to ``path`` in a request ``signer`` signs."""
    return httpx.post(
        f"{served.url}{path}",
        content=content,
        headers={"Authorization": f"Bearer {TOKEN}"},
        auth=SignedAuth(signer, coordinator_audience(TEAM)),
        timeout=10,
    )


def _chain_rows(served: Served) -> int:
    with served.coordinator.store.read() as tx:
        (count,) = tx.execute("SELECT count(*) FROM coord_roster_chain").fetchone()
    return int(count)


def _proof(invite_secret: str, holder: Identity) -> InviteProof:
    """What shows that ``holder`` holds the invite of ``invite_secret``."""
    invite = chain.invite_identity(invite_secret)
    message = INVITE_PROOF_CONTEXT + TEAM.encode() + b"\x00" + holder.public_key_text.encode()
    return InviteProof(invite_key=invite.public_key_text, signature=invite.sign(message))


@pytest.fixture
def team(served: Served, data: Path) -> SignedTeam:
    return signed_team(served, data)


def _roster(served: Served) -> Roster:
    return served.coordinator.membership.roster()


def _names(served: Served) -> dict[str, tuple[str, bool, bool]]:
    """Each key id on the coordinator's roster: its name, whether an admin, whether revoked."""
    return {m.key_id: (m.name, m.admin, m.revoked_at is not None) for m in _roster(served).members}


# -- starting it -----------------------------------------------------------------------------


def test_the_first_admin_starts_the_signed_roster_with_the_bootstrap_code(
    served: Served, data: Path
) -> None:
    code = admin_join_code(served.coordinator.membership, data, url=served.url, pin=None,
                           name="ada")  # fmt: skip
    assert code is not None
    ada = served.key("ada")
    genesis = chain.genesis(ada, TEAM, name="ada")

    joined = post(
        served, ada, "/v1/join", JoinRequest(secret=code.secret, genesis=genesis), JoinResponse
    )
    served_chain = post(served, ada, "/v1/roster/chain", ChainRequest(), ChainResponse)
    with served.client(ada) as client:
        listed = client.get("/v1/members", Roster)
        present = client.get("/v1/presence/list", PresenceList).roster

    assert (joined.member.name, joined.member.key, joined.member.admin) == (
        "ada", ada.public_key_text, True,
    )  # fmt: skip
    assert served_chain == ChainResponse(statements=[genesis], head_seq=0)
    assert [(m.name, m.admin) for m in listed.members] == [("ada", True)]
    assert (listed.enforced, listed.head_seq, listed.head_hash) == (True, 0, genesis.hash)
    assert present == listed
    # The code made nobody else an admin, and is not made again.
    assert admin_join_code(served.coordinator.membership, data, url=served.url, pin=None) is None


def test_a_bootstrap_secret_without_its_genesis_is_refused(served: Served, data: Path) -> None:
    code = admin_join_code(served.coordinator.membership, data, url=served.url, pin=None)
    assert code is not None
    ada = served.key("ada")

    refused = _refusal(served, ada, "/v1/join", JoinRequest(secret=code.secret))

    assert (refused.http_status, refused.error_code) == (400, "roster_refused")
    assert "genesis_required" in str(refused)
    assert _roster(served) == Roster(members=[], enforced=False)
    assert admin_join_code(served.coordinator.membership, data, url=served.url, pin=None) == code


def test_a_genesis_for_another_name_or_key_starts_nothing(served: Served, data: Path) -> None:
    code = admin_join_code(served.coordinator.membership, data, url=served.url, pin=None,
                           name="ada")  # fmt: skip
    assert code is not None
    ada, mallory = served.key("ada"), served.key("mallory")

    renamed = _refusal(
        served, ada, "/v1/join",
        JoinRequest(secret=code.secret, genesis=chain.genesis(ada, TEAM, name="boss")),
    )  # fmt: skip
    # Mallory's genesis, sent by ada: the root would not be the joining key.
    foreign = _refusal(
        served, ada, "/v1/join",
        JoinRequest(secret=code.secret, genesis=chain.genesis(mallory, TEAM, name="ada")),
    )  # fmt: skip

    assert (renamed.http_status, renamed.error_code) == (400, "roster_refused")
    assert "name_mismatch" in str(renamed)
    assert (foreign.http_status, foreign.error_code) == (400, "roster_refused")
    assert "not_root" in str(foreign)
    assert _chain_rows(served) == 0
    assert _roster(served).members == []
    # The code is still unused: ada starts the roster with it.
    genesis = chain.genesis(ada, TEAM, name="ada")
    post(served, ada, "/v1/join", JoinRequest(secret=code.secret, genesis=genesis), JoinResponse)
    assert _roster(served).head_seq == 0


def test_an_unsigned_roster_serves_an_empty_chain(served: Served) -> None:
    anyone = served.key("anyone")

    answer = post(served, anyone, "/v1/roster/chain", ChainRequest(), ChainResponse)

    assert answer == ChainResponse(statements=[], head_seq=-1)


def test_statements_for_a_team_without_members_are_refused_as_not_started(served: Served) -> None:
    ada = served.key("ada")
    genesis = chain.genesis(ada, TEAM, name="ada")

    refused = _refusal(
        served, ada, "/v1/roster/statements", StatementsRequest(statements=[genesis])
    )

    assert (refused.http_status, refused.error_code) == (409, "roster_refused")
    assert "not_started" in str(refused)
    assert _chain_rows(served) == 0


# -- admins' changes -------------------------------------------------------------------------


def test_admins_add_promote_rename_and_revoke_by_signed_statements(team: SignedTeam) -> None:
    served, ada = team.served, team.root
    bob = team.member("bob")
    team.post(chain.promote(team.state, ada, key=bob.public_key_text))
    team.post(chain.rename(team.state, bob, key=bob.public_key_text, name="rob"))
    answer = team.post(chain.revoke(team.state, bob, key=ada.public_key_text))

    assert (answer.head_seq, answer.head_hash) == (4, team.statements[-1].hash)
    assert _names(served) == {ada.key_id: ("ada", False, True), bob.key_id: ("rob", True, False)}
    assert post(served, bob, "/v1/roster/chain", ChainRequest(), ChainResponse) == ChainResponse(
        statements=team.statements, head_seq=4
    )
    assert (_roster(served).head_seq, _roster(served).head_hash) == (4, answer.head_hash)
    # The revoked root is refused at once, as any revoked key.
    refused = _refusal(served, ada, "/v1/roster/chain", ChainRequest())
    assert (refused.http_status, refused.error_code) == (403, "revoked")


def test_a_statement_not_signed_by_an_admin_is_refused_and_nothing_is_stored(
    team: SignedTeam,
) -> None:
    served = team.served
    bob = team.member("bob")
    mallory = served.key("mallory")
    before = (_chain_rows(served), _roster(served))
    adding = chain.add(team.state, team.root, key=mallory.public_key_text, name="mal")
    by_member = _resigned(adding, bob)
    by_stranger = _resigned(adding, mallory)

    member_refused = _refusal(
        served, bob, "/v1/roster/statements", StatementsRequest(statements=[by_member])
    )
    stranger_refused = _refusal(
        served, bob, "/v1/roster/statements", StatementsRequest(statements=[by_stranger])
    )

    assert (member_refused.http_status, member_refused.error_code) == (403, "roster_refused")
    assert "not_admin" in str(member_refused)
    assert (stranger_refused.http_status, stranger_refused.error_code) == (403, "roster_refused")
    assert (_chain_rows(served), _roster(served)) == before
    assert mallory.key_id not in _names(served)


def _resigned(signed: SignedStatement, signer: Identity) -> SignedStatement:
    """``signed``'s statement signed by ``signer`` instead (and naming it as its signer)."""
    statement = msgspec.json.decode(signed.body, type=chain.Statement)
    changed = msgspec.structs.replace(statement, signer=signer.public_key_text)
    return chain.sign_statement(changed, signer)


def test_a_statement_off_the_head_or_replayed_is_refused_and_nothing_is_stored(
    team: SignedTeam,
) -> None:
    served, ada = team.served, team.root
    bob = team.member("bob")
    replayed = team.statements[-1]
    # A chain the coordinator never saw: its statement 2 names another statement 1.
    started = chain.verify_chain(team.statements[:1], root_key_id=ada.key_id, team=TEAM)
    elsewhere = chain.extend(
        started, chain.add(started, ada, key=served.key("cy").public_key_text, name="cy")
    )
    bad_prev = chain.add(elsewhere, ada, key=served.key("dee").public_key_text, name="dee")
    good = chain.add(team.state, ada, key=served.key("eve").public_key_text, name="eve")
    after_good = chain.extend(team.state, good)
    # Bob, no admin, signs the statement after it: the pair is refused whole.
    bad_after_good = _resigned(
        chain.add(after_good, ada, key=served.key("fay").public_key_text, name="fay"), bob
    )
    before = (_chain_rows(served), _roster(served))

    stale = _refusal(served, ada, "/v1/roster/statements", StatementsRequest(statements=[replayed]))
    forked = _refusal(
        served, ada, "/v1/roster/statements", StatementsRequest(statements=[bad_prev])
    )
    mixed = _refusal(
        served, ada, "/v1/roster/statements", StatementsRequest(statements=[good, bad_after_good])
    )

    assert (stale.http_status, stale.error_code) == (409, "stale_roster_head")
    assert (forked.http_status, forked.error_code) == (400, "roster_refused")
    assert "prev_mismatch" in str(forked)
    assert (mixed.http_status, mixed.error_code) == (403, "roster_refused")
    assert "statement 3" in str(mixed)
    assert (_chain_rows(served), _roster(served)) == before


def test_two_admins_racing_on_one_head_get_one_acceptance_and_one_stale_head(
    team: SignedTeam,
) -> None:
    served, ada = team.served, team.root
    bob = team.member("bob", admin=True)
    state = team.state
    mine = chain.add(state, ada, key=served.key("cy").public_key_text, name="cy")
    theirs = chain.add(state, bob, key=served.key("dee").public_key_text, name="dee")
    start = threading.Barrier(2)
    outcomes: list[int | str] = []

    def send(signer: Identity, statement: SignedStatement) -> None:
        with served.client(signer) as client:
            start.wait()
            try:
                answer = client.post(
                    "/v1/roster/statements",
                    StatementsRequest(statements=[statement]),
                    StatementsResponse,
                )
                outcomes.append(answer.head_seq)
            except Refused as exc:
                outcomes.append(f"{exc.http_status} {exc.error_code}")

    threads = [
        threading.Thread(target=send, args=(ada, mine)),
        threading.Thread(target=send, args=(bob, theirs)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes, key=str) == [2, "409 stale_roster_head"]
    assert _chain_rows(served) == 3
    assert len([m for m in _roster(served).members if m.name in ("cy", "dee")]) == 1


def test_a_head_another_worker_moved_is_verified_before_it_is_built_on(
    team: SignedTeam, database: str | None
) -> None:
    served, ada = team.served, team.root
    # A second process's coordinator over the same data, as `--workers 2` runs it.
    other = Coordinator(
        served.root / "coordinator", team=TEAM, clock=served.clock, database=database
    )
    try:
        with other.store.read() as tx:
            assert other.membership.signed.state(tx) is not None  # its head is kept now
        bob = team.member("bob")  # through the served process
        cy = served.key("cy")
        following = chain.add(team.state, ada, key=cy.public_key_text, name="cy")
        answer = other.membership.signed.statements(
            caller(ada), StatementsRequest(statements=[following])
        )
        stale = chain.add(
            chain.verify_chain(team.statements, root_key_id=ada.key_id, team=TEAM), ada,
            key=served.key("dee").public_key_text, name="dee",
        )  # fmt: skip
        with pytest.raises(StaleRosterHead) as refused:
            other.membership.signed.statements(caller(ada), StatementsRequest(statements=[stale]))
    finally:
        other.close()
    team.statements.append(following)

    assert answer.head_seq == 2
    assert (refused.value.head_seq, refused.value.sent_seq) == (2, 2)
    assert _names(served)[bob.key_id] == ("bob", False, False)
    assert _names(served)[cy.key_id] == ("cy", False, False)
    assert post(served, ada, "/v1/roster/chain", ChainRequest(), ChainResponse).statements == (
        team.statements
    )


def test_a_join_is_not_accepted_as_an_admins_change(team: SignedTeam) -> None:
    served, ada = team.served, team.root
    invited, secret = chain.invite(team.state, ada, name="cy", expires_at=time.time() + HOUR)
    team.post(invited)
    cy = served.key("cy")
    joining = chain.join(team.state, cy, invite_secret=secret, name="cy")

    refused = _refusal(
        served, ada, "/v1/roster/statements", StatementsRequest(statements=[joining])
    )

    assert (refused.http_status, refused.error_code) == (400, "roster_refused")
    assert "join_elsewhere" in str(refused)
    assert cy.key_id not in _names(served)


# -- invites and joins -----------------------------------------------------------------------


def test_an_invitee_reads_the_chain_with_its_invite_and_joins_by_a_statement(
    team: SignedTeam,
) -> None:
    served, ada = team.served, team.root
    invited, secret = chain.invite(
        team.state, ada, name="cy", admin=True, expires_at=time.time() + HOUR
    )
    team.post(invited)
    cy = served.key("cy")

    read = post(served, cy, "/v1/roster/chain", ChainRequest(invite=_proof(secret, cy)),
                 ChainResponse)  # fmt: skip
    state = chain.verify_chain(read.statements, root_key_id=ada.key_id, team=TEAM)
    joining = chain.join(state, cy, invite_secret=secret, name="cy")
    joined = post(served, cy, "/v1/join", JoinRequest(statement=joining), JoinResponse)
    team.statements.append(joining)

    assert read == ChainResponse(statements=team.statements[:-1], head_seq=1)
    assert (joined.member.name, joined.member.key, joined.member.admin) == (
        "cy", cy.public_key_text, True,
    )  # fmt: skip
    assert (joined.team, joined.coordinator_key) == (
        TEAM,
        served.coordinator.identity.public_key_text,
    )
    assert _roster(served).head_seq == 2
    # Now a member, cy reads the chain as one (no invite), and changes it as an admin.
    assert post(served, cy, "/v1/roster/chain", ChainRequest(), ChainResponse).head_seq == 2
    team.post(chain.rename(team.state, cy, key=ada.public_key_text, name="ada2"), by=cy)
    assert _names(served)[ada.key_id] == ("ada2", True, False)


def test_the_chain_is_refused_to_a_stranger_and_to_a_wrong_invite_proof(
    team: SignedTeam,
) -> None:
    served, ada = team.served, team.root
    invited, secret = chain.invite(team.state, ada, name="cy", expires_at=time.time() + HOUR)
    team.post(invited)
    cy, mallory = served.key("cy"), served.key("mallory")
    # An invite ada signed but never posted: it is not on the chain.
    _, unposted = chain.invite(team.state, ada, name="zed", expires_at=time.time() + HOUR)
    not_an_invite = chain.invite_identity(unposted)
    message = INVITE_PROOF_CONTEXT + TEAM.encode() + b"\x00" + mallory.public_key_text.encode()
    proofs = {
        "none": None,
        # cy's proof, replayed by mallory: it names cy's key.
        "another caller's": _proof(secret, cy),
        # The invite's key, signed by a key that is not the invite's.
        "forged": InviteProof(
            invite_key=chain.invite_identity(secret).public_key_text,
            signature=mallory.sign(message),
        ),
        "not on the chain": InviteProof(
            invite_key=not_an_invite.public_key_text, signature=not_an_invite.sign(message)
        ),
    }

    refusals = {
        label: _refusal(served, mallory, "/v1/roster/chain", ChainRequest(invite=proof))
        for label, proof in proofs.items()
    }

    assert {label: (r.http_status, r.error_code) for label, r in refusals.items()} == dict.fromkeys(
        proofs, (403, "forbidden")
    )
    assert str(refusals["forged"]) == f"this key is not a member of team {TEAM!r} (HTTP 403)"


def test_a_used_or_expired_invite_joins_nobody(team: SignedTeam) -> None:
    served, ada = team.served, team.root
    expires = time.time() + HOUR
    used, used_secret = chain.invite(team.state, ada, name="cy", expires_at=expires)
    team.post(used)
    late, late_secret = chain.invite(team.state, ada, name="dee", expires_at=expires)
    team.post(late)
    cy, eve, dee = served.key("cy"), served.key("eve"), served.key("dee")
    joining = chain.join(team.state, cy, invite_secret=used_secret, name="cy")
    post(served, cy, "/v1/join", JoinRequest(statement=joining), JoinResponse)
    team.statements.append(joining)

    with pytest.raises(RosterChainBroken) as local:
        chain.join(team.state, eve, invite_secret=used_secret, name="cy")
    # Eve's join by the used invite, signed as the chain's helper would if it did not check.
    reused = _resigned_join(team.state, eve, used_secret, "cy")
    reused_read = _refusal(served, eve, "/v1/roster/chain",
                           ChainRequest(invite=_proof(used_secret, eve)))  # fmt: skip
    reused_join = _refusal(served, eve, "/v1/join", JoinRequest(statement=reused))
    # Dee signs a join dated while the invite was open, but sends it after it expired.
    dated = chain.join(team.state, dee, invite_secret=late_secret, name="dee")
    served.clock.now = expires + 1
    expired_read = _refusal(served, dee, "/v1/roster/chain",
                            ChainRequest(invite=_proof(late_secret, dee)))  # fmt: skip
    expired_join = _refusal(served, dee, "/v1/join", JoinRequest(statement=dated))

    assert local.value.reason == "invite_used"
    assert (reused_read.http_status, reused_read.error_code) == (403, "forbidden")
    assert (reused_join.http_status, reused_join.error_code) == (400, "roster_refused")
    assert "invite_used" in str(reused_join)
    assert (expired_read.http_status, expired_read.error_code) == (403, "forbidden")
    assert (expired_join.http_status, expired_join.error_code) == (400, "roster_refused")
    assert "invite_expired" in str(expired_join)
    assert eve.key_id not in _names(served)
    assert dee.key_id not in _names(served)
    assert _roster(served).head_seq == 3


def _resigned_join(state: RosterState, member: Identity, secret: str, name: str) -> SignedStatement:
    """``member``'s join by the invite of ``secret`` after ``state``, signed without a check."""
    invite = chain.invite_identity(secret)
    body = {
        "op": "join", "format": chain.ROSTER_FORMAT, "team": state.team,
        "seq": state.head.seq + 1, "prev": state.head.hash, "at": max(time.time(), state.head.at),
        "signer": member.public_key_text, "key": member.public_key_text, "name": name,
        "invite_key": invite.public_key_text,
    }  # fmt: skip
    statement = msgspec.json.decode(msgspec.json.encode(body), type=chain.Statement)
    encoded = msgspec.json.encode(statement)
    return SignedStatement(body=encoded, signatures=(member.sign(encoded), invite.sign(encoded)))


def test_a_join_for_another_key_or_of_a_member_is_refused(team: SignedTeam) -> None:
    served, ada = team.served, team.root
    invited, secret = chain.invite(team.state, ada, name="cy", expires_at=time.time() + HOUR)
    team.post(invited)
    cy, mallory = served.key("cy"), served.key("mallory")
    cys = chain.join(team.state, cy, invite_secret=secret, name="cy")

    relayed = _refusal(served, mallory, "/v1/join", JoinRequest(statement=cys))
    by_a_member = _refusal(served, ada, "/v1/join", JoinRequest(statement=cys))
    an_add = _refusal(
        served, mallory, "/v1/join",
        JoinRequest(statement=chain.add(team.state, ada, key=mallory.public_key_text, name="m")),
    )  # fmt: skip

    assert (relayed.http_status, relayed.error_code) == (400, "roster_refused")
    assert "not_joiner" in str(relayed)
    assert (by_a_member.http_status, by_a_member.error_code) == (409, "conflict")
    assert (an_add.http_status, an_add.error_code) == (400, "roster_refused")
    assert "not_a_join" in str(an_add)
    assert _roster(served).head_seq == 1


# -- revocation ------------------------------------------------------------------------------


def test_revoking_with_purge_erases_the_members_items(team: SignedTeam) -> None:
    served, ada = team.served, team.root
    bob = team.member("bob")
    fingerprint = served.coordinator.store.embedder.fingerprint
    body = publication(bob, text="The quokka ledger rotates keys on Tuesdays", embedder=fingerprint)
    published = post(
        served, bob, "/v1/publish",
        PublishRequest(items=[PublishItem(envelope=seal(body, bob))]), PublishResponse,
    )  # fmt: skip
    assert [r.status for r in published.results] == ["accepted"]

    answer = team.post(chain.revoke(team.state, ada, key=bob.public_key_text), purge=True)

    assert answer.purged == 1
    found = post(served, ada, "/v1/search", SearchRequest(query="quokka ledger"), SearchResponse)
    assert found.hits == []
    assert served.coordinator.info().published == 0
    refused = _refusal(served, bob, "/v1/roster/chain", ChainRequest())
    assert (refused.http_status, refused.error_code) == (403, "revoked")


def test_a_purge_asked_by_a_member_who_is_no_admin_stores_nothing(team: SignedTeam) -> None:
    served, ada = team.served, team.root
    bob, cy = team.member("bob"), team.member("cy")
    revoking = chain.revoke(team.state, ada, key=cy.public_key_text)

    refused = _refusal(
        served, bob, "/v1/roster/statements", StatementsRequest(statements=[revoking], purge=True)
    )

    assert (refused.http_status, refused.error_code) == (403, "not_an_admin")
    assert _names(served)[cy.key_id] == ("cy", False, False)
    assert _roster(served).head_seq == 2


# -- a team whose roster was the coordinator's table -----------------------------------------


def _legacy_team(served: Served) -> tuple[Identity, Identity, Identity]:
    """An unsigned team as a coordinator before signing kept it: ada (admin), bob, and carl
    (revoked)."""
    ada, bob, carl = served.key("ada"), served.key("bob"), served.key("carl")
    first = RosterMember(
        name="ada", key=ada.public_key_text, key_id=ada.key_id, admin=True, added_at=START
    )
    with served.coordinator.store.transaction() as tx:
        members_table.add_member(tx, first)
    add_member(served.coordinator, ada, bob, "bob")
    add_member(served.coordinator, ada, carl, "carl")
    served.coordinator.membership.revoke(caller(ada), MemberRevoke(member="carl"))
    return ada, bob, carl


def _signing(
    ada: Identity, members: list[tuple[Identity, str, bool]], revoked: list[tuple[Identity, str]]
) -> list[SignedStatement]:
    """ada's signing of a roster: genesis, add and revoke each of ``revoked``, add ``members``."""
    statements = [chain.genesis(ada, TEAM, name="ada")]

    def state() -> RosterState:
        return chain.verify_chain(statements, root_key_id=ada.key_id, team=TEAM)

    for gone, name in revoked:
        statements.append(chain.add(state(), ada, key=gone.public_key_text, name=name))
        statements.append(chain.revoke(state(), ada, key=gone.public_key_text))
    for identity, name, admin in members:
        statements.append(
            chain.add(state(), ada, key=identity.public_key_text, name=name, admin=admin)
        )
    return statements


def test_an_unsigned_roster_is_signed_as_it_stands(served: Served) -> None:
    ada, bob, carl = _legacy_team(served)
    table = _names(served)
    statements = _signing(ada, [(bob, "bob", False)], [(carl, "carl")])

    answer = post(served, ada, "/v1/roster/statements", StatementsRequest(statements=statements),
                   StatementsResponse)  # fmt: skip

    assert (answer.head_seq, answer.head_hash) == (3, statements[-1].hash)
    assert _names(served) == table
    served_chain = post(served, bob, "/v1/roster/chain", ChainRequest(), ChainResponse)
    assert served_chain == ChainResponse(statements=statements, head_seq=3)
    refused = _refusal(
        served, ada, "/v1/members/add", MemberAdd(name="dee", key=served.key("dee").public_key_text)
    )
    assert (refused.http_status, refused.error_code) == (409, "roster_signed")


def test_a_key_revoked_before_signing_and_left_off_the_chain_is_never_added(
    served: Served,
) -> None:
    ada, bob, carl = _legacy_team(served)
    signing = _signing(ada, [(bob, "bob", False)], [])  # carl, revoked, is left off
    post(served, ada, "/v1/roster/statements", StatementsRequest(statements=signing),
          StatementsResponse)  # fmt: skip
    state = chain.verify_chain(signing, root_key_id=ada.key_id, team=TEAM)
    adding = chain.add(state, ada, key=carl.public_key_text, name="carl")

    refused = _refusal(served, ada, "/v1/roster/statements", StatementsRequest(statements=[adding]))

    assert (refused.http_status, refused.error_code) == (400, "roster_refused")
    assert "(key_known)" in str(refused)
    assert _names(served)[carl.key_id] == ("carl", False, True)
    assert _roster(served).head_seq == 1


@pytest.mark.parametrize(
    "change", ["an extra key", "a new name", "another role", "a revoked key back", "by a member"]
)
def test_a_signing_that_is_not_the_roster_as_it_stands_is_refused(
    served: Served, change: str
) -> None:
    ada, bob, carl = _legacy_team(served)
    before = _roster(served)
    signer, members, revoked = ada, [(bob, "bob", False)], [(carl, "carl")]
    if change == "an extra key":
        members.append((served.key("mallory"), "mallory", True))
    elif change == "a new name":
        members = [(bob, "rob", False)]
    elif change == "another role":
        members = [(bob, "bob", True)]
    elif change == "a revoked key back":
        members.append((carl, "carl", False))
        revoked = []
    else:
        signer = bob
    statements = _signing(ada, members, revoked)

    refused = _refusal(
        served, signer, "/v1/roster/statements", StatementsRequest(statements=statements)
    )

    reason = "not_admin" if change == "by a member" else "migration_mismatch"
    assert (refused.http_status, refused.error_code) == (
        403 if reason == "not_admin" else 400, "roster_refused",
    )  # fmt: skip
    assert f"({reason})" in str(refused)
    assert _roster(served) == before
    assert _chain_rows(served) == 0


def test_the_legacy_changes_answer_roster_signed_once_the_roster_is_signed(
    team: SignedTeam,
) -> None:
    served, ada = team.served, team.root
    team.member("bob")
    dee = served.key("dee")
    digest = secret_digest(new_secret())
    changes: list[tuple[str, Any]] = [
        ("/v1/members/add", MemberAdd(name="dee", key=dee.public_key_text)),
        ("/v1/members/revoke", MemberRevoke(member="bob")),
        ("/v1/members/promote", MemberAdmin(member="bob")),
        ("/v1/members/demote", MemberAdmin(member="ada")),
        ("/v1/invites", InviteRequest(name="dee", digest=digest, expires_at=START + HOUR)),
    ]
    before = _roster(served)

    refusals = {path: _refusal(served, ada, path, body) for path, body in changes}

    assert {p: (r.http_status, r.error_code) for p, r in refusals.items()} == dict.fromkeys(
        [path for path, _ in changes], (409, "roster_signed")
    )
    assert str(refusals["/v1/invites"]) == (
        f"team {TEAM!r}'s roster is signed: an admin's memmesh signs each change; update "
        "memmesh (HTTP 409)"
    )
    assert _roster(served) == before


def test_an_invite_made_before_signing_joins_nobody_after_it(served: Served) -> None:
    ada, bob, carl = _legacy_team(served)
    secret = new_secret()
    served.coordinator.membership.invite(
        caller(ada),
        InviteRequest(name="dee", digest=secret_digest(secret), expires_at=START + HOUR),
    )
    signing = _signing(ada, [(bob, "bob", False)], [(carl, "carl")])
    post(served, ada, "/v1/roster/statements", StatementsRequest(statements=signing),
          StatementsResponse)  # fmt: skip
    dee = served.key("dee")

    refused = _refusal(served, dee, "/v1/join", JoinRequest(secret=secret))

    assert (refused.http_status, refused.error_code) == (409, "roster_signed")
    assert dee.key_id not in _names(served)


# -- what members follow ---------------------------------------------------------------------


def test_the_feed_s_roster_mark_moves_with_the_head_even_when_no_member_changes(
    team: SignedTeam,
) -> None:
    served, ada = team.served, team.root

    def mark() -> str:
        return post(served, ada, "/v1/changes", ChangesRequest(), ChangesResponse).roster

    before, members = mark(), _roster(served).members
    invited, _ = chain.invite(team.state, ada, name="cy", expires_at=time.time() + HOUR)
    team.post(invited)

    assert _roster(served).members == members
    assert mark() != before
    assert _roster(served).head_hash == invited.hash


def test_the_chain_is_served_in_pages(team: SignedTeam, monkeypatch: pytest.MonkeyPatch) -> None:
    served, ada = team.served, team.root
    for name in ("bob", "cy", "dee"):
        team.member(name)
    monkeypatch.setattr(signed_roster, "MAX_CHAIN_PAGE", 3)

    first = post(served, ada, "/v1/roster/chain", ChainRequest(), ChainResponse)
    rest = post(served, ada, "/v1/roster/chain", ChainRequest(start=3), ChainResponse)

    assert first == ChainResponse(statements=team.statements[:3], head_seq=3, more=True)
    assert rest == ChainResponse(statements=team.statements[3:], head_seq=3)


def test_a_chain_changed_behind_the_coordinator_is_served_as_stored_but_never_built_on(
    team: SignedTeam,
) -> None:
    served, ada = team.served, team.root
    bob = team.member("bob")
    # The operator renames bob in the stored statement (and its hash), without ada's key.
    statement = msgspec.json.decode(team.statements[-1].body, type=chain.Statement)
    forged = msgspec.json.encode(msgspec.structs.replace(statement, name="eve"))
    with served.coordinator.store.transaction() as tx:
        tx.execute(
            "UPDATE coord_roster_chain SET body = ?, hash = ? WHERE seq = 1",
            (forged, SignedStatement(body=forged, signatures=(bytes(64),)).hash),
        )
    cy = served.key("cy")

    read = post(served, bob, "/v1/roster/chain", ChainRequest(), ChainResponse)
    building = _raw(served, ada, "/v1/roster/statements", encode(StatementsRequest(
        statements=[chain.add(team.state, ada, key=cy.public_key_text, name="cy")]
    )))  # fmt: skip

    assert read.statements[1].body == forged  # a member's verification refuses it
    with pytest.raises(RosterChainBroken):
        chain.verify_chain(read.statements, root_key_id=ada.key_id, team=TEAM)
    assert (building.status_code, building.json()["error"]["code"]) == (500, "corrupt_database")
    assert cy.key_id not in _names(served)
    assert _chain_rows(served) == 2


# -- bodies that are no statements -----------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "content"),
    [
        ("/v1/roster/statements", b"{not json"),
        ("/v1/roster/statements", b'{"statements": []}'),
        ("/v1/roster/statements", b'{"statements": [{"body": "eHg=", "signatures": ["AAAA"]}]}'),
        ("/v1/roster/chain", b'{"start": -1}'),
        ("/v1/roster/chain", b'{"invite": {"invite_key": "x", "signature": "AAAA"}}'),
        ("/v1/join", b'{"statement": {"body": "eHg=", "signatures": []}}'),
    ],
)
def test_a_malformed_request_is_refused_with_400(
    team: SignedTeam, path: str, content: bytes
) -> None:
    answer = _raw(team.served, team.root, path, content)

    assert answer.status_code == 400
    assert _roster(team.served).head_seq == 0


@pytest.mark.parametrize("path", ["/v1/roster/statements", "/v1/join"])
@pytest.mark.parametrize(
    "body", [b"[1, 2]", b'{"op": "nonsense"}', b"\xff\xfe", b'{"op": "add", "seq": "x"}']
)
def test_a_statement_whose_body_is_garbage_is_refused_with_400(
    team: SignedTeam, path: str, body: bytes
) -> None:
    # The root sends it to change the roster; a stranger, to join by it.
    sender = team.root if path == "/v1/roster/statements" else team.served.key("stranger")
    garbage = SignedStatement(body=body, signatures=(sender.sign(body),))
    request: Any = (
        StatementsRequest(statements=[garbage])
        if path == "/v1/roster/statements"
        else JoinRequest(statement=garbage)
    )

    answer = _raw(team.served, sender, path, encode(request))

    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "roster_refused"
    assert "(malformed)" in answer.json()["error"]["message"]
    assert _roster(team.served).head_seq == 0
