"""A roster request refused, said in words that say what it means and what to do.

The coordinator refuses a request (:class:`~memmesh.net.errors.Refused`), the team's signed
roster refuses a change this member may not make
(:class:`~memmesh.coordinator.errors.NotAnAdmin`), an admin's memmesh refuses to sign a change
that names a name or key the chain holds already
(:class:`~memmesh.registry.errors.RosterChainBroken`), or the coordinator refuses a join from
a revoked key (:class:`~memmesh.team.errors.KeyRevoked`). :func:`refusal_of` turns each into
one :class:`Refusal`, the sentence `mem team` prints and the page shows, or into the error to
raise as it is: the coordinator's refusal of this member's key itself is said by
:func:`memmesh.team.access.explained`.
"""

import re
from pathlib import Path
from typing import Literal

import msgspec

from memmesh.coordinator.errors import NotAnAdmin
from memmesh.errors import MemmeshError
from memmesh.net.errors import Refused
from memmesh.policy import Policy
from memmesh.registry.errors import RosterChainBroken
from memmesh.registry.identity import Identity
from memmesh.team.access import explained, revoked_on
from memmesh.team.errors import KeyRevoked

__all__ = ["Asked", "Refusal", "refusal_of"]

# What a request asked for: any member's business, an admin's, or joining with a code.
Asked = Literal["member", "admin", "join"]
# The coordinator's code for a change sent to its table once the roster is signed.
_ROSTER_SIGNED = "roster_signed"
# The coordinator's words when it refuses the key itself, whatever was asked.
_REFUSES_THE_KEY = re.compile(r"is not a member of team|was revoked on")
# A change the chain refuses for what it names (a name, a key), in words.
_CHAIN_USAGE = {
    "name_taken": "another active member or a group has that name",
    "key_known": "that key is on the team's roster, or was (a revoked key never returns)",
    "bad_name": "that is no member name",
    "bad_key": "that is no public key",
    "bad_expiry": "an invite lasts at most 30 days",
    "no_change": "that changes nothing",
    "not_in_group": "that member is not in the group",
    "unknown_group": "the roster has no such group",
    "unknown_member": "that is no active member of the team",
    "is_admin": "an admin is never a reader",
    "reserved_name": "that name is kept for the whole team",
}


class Refusal(msgspec.Struct, frozen=True, kw_only=True):
    """A refused request in words: ``message``, the sentence to show; ``http_status`` and
    ``error_code``, the refusal's (the coordinator's, else the error's own); ``usage`` when
    what the request named was refused (a name, a key: bad input) rather than who asked."""

    message: str
    http_status: int
    error_code: str
    usage: bool = False


def refusal_of(
    error: MemmeshError,
    asked: Asked,
    what: str,
    policy: Policy | None = None,
    identity: Identity | None = None,
    *,
    home: Path | None = None,
) -> Refusal | MemmeshError:
    """What ``error``, raised while asking to ``what`` (``"invite members"``), means for this
    key: a :class:`Refusal`, or the error to raise as it is (``error`` itself, or the
    :class:`~memmesh.team.errors.AccessError` that says why the coordinator refuses this key).

    ``home`` is where a joining key lives (a revoked one joins again from a new home).
    """
    if isinstance(error, Refused):
        return _explained(error, asked, what, policy, identity, home)
    if isinstance(error, NotAnAdmin) and identity is not None:
        return Refusal(
            message=f"this key ({identity.key_id}) may not {what} in team {error.team}: only "
            "its admins may (the team's signed roster lists it as no admin)",
            http_status=NotAnAdmin.status,
            error_code=error.code,
        )
    if isinstance(error, KeyRevoked) and asked == "join" and home is not None:
        return _rejoin(home, error.when, 403, error.code)
    if isinstance(error, RosterChainBroken) and error.reason in _CHAIN_USAGE:
        return Refusal(
            message=f"{_CHAIN_USAGE[error.reason]}: {error.detail}",
            http_status=400,
            error_code=error.reason,
            usage=True,
        )
    return error


def _rejoin(home: Path, revoked: str, status: int, code: str) -> Refusal:
    """A join refused because this home's key was revoked on ``revoked``: the invite is not
    spent, and admits a new key, which a new home makes."""
    new = f"{home}-new"
    return Refusal(
        message=f"this home's key was revoked from the team on {revoked} and stays refused; "
        "the join code was not used. It admits a new key: join from a new home, "
        f"`mem --home {new} team join CODE` (bring your private items along with "
        f"`mem export -o items.jsonl` here and `mem --home {new} import items.jsonl` there)",
        http_status=status,
        error_code=code,
    )


def _explained(
    refused: Refused,
    asked: Asked,
    what: str,
    policy: Policy | None,
    identity: Identity | None,
    home: Path | None,
) -> Refusal | MemmeshError:
    """What the coordinator's ``refused`` means for what was asked."""
    status, said, code = refused.http_status, refused.message, refused.error_code
    if status == 404 and "no route" in said:
        return refused  # a coordinator that does not serve this yet says so itself
    revoked = revoked_on(refused)
    if asked == "join" and revoked is not None and home is not None:
        return _rejoin(home, revoked, status, code)
    if code == _ROSTER_SIGNED and policy is not None:
        return Refusal(
            message=f"team {policy.team}'s roster is signed, and team.yaml does not pin its "
            "root yet: `mem team members` reads the signed roster and pins it; then run this "
            "again",
            http_status=status,
            error_code=code,
        )
    if asked == "join" and status in (403, 404, 409, 410):
        return Refusal(
            message=f"the coordinator did not accept this join code ({said}): a code works "
            "once, until it expires; ask an admin for a new one (mem team invite NAME)",
            http_status=status,
            error_code=code,
        )
    if status == 401 and (policy is None or identity is None):
        return Refusal(
            message=f"the coordinator did not accept this request ({said}): check this "
            "computer's clock (it must be within 2 minutes of the coordinator's)",
            http_status=status,
            error_code=code,
        )
    if policy is None or identity is None:
        return refused
    if status == 403 and asked == "admin" and not _REFUSES_THE_KEY.search(said):
        return Refusal(
            message=f"this key ({identity.key_id}) may not {what} in team {policy.team}: only "
            f"its admins may (the coordinator said: {said})",
            http_status=status,
            error_code=code,
        )
    return explained(refused, policy, identity)
