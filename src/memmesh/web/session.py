"""What the page works on: one member's home, its store held open for the run, and the
member's key and policy read afresh for each request that needs them (team.yaml may change
while the page is open).

A page reaches it from its request (:func:`session_of`). The store is thread-safe, and each
page runs its work in a worker thread (:meth:`Session.run`), never on the event loop: a
recall at 100,000 items or a call to the team must not hold up the next request. Changes to
the team (publish, retract, a roster statement) are made one at a time (:attr:`changing`).
"""

import threading
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from memmesh.local.store import Store
from memmesh.policy import Policy
from memmesh.registry import load_identity
from memmesh.registry.errors import IdentityMissing
from memmesh.registry.identity import Identity
from memmesh.team.member import Member, try_policy
from memmesh.web.templating import Templates

__all__ = ["Session", "session_of"]

P = ParamSpec("P")
T = TypeVar("T")


class Session:
    """The member's ``home`` and ``store`` for one run of the page, whose sign-in token is
    ``token`` and whose pages render with ``templates``."""

    def __init__(self, home: Path, store: Store, *, token: str, templates: Templates) -> None:
        self.home = home
        self.store = store
        self.token = token
        self.templates = templates
        self.changing = threading.Lock()

    def policy(self) -> Policy | None:
        """The member's team.yaml as it stands, or ``None`` when it is missing or invalid."""
        return try_policy(self.home)

    def identity(self) -> Identity | None:
        """The member's key, or ``None`` before `mem team init` or `join` made one."""
        try:
            return load_identity(self.home)
        except IdentityMissing:
            return None

    def member(self, *, reconcile_first: bool = True) -> Member:
        """The member at work, as the `mem team` commands act for them. Raises what
        `mem team` would without a key (:class:`IdentityMissing`)."""
        identity = load_identity(self.home)
        return Member(self.store, identity, self.policy(), reconcile_first=reconcile_first)

    async def run(self, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``work(*args, **kwargs)`` in a worker thread."""
        return await run_in_threadpool(work, *args, **kwargs)


def session_of(request: Request) -> Session:
    """The session of the app ``request`` came to."""
    session: Session = request.app.state.session
    return session
