"""Signing the roster of a team from before the roster was signed (`mem team members sign`).

An admin signs the coordinator's table as it is, once: the genesis (this admin is the root),
then for every revoked member an add and its revoke (so that their key stays refused, and a
name they had shows with its member id beside it), then an add for every other active member
with its name and role. The coordinator stores the chain only if it says exactly what its
table says; from then on only signed changes go. Members pin the root the first time they
see the signed roster.
"""

from pathlib import Path

import msgspec

from memmesh.coordinator.errors import NotAnAdmin
from memmesh.coordinator.protocol import StatementsRequest, StatementsResponse
from memmesh.net.connect import coordinator_client
from memmesh.net.errors import Conflict
from memmesh.net.presence import Roster
from memmesh.policy import POLICY_FILENAME, Policy, update_policy
from memmesh.policy.config import read_policy_source, write_policy_source
from memmesh.registry import Identity
from memmesh.registry import roster_chain as chain
from memmesh.registry.roster_chain import RosterState, SignedStatement
from memmesh.team.chain import keep_chain, roster_of

__all__ = ["SignedRoster", "sign_roster"]


class SignedRoster(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`sign_roster` signed: ``statements`` statements from the root ``root`` (this
    admin's member id, now in team.yaml), saying ``roster``."""

    root: str
    statements: int
    roster: Roster


def sign_roster(home: Path, policy: Policy, identity: Identity) -> SignedRoster:
    """Sign the coordinator's roster of a team whose roster is not signed, as this admin, and
    pin it in ``home``'s team.yaml (``roster_root``).

    Raises :class:`Conflict` when it is signed already (team.yaml pins a root, or the
    coordinator holds a chain), :class:`NotAnAdmin` when this key is no active admin on the
    table, and the errors of reading and editing team.yaml (before anything is sent)."""
    if policy.roster_root is not None:
        raise Conflict(
            f"team {policy.team!r}'s roster is signed already: team.yaml pins its root "
            f"({policy.roster_root})"
        )
    source = read_policy_source(home)
    text = update_policy(source, {"roster_root": identity.key_id}, str(home / POLICY_FILENAME))
    with coordinator_client(policy, identity) as client:
        table = client.get("/v1/members", Roster)
        if table.head_seq >= 0:
            raise Conflict(
                f"team {policy.team!r}'s roster is signed already (its chain has "
                f"{table.head_seq + 1} statements); your memmesh pins its root when it reads it"
            )
        statements, state = _statements(table, policy.team, identity)
        client.post(
            "/v1/roster/statements", StatementsRequest(statements=statements), StatementsResponse
        )
    write_policy_source(home, text)
    keep_chain(home, policy.team, identity.key_id, statements)
    return SignedRoster(root=identity.key_id, statements=len(statements), roster=roster_of(state))


def _statements(
    table: Roster, team: str, identity: Identity
) -> tuple[list[SignedStatement], RosterState]:
    """The chain that says what ``table`` says, signed by ``identity``, and its state."""
    mine = [m for m in table.members if m.key == identity.public_key_text and m.revoked_at is None]
    if not mine or not mine[0].admin:
        raise NotAnAdmin(team)
    statements = [chain.genesis(identity, team, name=mine[0].name)]
    state = chain.verify_chain(statements, root_key_id=identity.key_id, team=team)

    def put(statement: SignedStatement) -> None:
        nonlocal state
        state = chain.extend(state, statement)
        statements.append(statement)

    revoked = sorted(
        (m for m in table.members if m.revoked_at is not None), key=lambda m: m.revoked_at or 0.0
    )
    for member in revoked:
        put(chain.add(state, identity, key=member.key, name=member.name))
        put(chain.revoke(state, identity, key=member.key))
    for member in sorted(table.members, key=lambda m: m.added_at):
        if member.revoked_at is None and member.key != identity.public_key_text:
            put(chain.add(state, identity, key=member.key, name=member.name, admin=member.admin))
    return statements, state
