"""The signed roster: a chain of admin-signed statements that whoever serves it (the
coordinator) can withhold but not forge, alter, reorder or fork, checked here as an attacker
would try each, and the honest flows it must carry."""

from collections.abc import Callable

import msgspec
import pytest

from memmesh.registry import Identity, RosterChainBroken
from memmesh.registry._roster_wire import Add as _Add
from memmesh.registry._roster_wire import Genesis, Join
from memmesh.registry._roster_wire import Rename as _Rename
from memmesh.registry._roster_wire import Revoke as _Revoke
from memmesh.registry.roster_chain import (
    ChainHead,
    ChainMember,
    SignedStatement,
    add,
    demote,
    display_names,
    extend,
    extends,
    genesis,
    invite,
    join,
    promote,
    rename,
    revoke,
)
from tests.registry._chain import DAY, T0, Chain, assert_broken, forge, invite_identity
from tests.registry._helpers import TEAM, flip_bit


def test_invite_join_promote_then_the_second_admin_revokes_the_first_and_adds_a_third(
    with_bob: Chain, ada: Identity, bob: Identity, cy: Identity
) -> None:
    chain = with_bob
    chain.append(promote(chain.state, ada, key=bob.public_key_text, at=chain.at()))
    chain.append(revoke(chain.state, bob, key=ada.public_key_text, at=chain.at()))
    chain.append(add(chain.state, bob, key=cy.public_key_text, name="cy", at=chain.at()))

    state = chain.verify()  # from nothing but the statements and the pinned root
    assert state == chain.state
    assert state.head == ChainHead(seq=5, hash=chain.statements[-1].hash, at=T0 + 300)
    members = state.members
    assert (members[ada.key_id].active, members[ada.key_id].admin) == (False, False)
    assert members[ada.key_id].revoked_at == T0 + 240
    assert (members[bob.key_id].active, members[bob.key_id].admin) == (True, True)
    assert (members[cy.key_id].name, members[cy.key_id].admin) == ("cy", False)
    assert [m.key_id for m in state.active_admins()] == [bob.key_id]
    [used] = state.invites.values()
    assert (used.name, used.used_by, used.invited_by) == ("bob", bob.key_id, ada.key_id)


def test_an_admin_invite_makes_the_joiner_an_admin(
    chain: Chain, ada: Identity, bob: Identity
) -> None:
    secret = chain.invited(ada, "bob", admin=True)
    chain.append(join(chain.state, bob, invite_secret=secret, name="bob", at=chain.at()))
    assert chain.verify().members[bob.key_id].admin


def test_a_chain_sent_as_json_verifies_the_same(with_bob: Chain) -> None:
    sent = msgspec.json.encode(with_bob.statements)
    received = msgspec.json.decode(sent, type=list[SignedStatement], strict=True)
    assert with_bob.verify(received) == with_bob.state


def test_a_longer_chain_extends_the_head_a_member_saw(
    with_bob: Chain, ada: Identity, cy: Identity
) -> None:
    seen = with_bob.state.head
    with_bob.append(add(with_bob.state, ada, key=cy.public_key_text, name="cy", at=with_bob.at()))
    assert extends(seen, with_bob.statements)
    assert with_bob.verify(cached=seen).head.seq == seen.seq + 1


# -- what the operator can try ---------------------------------------------------------------


def test_a_reordered_chain_is_refused(with_bob: Chain) -> None:
    genesis_, invite_, join_ = with_bob.statements
    assert_broken(lambda: with_bob.verify([genesis_, join_, invite_]), 1, "out_of_order")


def test_a_chain_that_skips_a_statement_is_refused(with_bob: Chain) -> None:
    genesis_, _, join_ = with_bob.statements
    assert_broken(lambda: with_bob.verify([genesis_, join_]), 1, "out_of_order")


def test_dropping_the_newest_statement_is_a_rollback_the_cached_head_catches(
    with_bob: Chain,
) -> None:
    seen = with_bob.state.head
    rolled_back = with_bob.statements[:-1]
    with_bob.verify(rolled_back)  # on its own, a shorter chain is a valid older roster
    assert not extends(seen, rolled_back)
    assert_broken(lambda: with_bob.verify(rolled_back, cached=seen), None, "rollback")


