"""A served team whose roster is signed, as the coordinator's tests grow it: statements its
first admin signs, posted to the real server."""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from memmesh.coordinator.bootstrap import admin_join_code
from memmesh.coordinator.protocol import (
    JoinRequest,
    JoinResponse,
    StatementsRequest,
    StatementsResponse,
)
from memmesh.registry import Identity
from memmesh.registry import roster_chain as chain
from memmesh.registry.roster_chain import RosterState, SignedStatement
from tests.coordinator._served import Served
from tests.registry._helpers import TEAM

T = TypeVar("T")


def post(served: Served, signer: Identity, path: str, body: Any, response: type[T]) -> T:
    """``body`` posted to ``path`` in a request ``signer`` signs; the answer as ``response``."""
    with served.client(signer) as client:
        return client.post(path, body, response)


@dataclass
class SignedTeam:
    """A served team whose roster ``root`` started, and the statements it holds so far."""

    served: Served
    root: Identity
    statements: list[SignedStatement] = field(default_factory=list)

    @property
    def state(self) -> RosterState:
        return chain.verify_chain(self.statements, root_key_id=self.root.key_id, team=TEAM)

    def post(
        self, *statements: SignedStatement, by: Identity | None = None, purge: bool = False
    ) -> StatementsResponse:
        """Post ``statements`` (as ``by``, the root unless told) and keep them once accepted."""
        request = StatementsRequest(statements=list(statements), purge=purge)
        answer = post(
            self.served, by or self.root, "/v1/roster/statements", request, StatementsResponse
        )
        self.statements += statements
        return answer

    def member(self, name: str, *, admin: bool = False) -> Identity:
        """A new key added as ``name`` by the root."""
        identity = self.served.key(name)
        key = identity.public_key_text
        self.post(chain.add(self.state, self.root, key=key, name=name, admin=admin))
        return identity


def signed_team(served: Served, data: Path) -> SignedTeam:
    """A team whose first admin, ada, started the signed roster with the bootstrap code."""
    code = admin_join_code(
        served.coordinator.membership, data, url=served.url, pin=None, name="ada"
    )
    assert code is not None
    ada = served.key("ada")
    genesis = chain.genesis(ada, TEAM, name="ada")
    post(served, ada, "/v1/join", JoinRequest(secret=code.secret, genesis=genesis), JoinResponse)
    return SignedTeam(served, ada, [genesis])
