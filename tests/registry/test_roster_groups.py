"""Groups, roles and project grants on the signed roster: statements only an admin signs, that
every reader of the chain checks, and that forging or bending is refused as the chain refuses
any statement."""

from memmesh.registry import Identity
from memmesh.registry._roster_wire import Group, Role
from memmesh.registry.envelopes import Audience
from memmesh.registry.roster_chain import (
    ProjectGrant,
    demote,
    extend,
    grant,
    group,
    promote,
    rename,
    revoke,
    set_role,
)
from tests.registry._chain import Chain, assert_broken, forge


def test_an_admin_makes_a_group_and_takes_a_member_out_of_it(
    with_bob: Chain, ada: Identity, bob: Identity
) -> None:
    with_bob.append(group(with_bob.state, ada, name="backend", add=[ada.key_id, bob.key_id]))
    with_bob.append(group(with_bob.state, ada, name="backend", remove=[bob.key_id]))
    state = with_bob.verify()
    assert state.groups == {"backend": (ada.key_id,)}


def test_a_plain_member_cannot_change_a_group_or_a_role(with_bob: Chain, bob: Identity) -> None:
    forged = forge(with_bob.state, Group, bob, group="backend", add=(bob.key_id,), remove=())
    assert_broken(lambda: extend(with_bob.state, forged), 3, "not_admin")
    forged = forge(with_bob.state, Role, bob, key=bob.public_key_text, role="reader")
    assert_broken(lambda: extend(with_bob.state, forged), 3, "not_admin")


def test_a_reader_is_no_admin_and_promotion_ends_it(
    with_bob: Chain, ada: Identity, bob: Identity
) -> None:
    with_bob.append(set_role(with_bob.state, ada, key=bob.public_key_text, role="reader"))
    assert with_bob.state.members[bob.key_id].role == "reader"
    with_bob.append(promote(with_bob.state, ada, key=bob.public_key_text))
    assert with_bob.state.members[bob.key_id].role == "admin"
    assert_broken(
        lambda: set_role(with_bob.state, ada, key=bob.public_key_text, role="reader"),
        5,
        "is_admin",
    )
    with_bob.append(demote(with_bob.state, ada, key=bob.public_key_text))
    assert with_bob.verify().members[bob.key_id].role == "member"


def test_a_group_name_and_a_member_name_never_clash(
    with_bob: Chain, ada: Identity, bob: Identity
) -> None:
    assert_broken(lambda: group(with_bob.state, ada, name="BOB", add=[ada.key_id]), 3, "name_taken")
    with_bob.append(group(with_bob.state, ada, name="backend", add=[ada.key_id]))
    assert_broken(
        lambda: rename(with_bob.state, ada, key=bob.public_key_text, name="Backend"),
        4,
        "name_taken",
    )


def test_a_revoked_member_leaves_every_group(with_bob: Chain, ada: Identity, bob: Identity) -> None:
    with_bob.append(group(with_bob.state, ada, name="backend", add=[ada.key_id, bob.key_id]))
    with_bob.append(revoke(with_bob.state, ada, key=bob.public_key_text))
    assert with_bob.verify().groups["backend"] == (ada.key_id,)


def test_a_group_change_that_changes_nothing_or_names_a_stranger_is_refused(
    with_bob: Chain, ada: Identity, operator: Identity
) -> None:
    assert_broken(
        lambda: group(with_bob.state, ada, name="x", add=[operator.key_id]), 3, "unknown_member"
    )
    assert_broken(
        lambda: group(with_bob.state, ada, name="x", remove=[ada.key_id]), 3, "not_in_group"
    )
    with_bob.append(group(with_bob.state, ada, name="x", add=[ada.key_id]))
    assert_broken(lambda: group(with_bob.state, ada, name="x", add=[ada.key_id]), 4, "no_change")


def test_a_grant_names_only_groups_and_members_the_roster_has_and_can_be_lifted(
    with_bob: Chain, ada: Identity, bob: Identity
) -> None:
    assert_broken(
        lambda: grant(with_bob.state, ada, project="api", read=Audience.of(["ops"]), publish=None),
        3,
        "unknown_group",
    )
    with_bob.append(group(with_bob.state, ada, name="ops", add=[bob.key_id]))
    read = Audience.of(["ops"], [ada.key_id])
    with_bob.append(grant(with_bob.state, ada, project="api", read=read, publish=None))
    assert with_bob.verify().grants == {"api": ProjectGrant(read=read)}
    with_bob.append(grant(with_bob.state, ada, project="api", read=None, publish=None))
    assert with_bob.verify().grants == {}


def test_a_statement_bent_after_signing_is_refused(
    with_bob: Chain, ada: Identity, bob: Identity
) -> None:
    signed = group(with_bob.state, ada, name="backend", add=[ada.key_id])
    bent = type(signed)(
        body=signed.body.replace(ada.key_id.encode(), bob.key_id.encode()),
        signatures=signed.signatures,
    )
    assert_broken(lambda: extend(with_bob.state, bent), 3, "bad_signature")