def test_a_fork_is_refused_by_a_member_that_saw_the_other_branch(
    chain: Chain, ada: Identity, bob: Identity, cy: Identity
) -> None:
    base = chain.state
    to_bob = add(base, ada, key=bob.public_key_text, name="bob", at=chain.at())
    to_cy = add(base, ada, key=cy.public_key_text, name="cy", at=chain.at())
    seen = extend(base, to_bob).head
    other_branch = [*chain.statements, to_cy]
    chain.verify(other_branch)  # each branch verifies alone: the cached head decides
    assert not extends(seen, other_branch)
    assert_broken(lambda: chain.verify(other_branch, cached=seen), 1, "fork")


def test_the_operator_cannot_add_its_own_key(
    chain: Chain, ada: Identity, operator: Identity
) -> None:
    own = forge(chain.state, _Add, operator, key=operator.public_key_text, name="ops", admin=True)
    assert_broken(lambda: chain.verify([*chain.statements, own]), 1, "not_admin")
    as_ada = SignedStatement(
        body=forge(
            chain.state, _Add, ada, key=operator.public_key_text, name="ops", admin=True
        ).body,
        signatures=(operator.sign(own.body),),
    )
    assert_broken(lambda: chain.verify([*chain.statements, as_ada]), 1, "bad_signature")


def test_the_operator_cannot_start_a_chain_of_its_own(chain: Chain, operator: Identity) -> None:
    own = genesis(operator, TEAM, name="ada", at=T0)
    assert_broken(lambda: chain.verify([own]), 0, "not_root")


def test_a_join_with_an_invite_key_not_on_the_chain_is_refused(
    chain: Chain, ada: Identity, operator: Identity, member: Callable[[str], Identity]
) -> None:
    chain.invited(ada, "bob")
    made_up = member("made-up-invite")
    forged = forge(
        chain.state, Join, operator, made_up, key=operator.public_key_text, name="bob",
        invite_key=made_up.public_key_text,
    )  # fmt: skip
    assert_broken(lambda: chain.verify([*chain.statements, forged]), 2, "unknown_invite")


def test_tampered_bytes_are_refused(with_bob: Chain, operator: Identity) -> None:
    genesis_, invite_, join_ = with_bob.statements
    # The operator puts its own key where bob's was: the body no longer matches its signatures.
    swapped = join_.body.replace(
        msgspec.json.decode(join_.body, type=Join).key.encode(), operator.public_key_text.encode()
    )
    relabelled = SignedStatement(body=swapped, signatures=join_.signatures)
    assert_broken(lambda: with_bob.verify([genesis_, invite_, relabelled]), 2, "bad_signature")
    flipped = SignedStatement(body=invite_.body, signatures=(flip_bit(invite_.signatures[0], 5),))
    assert_broken(lambda: with_bob.verify([genesis_, flipped, join_]), 1, "bad_signature")


def test_a_renamed_body_in_the_chain_breaks_the_next_link(
    chain: Chain, ada: Identity, bob: Identity
) -> None:
    chain.append(add(chain.state, ada, key=bob.public_key_text, name="bob", at=chain.at()))
    chain.append(promote(chain.state, ada, key=bob.public_key_text, at=chain.at()))
    # Even ada re-signing statement 1 with another name cannot keep statement 2's link.
    genesis_, _, promote_ = chain.statements
    resigned = forge(chain.verify([genesis_]), _Add, ada, key=bob.public_key_text, name="ada2",
                     admin=False, at=T0 + 60)  # fmt: skip
    assert_broken(lambda: chain.verify([genesis_, resigned, promote_]), 2, "prev_mismatch")


