"""Whether the coordinator accepts this member, and if not, why: its refusals told apart.

The coordinator answers 401 both for a missing or wrong team token and for a signature it does
not take (this computer's clock more than 2 minutes off, or requests signed for another team),
without saying which: a stranger learns nothing. The member can tell them apart: whether the
token variable is set is known here, and one more signed request that needs no token
(``POST /v1/join`` with a fresh random secret that no invite has, which changes nothing) is
refused with 401 only when the signature is what fails. A 403 is a key outside the roster or
one revoked, which the coordinator's own words say.

Each reason becomes its error of :mod:`memmesh.team.errors` (exit 3); every other refusal is
left as it was.
"""

import re
from collections.abc import Iterator
from contextlib import contextmanager

from memmesh.coordinator.invites import new_secret
from memmesh.coordinator.protocol import JoinRequest, JoinResponse
from memmesh.errors import MemmeshError
from memmesh.net.connect import coordinator_client, team_token
from memmesh.net.errors import Refused, Revoked
from memmesh.policy.config import Policy
from memmesh.registry.identity import Identity
from memmesh.team.errors import (
    KeyRevoked,
    NotOnRoster,
    SignatureRejected,
    TokenMissing,
    TokenRejected,
)

__all__ = ["PROBE_TIMEOUT", "accepted", "explained", "revoked_on", "signature_accepted"]

# Seconds the request telling a token problem from a signature problem may take.
PROBE_TIMEOUT = 3.0
_REVOKED = re.compile(r"\bwas revoked on (.+?)(?: \(HTTP \d+\))?$")


@contextmanager
def accepted(policy: Policy, identity: Identity) -> Iterator[None]:
    """Run coordinator calls for ``identity``, turning a refusal of this member into why
    (see :func:`explained`)."""
    try:
        yield
    except Refused as refused:
        raise explained(refused, policy, identity) from None


def explained(refused: Refused, policy: Policy, identity: Identity) -> MemmeshError:
    """What the coordinator's ``refused`` means for this member: a
    :class:`~memmesh.team.errors.AccessError` for a 401 or for a 403 refusing the key itself,
    else ``refused`` as it was."""
    if refused.http_status == 401:
        if signature_accepted(policy, identity) is False:
            return SignatureRejected(policy.team)
        if team_token(policy) is None:
            return TokenMissing(policy.token_env)
        return TokenRejected(policy.token_env)
    if refused.http_status == 403:
        revoked = revoked_on(refused)
        if revoked is not None:
            return KeyRevoked(identity.key_id, policy.team, revoked)
        if "is not a member of team" in refused.message:
            return NotOnRoster(identity.key_id, policy.team)
    return refused


def revoked_on(refused: Refused) -> str | None:
    """When the coordinator says the key that asked was revoked (as it shows the time), if
    ``refused`` is that 403; ``None`` for any other refusal."""
    if refused.http_status != 403 or refused.error_code != Revoked.code:
        return None
    # The code says what happened; the words only carry the time, as the coordinator shows it.
    found = _REVOKED.search(refused.message)
    return "an unstated time" if found is None else found.group(1)


def signature_accepted(policy: Policy, identity: Identity) -> bool | None:
    """Whether the coordinator takes ``identity``'s signed requests, asked with one that needs
    no token (see the module docstring); ``None`` when it did not answer."""
    probe = JoinRequest(secret=new_secret())
    try:
        with coordinator_client(policy, identity, timeout=PROBE_TIMEOUT) as client:
            client.post("/v1/join", probe, JoinResponse)
    except Refused as refused:
        return refused.http_status != 401
    except MemmeshError:
        return None
    return True
