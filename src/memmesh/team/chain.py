"""The signed roster as a member's commands believe it: read from the coordinator, verified
against the root the member pinned at join, and kept in the member's home.

The work is :mod:`memmesh.peer.chain` (below this layer, so that the peer daemon decides by
the same roster): a member whose team.yaml pins the team's root (``roster_root``) derives who
is a member, who is revoked and each member's name from the chain its admins signed alone,
never from the coordinator's list, and a member that pins none pins the root the first time
the coordinator's roster says it is signed. Here a chain that does not verify, or that does
not extend the head this member kept (a rollback, a fork), or a coordinator that says the
roster is not signed, is :class:`~memmesh.team.errors.RosterNotTrusted` (exit 3), and a joiner
reads the chain it joins with the proof that it holds an invite (:func:`invite_proof`).
"""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memmesh.coordinator.protocol import INVITE_PROOF_CONTEXT, ChainRequest, InviteProof
from memmesh.net.client import Client
from memmesh.net.presence import Roster
from memmesh.peer import chain as _core
from memmesh.peer.chain import CHAIN_FILENAME, Connect, keep_chain, kept_chain, roster_of
from memmesh.policy import Policy
from memmesh.registry.errors import RosterChainBroken
from memmesh.registry.identity import Identity
from memmesh.registry.roster_chain import RosterState, SignedStatement
from memmesh.team.errors import RosterNotTrusted

__all__ = [
    "CHAIN_FILENAME",
    "fetch_chain",
    "invite_proof",
    "keep_chain",
    "kept_chain",
    "roster_of",
    "trusted_roster",
    "verified_state",
]


def invite_proof(team: str, invite: Identity, caller: Identity) -> InviteProof:
    """What lets ``caller``, holding the private half of an invite (``invite``), read the chain
    before it is a member."""
    message = INVITE_PROOF_CONTEXT + team.encode() + b"\x00" + caller.public_key_text.encode()
    return InviteProof(invite_key=invite.public_key_text, signature=invite.sign(message))


def fetch_chain(
    client: Client, *, start: int = 0, invite: InviteProof | None = None
) -> tuple[list[SignedStatement], int]:
    """The coordinator's statements from ``start`` on, every page, and its head's seq (-1: the
    roster is not signed); ``invite`` lets a joiner read it. :class:`BadResponse` for pages
    that do not come to an end."""
    return _core.fetch_chain(
        client, start=start, request=lambda at: ChainRequest(start=at, invite=invite)
    )


@contextmanager
def _not_trusted(team: str) -> Iterator[None]:
    """A chain that does not verify, as this member's refusal to believe it."""
    try:
        yield
    except RosterChainBroken as exc:
        raise RosterNotTrusted(team, exc.reason, exc.seq, exc.detail) from None


def verified_state(
    client: Client, home: Path | None, policy: Policy, *, seen: Roster | None = None
) -> RosterState:
    """The roster the team's signed chain says, for a member pinning ``policy.roster_root``
    (see :func:`memmesh.peer.chain.verified_state`). Raises :class:`RosterNotTrusted`."""
    with _not_trusted(policy.team):
        return _core.verified_state(client, home, policy, seen=seen)


def trusted_roster(
    client: Connect, home: Path | None, policy: Policy, given: Roster | None
) -> Roster | None:
    """The roster to decide by, where the coordinator sent ``given``: for a member pinning
    the team's root (or pinning it now, on first sight of a signed roster, with a ``home``),
    the verified chain's, whatever ``given`` lists; else ``given`` itself (see
    :func:`memmesh.peer.chain.trusted_roster`; ``client`` may be what makes the client, made
    only when the chain must be read). Raises :class:`RosterNotTrusted`."""
    with _not_trusted(policy.team):
        return _core.trusted_roster(client, home, policy, given)