def test_bytes_that_are_not_the_canonical_encoding_are_refused(chain: Chain, ada: Identity) -> None:
    good = forge(chain.state, _Rename, ada, key=ada.public_key_text, name="ada.l")
    spaced = good.body.replace(b'"op":', b'"op": ')
    resigned = SignedStatement(body=spaced, signatures=(ada.sign(spaced),))
    assert_broken(lambda: chain.verify([*chain.statements, resigned]), 1, "malformed")


def test_a_statement_for_another_team_is_refused(
    chain: Chain, ada: Identity, bob: Identity
) -> None:
    other = forge(chain.state, _Add, ada, key=bob.public_key_text, name="bob", admin=False,
                  team="elsewhere")  # fmt: skip
    assert_broken(lambda: chain.verify([*chain.statements, other]), 1, "other_team")
    their_genesis = genesis(ada, "elsewhere", name="ada", at=T0)
    assert_broken(lambda: chain.verify([their_genesis]), 0, "other_team")


# -- invites and joins -----------------------------------------------------------------------


def test_an_invite_joins_one_key_only(
    chain: Chain, ada: Identity, bob: Identity, cy: Identity
) -> None:
    secret = chain.invited(ada, "bob")
    chain.append(join(chain.state, bob, invite_secret=secret, name="bob", at=chain.at()))
    # Whoever else holds the code signs a join of its own with the same invite key.
    code = invite_identity(secret)
    second = forge(chain.state, Join, cy, code, key=cy.public_key_text, name="bob",
                   invite_key=code.public_key_text)  # fmt: skip
    assert_broken(lambda: chain.verify([*chain.statements, second]), 3, "invite_used")
    assert_broken(
        lambda: join(chain.state, cy, invite_secret=secret, name="bob", at=chain.at()),
        3,
        "invite_used",
    )


def test_a_join_must_be_signed_by_the_key_it_adds(
    chain: Chain, ada: Identity, bob: Identity, cy: Identity
) -> None:
    code = invite_identity(chain.invited(ada, "bob"))
    # cy holds the code, and names bob's public key without bob's signature.
    for_bob = forge(chain.state, Join, cy, code, key=bob.public_key_text, name="bob",
                    invite_key=code.public_key_text)  # fmt: skip
    assert_broken(lambda: chain.verify([*chain.statements, for_bob]), 2, "not_joiner")


def test_a_chain_starts_with_its_genesis_and_has_one(
    chain: Chain, ada: Identity, bob: Identity
) -> None:
    headless = forge(chain.state, _Add, ada, key=bob.public_key_text, name="bob", admin=False)
    assert_broken(lambda: chain.verify([headless]), 0, "out_of_order")
    at_zero = SignedStatement(
        body=headless.body.replace(b'"seq":1,"prev":"' + chain.state.head.hash.encode(),
                                   b'"seq":0,"prev":"'),
        signatures=headless.signatures,
    )  # fmt: skip
    resigned = SignedStatement(body=at_zero.body, signatures=(ada.sign(at_zero.body),))
    assert_broken(lambda: chain.verify([resigned]), 0, "no_genesis")
    again = forge(chain.state, Genesis, ada, key=ada.public_key_text, name="ada")
    assert_broken(lambda: chain.verify([*chain.statements, again]), 1, "genesis_again")


def test_a_join_replayed_later_in_the_chain_is_refused(with_bob: Chain) -> None:
    replayed = with_bob.statements[-1]
    assert_broken(lambda: with_bob.verify([*with_bob.statements, replayed]), 3, "out_of_order")


def test_an_expired_invite_joins_nobody(chain: Chain, ada: Identity, bob: Identity) -> None:
    secret = chain.invited(ada, "bob", expires_at=chain.at() + DAY)
    late = chain.state.head.at + 2 * DAY
    assert_broken(
        lambda: join(chain.state, bob, invite_secret=secret, name="bob", at=late),
        2,
        "invite_expired",
    )


def test_a_join_dated_before_the_chain_head_is_refused(
    chain: Chain, ada: Identity, bob: Identity
) -> None:
    secret = chain.invited(ada, "bob")
    backdated = chain.state.head.at - 1
    assert_broken(
        lambda: join(chain.state, bob, invite_secret=secret, name="bob", at=backdated),
        2,
        "time_went_back",
    )


