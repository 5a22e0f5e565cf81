"""The signed roster as its tests grow it: a chain whose every statement is checked as it is
appended, and forged statements."""

import base64
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memmesh.registry import Identity, RosterChainBroken
from memmesh.registry.roster_chain import (
    ROSTER_FORMAT,
    RosterState,
    SignedStatement,
    Statement,
    extend,
    genesis,
    invite,
    sign_statement,
    verify_chain,
)
from tests.registry._helpers import TEAM

T0 = 1_700_000_000.0
DAY = 24 * 3600.0


class Chain:
    """A team's chain as its admins grow it: every statement is checked as it is appended."""

    def __init__(self, root: Identity, name: str = "ada") -> None:
        self.root = root
        self.statements = [genesis(root, TEAM, name=name, at=T0)]
        self.state = self.verify()

    def append(self, signed: SignedStatement) -> SignedStatement:
        self.state = extend(self.state, signed)
        self.statements.append(signed)
        return signed

    def verify(
        self, statements: Sequence[SignedStatement] | None = None, **options: Any
    ) -> RosterState:
        chosen = self.statements if statements is None else statements
        return verify_chain(chosen, root_key_id=self.root.key_id, team=TEAM, **options)

    def at(self, offset: float = 60.0) -> float:
        """A time a little after the head's."""
        return self.state.head.at + offset

    def invited(self, signer: Identity, name: str, **options: Any) -> str:
        """Append ``signer``'s invite for ``name``; the invite's secret."""
        options.setdefault("expires_at", self.at() + DAY)
        signed, secret = invite(self.state, signer, name=name, at=self.at(), **options)
        self.append(signed)
        return secret


def forge(
    state: RosterState,
    op: type[Statement],
    signer: Identity,
    cosigner: Identity | None = None,
    **fields: Any,
) -> SignedStatement:
    """A statement after ``state`` signed by ``signer`` (and ``cosigner``) without any check:
    what an attacker, or a buggy client, could send."""
    place: dict[str, Any] = {
        "format": ROSTER_FORMAT,
        "team": TEAM,
        "seq": state.head.seq + 1,
        "prev": state.head.hash,
        "at": state.head.at + 60,
        "signer": signer.public_key_text,
    }
    return sign_statement(op(**{**place, **fields}), signer, cosigner)


def invite_identity(secret: str) -> Identity:
    """The invite's key pair from its secret: what anyone holding the join code holds."""
    raw = base64.urlsafe_b64decode(secret + "=" * (-len(secret) % 4))
    return Identity(Ed25519PrivateKey.from_private_bytes(raw))


def assert_broken(check: Callable[[], object], seq: int | None, reason: str) -> None:
    """``check`` raises :class:`RosterChainBroken` at ``seq`` for ``reason``."""
    with pytest.raises(RosterChainBroken) as caught:
        check()
    assert (caught.value.seq, caught.value.reason) == (seq, reason), caught.value.detail
