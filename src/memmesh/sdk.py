"""The Python SDK: a member's memory as objects, ``from memmesh import Memory``.

:class:`Memory` opens a member's home as `mem` does (:mod:`memmesh.home`) and takes the same
paths as the command line and the MCP tools (:mod:`memmesh.agents.tools`): the store for
remember, recall and outcome, :class:`~memmesh.team.member.Member` for publish and
recall-team. :class:`AsyncMemory` is the same API as coroutines, each call run in a worker
thread. docs/sdk.md is the guide, with examples its tests run.

Errors are the package's own :class:`~memmesh.errors.MemmeshError` subclasses, each with its
machine-readable ``code``; every method's docstring names the ones it raises.
"""

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal, ParamSpec, TypeVar, cast

import msgspec

from memmesh.home import home_folder, open_store

if TYPE_CHECKING:
    from anyio import CapacityLimiter

    from memmesh.local import Recall
    from memmesh.local.items import Item
    from memmesh.local.store import Store
    from memmesh.registry import Planned
    from memmesh.team.changes import Forgotten
    from memmesh.team.member import Member
    from memmesh.team.recall import TeamAnswer
    from memmesh.team.sync import SyncReport
    from memmesh.team.tallies import Credited

__all__ = ["AsyncMemory", "Memory", "Published", "Stored"]

_P = ParamSpec("_P")
_T = TypeVar("_T")


class Stored(msgspec.Struct, frozen=True, kw_only=True):
    """What :meth:`Memory.remember` stored.

    * ``item`` - the item as stored now (a reinforced item with its new count and tags).
    * ``status`` - ``"created"``, or ``"reinforced"`` when an active item of the project
      already said the same and was reinforced instead of copied.
    * ``redacted`` - the detectors whose secrets were replaced by ``[redacted: <kind>]``.
    """

    item: "Item"
    status: Literal["created", "reinforced"]
    redacted: tuple[str, ...] = ()


class Published(msgspec.Struct, frozen=True, kw_only=True):
    """What :meth:`Memory.publish` did, or would do with ``dry_run``.

    * ``items`` - one plan per item: its ``action`` and the policy rule that decided it
      (``decision.rule``), the ``version`` published and the ``audience`` (``None``: the
      whole team).
    * ``warning`` - when the auto-sync failed (the publications stay queued for
      :meth:`Memory.sync`) or took back items the policy no longer allows, what happened.
    """

    items: "tuple[Planned, ...]"
    dry_run: bool
    warning: str | None = None