def test_a_join_needs_the_invite_keys_signature(chain: Chain, ada: Identity, bob: Identity) -> None:
    secret = chain.invited(ada, "bob")
    signed = join(chain.state, bob, invite_secret=secret, name="bob", at=chain.at())
    alone = SignedStatement(body=signed.body, signatures=signed.signatures[:1])
    assert_broken(lambda: chain.verify([*chain.statements, alone]), 2, "bad_signature")


def test_a_join_takes_the_invites_name(chain: Chain, ada: Identity, bob: Identity) -> None:
    secret = chain.invited(ada, "bob")
    assert_broken(
        lambda: join(chain.state, bob, invite_secret=secret, name="ada2", at=chain.at()),
        2,
        "name_mismatch",
    )


def test_a_cancelled_invite_joins_nobody(chain: Chain, ada: Identity, bob: Identity) -> None:
    secret = chain.invited(ada, "bob")
    invite_key = next(iter(chain.state.invites.values())).invite_key
    chain.append(revoke(chain.state, ada, key=invite_key, at=chain.at()))
    assert_broken(
        lambda: join(chain.state, bob, invite_secret=secret, name="bob", at=chain.at()),
        3,
        "invite_cancelled",
    )


def test_an_invite_dies_with_its_admins_standing(
    with_bob: Chain, ada: Identity, bob: Identity, cy: Identity
) -> None:
    chain = with_bob
    chain.append(promote(chain.state, ada, key=bob.public_key_text, at=chain.at()))
    secret = chain.invited(bob, "cy")
    chain.append(demote(chain.state, ada, key=bob.public_key_text, at=chain.at()))
    assert_broken(
        lambda: join(chain.state, cy, invite_secret=secret, name="cy", at=chain.at()),
        6,
        "inviter_gone",
    )


def test_an_invite_secret_that_is_no_key_is_refused(chain: Chain, bob: Identity) -> None:
    assert_broken(
        lambda: join(chain.state, bob, invite_secret="not-a-key", name="bob"),
        None,
        "bad_invite_secret",
    )


def test_an_invite_lasts_at_most_thirty_days(chain: Chain, ada: Identity) -> None:
    assert_broken(
        lambda: invite(
            chain.state, ada, name="bob", expires_at=chain.at() + 31 * DAY, at=chain.at()
        ),
        1,
        "bad_expiry",
    )


# -- admins, revocation and names -------------------------------------------------------------


def test_a_revoked_admin_can_sign_nothing(
    with_bob: Chain, ada: Identity, bob: Identity, cy: Identity
) -> None:
    chain = with_bob
    chain.append(promote(chain.state, ada, key=bob.public_key_text, at=chain.at()))
    chain.append(revoke(chain.state, ada, key=bob.public_key_text, at=chain.at()))
    late = forge(chain.state, _Add, bob, key=cy.public_key_text, name="cy", admin=True)
    assert_broken(lambda: chain.verify([*chain.statements, late]), 5, "signer_revoked")


def test_a_demoted_admin_can_sign_nothing(
    with_bob: Chain, ada: Identity, bob: Identity, cy: Identity
) -> None:
    chain = with_bob
    chain.append(promote(chain.state, ada, key=bob.public_key_text, at=chain.at()))
    chain.append(demote(chain.state, ada, key=bob.public_key_text, at=chain.at()))
    assert_broken(
        lambda: add(chain.state, bob, key=cy.public_key_text, name="cy", at=chain.at()),
        5,
        "not_admin",
    )


def test_the_last_admin_cannot_be_revoked_or_demoted(with_bob: Chain, ada: Identity) -> None:
    state, key = with_bob.state, ada.public_key_text
    assert_broken(lambda: revoke(state, ada, key=key, at=with_bob.at()), 3, "last_admin")
    assert_broken(lambda: demote(state, ada, key=key, at=with_bob.at()), 3, "last_admin")
    forged = forge(state, _Revoke, ada, key=key)
    assert_broken(lambda: with_bob.verify([*with_bob.statements, forged]), 3, "last_admin")


