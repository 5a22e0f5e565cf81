"""A team whose roster is signed, for end-to-end tests of what members and peers believe: a
real coordinator on 127.0.0.1 (a :class:`~tests.team._team.Team`'s), its first admin started
through ``POST /v1/join`` with the bootstrap secret and a genesis, every later change a
statement the admin signs and posts (``POST /v1/roster/statements``), as an admin's memmesh
does. Members' team.yaml lists nobody under ``members:``: what they believe comes from the
roster alone.

The coordinator's operator is played with sqlite3 on the coordinator's own store file (and,
where the coordinator's honest code would refuse what it did, with the coordinator serving its
chain table unchecked: :meth:`SignedTeam.serve_unchecked`). :func:`revoke_member` revokes a
member of any team, signed or not, as an admin's memmesh does.
"""

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager

import msgspec
import pytest

from memmesh.coordinator.protocol import (
    ChainRequest,
    ChainResponse,
    JoinRequest,
    JoinResponse,
    MemberRevoke,
    RevokeResponse,
    StatementsRequest,
    StatementsResponse,
)
from memmesh.net.client import Client
from memmesh.net.presence import Roster, RosterMember
from memmesh.registry import roster_chain as chain
from memmesh.registry.identity import key_id, public_key_from_text
from memmesh.registry.roster_chain import RosterState, SignedStatement
from memmesh.team.chain import fetch_chain
from tests._signed import signed_client
from tests.team._team import TOKEN, Member, Team


class SignedTeam:
    """``team``'s signed roster, as its first admin ``admin`` keeps it (:attr:`state`)."""

    def __init__(self, team: Team) -> None:
        assert team.host is not None
        assert team.coordinator is not None
        self.team = team
        self.admin: Member | None = None
        self.statements: list[SignedStatement] = []

    @property
    def state(self) -> RosterState:
        return chain.verify_chain(self.statements, root_key_id=self.root, team=self.team.team)

    @property
    def root(self) -> str:
        assert self.admin is not None
        return self.admin.key_id

    def member(self, name: str, *, pinned: bool = True) -> Member:
        """A home for ``name`` (not on the roster yet) whose team.yaml lists no members and,
        with ``pinned``, pins the roster's root (once the roster is started)."""
        made = Member(
            name, self.team.root / name, team=self.team.team, coordinator=self.team.coordinator
        )
        self.team.members[name] = made
        if pinned and self.admin is not None:
            made.write_policy(roster_root=self.root)
        return made

    def start(self, admin: Member) -> None:
        """``admin`` joins with the bootstrap secret and signs the genesis: the roster starts,
        with ``admin`` as its root and first admin; ``admin``'s team.yaml pins it."""
        assert self.team.host is not None
        assert self.team.coordinator is not None
        made = self.team.host.membership.bootstrap(admin.name)
        assert made is not None, "the roster has a member already"
        genesis = chain.genesis(admin.identity, self.team.team, name=admin.name)
        request = JoinRequest(secret=made[0], genesis=genesis)
        with self._client(admin) as client:
            client.post("/v1/join", request, JoinResponse)
        self.admin = admin
        self.statements = [genesis]
        admin.write_policy(roster_root=self.root)

    def post(self, statement: SignedStatement, *, purge: bool = False) -> None:
        """Post the admin's ``statement`` (it extends :attr:`state`)."""
        assert self.admin is not None
        request = StatementsRequest(statements=[statement], purge=purge)
        with self._client(self.admin) as client:
            client.post("/v1/roster/statements", request, StatementsResponse)
        self.statements.append(statement)

    def add(self, *members: Member, admin: bool = False) -> None:
        assert self.admin is not None
        for member in members:
            key = member.identity.public_key_text
            self.post(
                chain.add(self.state, self.admin.identity, key=key, name=member.name, admin=admin)
            )

    def revoke(self, member: Member) -> None:
        assert self.admin is not None
        key = member.identity.public_key_text
        self.post(chain.revoke(self.state, self.admin.identity, key=key))

    def rename(self, member: Member, name: str) -> None:
        assert self.admin is not None
        key = member.identity.public_key_text
        self.post(chain.rename(self.state, self.admin.identity, key=key, name=name))

    chain_table = "coord_roster_chain"

    @staticmethod
    def row(seq: int, statement: SignedStatement) -> tuple[int, str, bytes, bytes]:
        """``statement`` as a row of the coordinator's chain table, at ``seq``."""
        return seq, statement.hash, statement.body, b"".join(statement.signatures)

    def store_statement(self, seq: int, statement: SignedStatement) -> None:
        """The operator writes ``statement`` into the coordinator's chain as statement ``seq``."""
        with self.operator() as db:
            db.execute(f"DELETE FROM {self.chain_table} WHERE seq >= ?", (seq,))
            db.execute(
                f"INSERT INTO {self.chain_table} (seq, hash, body, signatures) VALUES (?, ?, ?, ?)",
                self.row(seq, statement),
            )

    def serve_unchecked(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """From now on the coordinator serves whatever its chain table holds without checking
        it, as an operator's own build of it would (its honest code refuses a table that does
        not verify): it goes on saying the admins' chain as :attr:`state` is."""
        assert self.team.host is not None
        state = self.state
        monkeypatch.setattr(self.team.host.membership.signed, "state", lambda tx: state)

    @contextmanager
    def operator(self) -> Iterator[sqlite3.Connection]:
        """The coordinator's store file, opened as its operator would (committed on leaving)."""
        assert self.team.host is not None
        with closing(sqlite3.connect(self.team.host.store.cache.path)) as db, db:
            yield db

    def _client(self, member: Member) -> Client:
        assert self.team.coordinator is not None
        return signed_client(
            self.team.coordinator, member.identity, team=self.team.team, token=TOKEN
        )


def revoke_member(
    team: Team, admin: Member, member: Member, *, purge: bool = False
) -> RosterMember:
    """``admin`` revokes ``member`` (with ``purge``, their published items too) as an admin's
    memmesh does: a signed statement once the roster is signed, else the coordinator's own
    route; returns the revoked member as the coordinator lists them."""
    assert team.coordinator is not None
    with signed_client(team.coordinator, admin.identity, team=team.team, token=TOKEN) as client:
        page = client.post("/v1/roster/chain", ChainRequest(), ChainResponse)
        if page.head_seq < 0:
            request = MemberRevoke(member=member.name, purge=purge)
            return client.post("/v1/members/revoke", request, RevokeResponse).member
        statements = fetch_chain(client)[0]
        genesis = msgspec.json.decode(statements[0].body, type=chain.Statement)
        root = key_id(public_key_from_text(genesis.signer))
        state = chain.verify_chain(statements, root_key_id=root, team=team.team)
        statement = chain.revoke(state, admin.identity, key=member.identity.public_key_text)
        request_signed = StatementsRequest(statements=[statement], purge=purge)
        client.post("/v1/roster/statements", request_signed, StatementsResponse)
        listed = client.get("/v1/members", Roster).members
    return next(m for m in listed if m.key_id == member.key_id)