class Memory:
    """A member's memory: the store in their memmesh home, with their key and policy.

    * ``home`` - the memmesh home; ``None`` resolves it as `mem` does: ``$MEM_HOME``, else
      ``~/.memmesh``. The folder is created when missing.

    The store takes the embedder ``$MEM_EMBEDDER`` names, and new items' author is
    ``$MEM_AUTHOR``, else the member's name in team.yaml, else the login name. Use it as a context
    manager, or call :meth:`close`; a closed memory raises :class:`RuntimeError`. One memory
    may be used from several threads at once: the store serialises its writes and gives each
    thread its own connection for searches.

    Raises :class:`~memmesh.local.errors.StoreError` subclasses when the store cannot be
    opened (``CorruptDatabase``, ``SchemaTooNew``, ``EmbedderMismatch``, ``HomeNotCreated``).
    """

    def __init__(self, home: str | os.PathLike[str] | None = None) -> None:
        self.home = home_folder(None if home is None else os.fspath(home))
        self._store: Store | None = open_store(self.home)

    @property
    def store(self) -> "Store":
        """The open store (for what the SDK does not cover: :mod:`memmesh.local`)."""
        if self._store is None:
            raise RuntimeError("this Memory is closed; open a new one to use the store again")
        return self._store

    def close(self) -> None:
        """Close the store; calling it again does nothing."""
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def remember(
        self,
        text: str,
        *,
        kind: str = "fact",
        project: str | None = None,
        tags: Sequence[str] = (),
    ) -> Stored:
        """Store ``text`` as an item of ``kind`` (decision, convention, gotcha, command,
        incident, preference or fact) in ``project`` with ``tags``; the same fact again
        reinforces the item that says it (its kind stays).

        ``project`` ``None`` is resolved as `mem remember` does: ``$MEM_PROJECT``, else the
        enclosing git repository's name, else ``global``. A detected secret is stored
        redacted, and a tag holding one dropped (``redacted`` names them); to keep one as
        written, use `mem remember --keep-secret`.

        Raises :class:`~memmesh.local.errors.InvalidInput` for an empty or too long text, an
        unknown kind, or a project or tag that is not a name (nothing is stored).
        """
        from memmesh.local.project import resolve_project
        from memmesh.policy import redact

        clean = redact(text, list(tags))
        item, status = self.store.remember(
            clean.text, kind=kind, project=resolve_project(project), tags=list(clean.tags)
        )
        return Stored(item=item, status=status, redacted=tuple(clean.detectors))

    def recall(
        self, query: str, *, k: int = 5, project: str | None = None, explain: bool = False
    ) -> "Recall":
        """The ``k`` items most relevant to ``query`` in ``project`` (resolved as for
        :meth:`remember`) plus global, best first, as `mem recall` answers; ``abstained``
        when nothing is relevant enough. With ``explain``, each hit's score parts and the
        near misses. The recall is recorded (`mem outcome --last` credits its hits).

        Raises :class:`~memmesh.local.errors.InvalidInput` for an empty query or a ``k``
        out of range.
        """
        from memmesh.local import recall
        from memmesh.local.project import resolve_project

        return recall(self.store, query, k=k, project=resolve_project(project), explain=explain)

    def get(self, item_id: str) -> "Item":
        """The item with this id (or unique prefix of at least 4 characters), in any status.

        Raises :class:`~memmesh.local.errors.ItemNotFound`, or
        :class:`~memmesh.local.errors.AmbiguousId` for a prefix of several items.
        """
        return self.store.get(item_id)

    def outcome(self, item_id: str, result: str) -> "Item | Credited":
        """Record that following the item ``worked``, ``failed`` or was ``partial``.

        For one of the member's own items, returns the item with its new counts. An id that
        is not one names a teammate's item recall-team gave (or the team cache showed): it is
        credited as a tally, whose counts (never text) reach its author at the next sync, and
        the :class:`~memmesh.team.tallies.Credited` tally is returned.

        Raises :class:`~memmesh.local.errors.InvalidInput` for another result, and
        :class:`~memmesh.local.errors.ItemNotFound` when no item has that id.
        """
        from memmesh.local import ItemNotFound
        from memmesh.local.outcomes import Outcome
        from memmesh.team.tallies import credit_teammate

        try:  # the store checks the result before it looks for the item
            return self.store.outcome(item_id, result)
        except ItemNotFound:
            return credit_teammate(self.home, self.store, item_id, cast(Outcome, result))

    def forget(self, item_id: str) -> "Forgotten":
        """Archive the item (it is no longer recalled; `mem unforget` brings it back) and
        retract its publication, if it had one.

        Raises :class:`~memmesh.local.errors.ItemNotFound`, and
        :class:`~memmesh.local.errors.NotActive` for an item already archived or revised.
        """
        from memmesh.team.changes import forget

        return forget(self.home, self.store, item_id)

    def publish(
        self, item_ids: Sequence[str], *, dry_run: bool = False, to: Sequence[str] | None = None
    ) -> Published:
        """Share the items with the team, as `mem team publish` does without ``--force``: the
        policy in team.yaml decides each item (all or nothing), and the publication is pushed
        at once when the policy auto-syncs. ``to`` names whom for, as ``--to`` does (groups
        and members of the roster; ``None``: as the roster's rules choose). With ``dry_run``
        nothing is recorded or sent: the plans say what would happen.

        Raises :class:`~memmesh.registry.errors.IdentityMissing` before `mem team init`,
        :class:`~memmesh.policy.errors.PolicyError` subclasses when team.yaml is missing,
        invalid or refuses an item (``PublishRefused``, with the rule),
        :class:`~memmesh.registry.errors.RetractedBefore` for an item retracted before,
        :class:`~memmesh.registry.errors.UnknownAudience` and
        :class:`~memmesh.registry.errors.PublishNotAllowed` when the roster refuses.
        """
        planned, warning = self._member().publish(
            list(item_ids), dry_run=dry_run, to=list(to) if to else None
        )
        return Published(items=tuple(planned), dry_run=dry_run, warning=warning)

    def sync(self) -> "SyncReport":
        """Push to the coordinator what it has not acknowledged yet (publications and
        retractions; with ``auto_sync: false`` in team.yaml nothing is pushed before this),
        and exchange tallies, as `mem team sync` does.

        Raises :class:`~memmesh.policy.errors.PolicyError` subclasses for an unusable
        team.yaml or one that names no coordinator, :class:`~memmesh.team.errors.AccessError`
        subclasses when the coordinator does not accept this member, and
        :class:`~memmesh.net.errors.NetError` subclasses when it cannot be reached.
        """
        return self._member().sync()

    def recall_team(
        self,
        query: str,
        *,
        k: int = 5,
        project: str | None = None,
        author: str | None = None,
        timeout: float = 2.0,
    ) -> "TeamAnswer":
        """Ask the whole team, as `mem team recall-team` does: the coordinator and every live
        peer at once (``timeout`` seconds each), every hit verified and attributed, ranked on
        one score; ``sources`` says what each source answered. ``author`` keeps one member's
        items; ``project`` is resolved as for :meth:`remember`.

        Raises :class:`~memmesh.net.errors.Unreachable` when no source answered,
        :class:`~memmesh.registry.errors.IdentityMissing` before `mem team init`, and
        :class:`~memmesh.policy.errors.PolicyError` subclasses for an unusable team.yaml.
        """
        from memmesh.local.project import resolve_project

        member = self._member(reconcile_first=False)
        return member.ask_team(
            query, k=k, project=resolve_project(project), author=author, timeout=timeout
        )

    def _member(self, *, reconcile_first: bool = True) -> "Member":
        """This member with their key and the policy as it is now."""
        from memmesh.policy import load_policy
        from memmesh.registry import load_identity
        from memmesh.team.member import Member

        identity, policy = load_identity(self.home), load_policy(self.home)
        return Member(self.store, identity, policy, reconcile_first=reconcile_first)


