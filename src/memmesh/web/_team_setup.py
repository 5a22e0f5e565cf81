"""Where the member stands with a team, as the team section needs to know before it shows
anything: team.yaml and the member's key as they are now, and how a call to the team that
failed is told on the page.

A member with no team is no error: every page of the section then shows how to start or join
one (:data:`NO_TEAM`). A team.yaml that cannot be used is said in its loader's own words, as
`mem team policy check` says it.

A call to the team runs in a worker thread under a deadline of its own (:func:`reach`): the
page answers within it, saying the source did not, even where the call itself would wait out
its client's longer timeout.
"""

from collections.abc import Callable
from functools import partial
from typing import Literal, ParamSpec, TypeVar

import anyio
import anyio.to_thread
import msgspec

from memmesh.errors import MemmeshError
from memmesh.net.errors import Timeout, Unreachable
from memmesh.policy import Policy, PolicyMissing, load_policy
from memmesh.policy.errors import NoCoordinator
from memmesh.registry import load_identity
from memmesh.registry.errors import IdentityMissing
from memmesh.registry.identity import Identity
from memmesh.team.errors import AccessError, RosterNotTrusted
from memmesh.web.session import Session

__all__ = ["READ_SECONDS", "Failure", "Standing", "failure", "reach", "standing"]

P = ParamSpec("P")
T = TypeVar("T")

# Seconds a page waits for the team to answer a read (the feed, the roster, disclosures).
READ_SECONDS = 6.0

State = Literal["none", "no_key", "invalid", "ready"]


class Standing(msgspec.Struct, frozen=True, kw_only=True):
    """The member's team set-up: ``ready`` (team.yaml and a key), ``none`` (no team.yaml),
    ``no_key`` (team.yaml, but no key yet) or ``invalid`` (``problem`` says why)."""

    state: State
    policy: Policy | None = None
    identity: Identity | None = None
    problem: str = ""

    @property
    def ready(self) -> bool:
        """Whether the member has a usable team.yaml and a key."""
        return self.state == "ready"

    def context(self) -> dict[str, object]:
        """What every page of the section shows of it."""
        policy = self.policy
        return {
            "standing": self.state,
            "standing_problem": self.problem,
            "member_id": self.identity.key_id if self.identity else "",
            "team_name": policy.team if policy else "",
            "member_name": policy.identity.name if policy and policy.identity else "",
            "coordinator": (policy.coordinator or "") if policy else "",
        }


def standing(session: Session) -> Standing:
    """Read team.yaml and the key of the session's member (blocking: run it in a worker)."""
    identity: Identity | None = None
    try:
        identity = load_identity(session.home)
    except IdentityMissing:
        identity = None
    except MemmeshError as exc:
        return Standing(state="invalid", problem=exc.message)
    try:
        policy = load_policy(session.home)
    except PolicyMissing:
        return Standing(state="none", identity=identity)
    except MemmeshError as exc:
        return Standing(state="invalid", identity=identity, problem=exc.message)
    if identity is None:
        return Standing(state="no_key", policy=policy)
    return Standing(state="ready", policy=policy, identity=identity)


async def reach(seconds: float, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``work(*args, **kwargs)`` in a worker thread, given up on after ``seconds``: raises
    :class:`~memmesh.net.errors.Timeout` then. Only for reads: a change given up on could
    still be made after the page said it was not."""
    try:
        with anyio.fail_after(seconds):
            return await anyio.to_thread.run_sync(
                partial(work, *args, **kwargs), abandon_on_cancel=True
            )
    except TimeoutError:
        raise Timeout(f"no answer within {seconds:g} s") from None


Kind = Literal["unreachable", "refused", "untrusted", "not_set", "failed"]


class Failure(msgspec.Struct, frozen=True, kw_only=True):
    """A call to the team that failed, as the page says it: ``kind`` picks the words around
    ``message`` (the error's own), ``code`` is the error's machine-readable code."""

    kind: Kind
    message: str
    code: str

    @property
    def headline(self) -> str:
        """One line saying what it means."""
        return {
            "unreachable": "The coordinator cannot be reached",
            "refused": "The coordinator does not accept this member",
            "untrusted": "The team's roster does not verify",
            "not_set": "team.yaml names no coordinator",
            "failed": "The team could not answer",
        }[self.kind]


def failure(exc: MemmeshError) -> Failure:
    """How the page tells of ``exc``, raised by a call to the team."""
    kind: Kind = "failed"
    if isinstance(exc, Unreachable):
        kind = "unreachable"
    elif isinstance(exc, RosterNotTrusted):
        kind = "untrusted"
    elif isinstance(exc, AccessError):
        kind = "refused"
    elif isinstance(exc, NoCoordinator):
        kind = "not_set"
    return Failure(kind=kind, message=exc.message, code=exc.code)