def test_a_revoked_key_never_comes_back(with_bob: Chain, ada: Identity, bob: Identity) -> None:
    with_bob.append(revoke(with_bob.state, ada, key=bob.public_key_text, at=with_bob.at()))
    assert_broken(
        lambda: add(with_bob.state, ada, key=bob.public_key_text, name="bob", at=with_bob.at()),
        4,
        "key_known",
    )


@pytest.mark.parametrize(
    ("name", "reason"), [("ada", "name_taken"), ("ADA", "name_taken"), ("-bob", "bad_name")]
)
def test_a_rename_to_a_taken_or_invalid_name_is_refused(
    with_bob: Chain, ada: Identity, bob: Identity, name: str, reason: str
) -> None:
    state, key = with_bob.state, bob.public_key_text
    assert_broken(lambda: rename(state, ada, key=key, name=name, at=with_bob.at()), 3, reason)
    forged = forge(state, _Rename, ada, key=key, name=name)
    assert_broken(lambda: with_bob.verify([*with_bob.statements, forged]), 3, reason)


def test_a_revoked_members_name_may_be_given_again(
    with_bob: Chain, ada: Identity, bob: Identity, cy: Identity
) -> None:
    with_bob.append(revoke(with_bob.state, ada, key=bob.public_key_text, at=with_bob.at()))
    with_bob.append(add(with_bob.state, ada, key=cy.public_key_text, name="bob", at=with_bob.at()))
    assert with_bob.verify().members[cy.key_id].name == "bob"


def test_an_empty_chain_is_no_roster(chain: Chain) -> None:
    assert_broken(lambda: chain.verify([]), None, "empty")


def test_the_error_carries_its_seq_reason_and_code(with_bob: Chain) -> None:
    genesis_, invite_, join_ = with_bob.statements
    with pytest.raises(RosterChainBroken) as caught:
        with_bob.verify([genesis_, join_, invite_])
    error = caught.value
    assert (error.code, error.seq, error.reason) == ("roster_chain_broken", 1, "out_of_order")
    assert str(error) == (
        "statement 1 of the signed roster is refused (out_of_order): statement 2 is where 1 belongs"
    )


# -- names as output shows them --------------------------------------------------------------


def test_display_names_are_plain_when_no_name_misleads(
    with_bob: Chain, ada: Identity, bob: Identity
) -> None:
    assert display_names(with_bob.state) == {ada.key_id: "ada", bob.key_id: "bob"}


def test_display_names_mark_a_reused_name_and_a_renamed_member(
    with_bob: Chain, ada: Identity, bob: Identity, cy: Identity
) -> None:
    chain = with_bob
    chain.append(revoke(chain.state, ada, key=bob.public_key_text, at=chain.at()))
    chain.append(add(chain.state, ada, key=cy.public_key_text, name="Bob", at=chain.at()))
    chain.append(rename(chain.state, ada, key=ada.public_key_text, name="ada.l", at=chain.at()))
    assert display_names(chain.verify()) == {
        ada.key_id: f"ada.l ({ada.key_id[:6]})",
        bob.key_id: f"bob ({bob.key_id[:6]})",
        cy.key_id: f"Bob ({cy.key_id[:6]})",
    }


def test_display_names_lengthen_a_member_id_until_it_is_unique(chain: Chain) -> None:
    twins = {
        member_id: ChainMember(
            key_id=member_id, key="", name="ada", admin=False, added_at=T0, names=("ada",)
        )
        for member_id in ("abcdefgh2345aaaa", "abcdefgh2345bbbb", "zzzzzz2345cccccc")
    }
    state = msgspec.structs.replace(chain.state, members=twins)
    assert display_names(state) == {
        "abcdefgh2345aaaa": "ada (abcdefgh2345a)",
        "abcdefgh2345bbbb": "ada (abcdefgh2345b)",
        "zzzzzz2345cccccc": "ada (zzzzzz)",
    }