class AsyncMemory:
    """:class:`Memory` as coroutines, for asyncio or trio code: each call runs the sync
    method in a worker thread (:func:`anyio.to_thread.run_sync`), so the event loop never
    waits on SQLite, the embedder or the network. Calls may overlap: they share one store,
    which serialises writes and gives each worker thread its own connection for searches.

    * ``home`` - as for :class:`Memory`. The store opens here, at once.
    * ``limiter`` - an :class:`anyio.CapacityLimiter` bounding the worker threads these
      calls take (default: anyio's shared one, 40 threads).

    Use it as ``async with``, or await :meth:`aclose`. The methods, their results and their
    errors are :class:`Memory`'s.
    """

    def __init__(
        self,
        home: str | os.PathLike[str] | None = None,
        *,
        limiter: "CapacityLimiter | None" = None,
    ) -> None:
        self.memory = Memory(home)
        self.home = self.memory.home
        self._limiter = limiter

    async def _run(self, call: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """``call`` in a worker thread; cancelling the await waits for the call to finish,
        so a write is never left half known."""
        import functools

        import anyio.to_thread

        bound = functools.partial(call, *args, **kwargs)
        return await anyio.to_thread.run_sync(bound, limiter=self._limiter)

    async def aclose(self) -> None:
        """Close the store (await the calls still running first: a search still running in
        another task would find its connection closed)."""
        await self._run(self.memory.close)

    async def __aenter__(self) -> "AsyncMemory":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def remember(
        self,
        text: str,
        *,
        kind: str = "fact",
        project: str | None = None,
        tags: Sequence[str] = (),
    ) -> Stored:
        """:meth:`Memory.remember`."""
        return await self._run(self.memory.remember, text, kind=kind, project=project, tags=tags)

    async def recall(
        self, query: str, *, k: int = 5, project: str | None = None, explain: bool = False
    ) -> "Recall":
        """:meth:`Memory.recall`."""
        return await self._run(self.memory.recall, query, k=k, project=project, explain=explain)

    async def get(self, item_id: str) -> "Item":
        """:meth:`Memory.get`."""
        return await self._run(self.memory.get, item_id)

    async def outcome(self, item_id: str, result: str) -> "Item | Credited":
        """:meth:`Memory.outcome`."""
        return await self._run(self.memory.outcome, item_id, result)

    async def forget(self, item_id: str) -> "Forgotten":
        """:meth:`Memory.forget`."""
        return await self._run(self.memory.forget, item_id)

    async def publish(
        self, item_ids: Sequence[str], *, dry_run: bool = False, to: Sequence[str] | None = None
    ) -> Published:
        """:meth:`Memory.publish`."""
        return await self._run(self.memory.publish, item_ids, dry_run=dry_run, to=to)

    async def sync(self) -> "SyncReport":
        """:meth:`Memory.sync`."""
        return await self._run(self.memory.sync)

    async def recall_team(
        self,
        query: str,
        *,
        k: int = 5,
        project: str | None = None,
        author: str | None = None,
        timeout: float = 2.0,
    ) -> "TeamAnswer":
        """:meth:`Memory.recall_team`."""
        return await self._run(
            self.memory.recall_team, query, k=k, project=project, author=author, timeout=timeout
        )
