"""Which searchable copies a caller's search may rank: those of the items it may read.

A search must rank among the items its caller may read alone, so that its top k are k of them
and no score depends on one withheld (a lexical score is relative to the best match among the
candidates). :class:`Searchable` answers with the copy ids of the request's projects the
caller may be served, or ``None`` when none there is withheld from it: the search then ranks
every copy, as it did before audiences.

While no live publication is restricted for anyone (no audience, no read grant), it keeps
nothing and costs a read of the feed's marks per search, and one indexed lookup whenever the
feed or the roster moved. Otherwise it
keeps, in memory, every live publication's author, project and audience by copy, and, for the
last few callers, their copies by project, each as of a feed head: both follow the feed by
reading only the rows changed after it. A caller's are made again from all of them when the
roster's head moved (its groups or the read grants may have changed), and all of them are
read again when a purge took rows out of the feed.
"""

import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable
from typing import NamedTuple

from memmesh.coordinator._audiences import Gate
from memmesh.coordinator._mirror import MARKS
from memmesh.coordinator.storage import CoordinatorStore, Parameters, Tx, one_of
from memmesh.local.items import GLOBAL
from memmesh.net.search import SearchRequest
from memmesh.net.signing import Caller

__all__ = ["Searchable"]

# Callers whose copies are kept between searches.
_KEPT_CALLERS = 16


class _Row(NamedTuple):
    """A changed row of the feed: its copy, whether it is a live publication, and that
    publication's author key, project and audience (JSON, ``None``: the whole team)."""

    copy: str
    live: bool
    author_key: str
    project: str | None
    audience: str | None


class _Marks(NamedTuple):
    """What a caller's copies are as of: the roster's head, the feed's, the purges' mark."""

    roster: str
    head: int
    purges: str


class _Reach:
    """One caller's copies by project: those it may be served, and those it may not be."""

    def __init__(self, marks: _Marks) -> None:
        self.marks = marks
        self.allowed: dict[str | None, dict[str, None]] = {}
        self.withheld: dict[str | None, set[str]] = {}
        self._project: dict[str, str | None] = {}

    def apply(self, gate: Gate, rows: Iterable[_Row]) -> None:
        """Take in ``rows``, changed in this order."""
        granted = gate.granted
        for row in rows:
            if row.copy in self._project:
                old = self._project.pop(row.copy)
                self.allowed.get(old, {}).pop(row.copy, None)
                self.withheld.get(old, set()).discard(row.copy)
            if not row.live:
                continue
            self._project[row.copy] = project = row.project
            # Gate.admits's first test, inline: it decides most rows.
            if (row.audience is None and project not in granted) or gate.admits(
                row.author_key, project, row.audience
            ):
                self.allowed.setdefault(project, {})[row.copy] = None
            else:
                self.withheld.setdefault(project, set()).add(row.copy)

    def copies(self, request: SearchRequest) -> list[str] | None:
        """The copies a search for ``request`` may rank, ``None``: every one of them."""
        if request.all_projects:
            projects: Collection[str | None] = self.allowed.keys() | self.withheld.keys()
        else:
            projects = {request.project, GLOBAL}
        if not any(self.withheld.get(project) for project in projects):
            return None
        return [copy for project in projects for copy in self.allowed.get(project, ())]


class Searchable:
    """The copies each caller's search may rank, on ``store``; ``gate`` gives a caller's view
    in a read (:meth:`Audiences.gate`)."""

    def __init__(self, store: CoordinatorStore, gate: Callable[[Tx, Caller], Gate]) -> None:
        self._store = store
        self._gate = gate
        self._lock = threading.Lock()
        self._live: dict[str, _Row] = {}
        self._followed: tuple[int, str] | None = None  # the feed's head and purges reached
        self._kept: OrderedDict[str, _Reach] = OrderedDict()
        # The marks as of which no live publication was restricted (the grants are the
        # roster's, which the marks name): no search needs a look until one of them moves.
        self._open: _Marks | None = None

    def copies(self, caller: Caller, request: SearchRequest) -> Collection[str] | None:
        """The copies of the request's projects (with global, or every one) that ``caller``
        may be served, ``None`` when none there is withheld from it."""
        return self.scope(caller, request)[0]

    def scope(self, caller: Caller, request: SearchRequest) -> tuple[Collection[str] | None, Gate]:
        """:meth:`copies`, and the caller's view of the roster it was decided by (the one
        its hits are served by: the roster as it stood when the request came)."""
        with self._store.read() as tx, self._lock:
            gate = self._gate(tx, caller)
            head, purges = tx.execute(MARKS).fetchone()
            state = gate.access.state
            marks = _Marks("" if state is None else state.head.hash, int(head), str(purges))
            reach = self._kept.pop(caller.key, None)
            if reach is None or reach.marks != marks:
                if marks == self._open or not _restricted(tx, gate):
                    self._open = marks  # nothing restricted as of these marks, for anyone
                    return None, gate
                reach = self._followed_reach(tx, gate, reach, marks)
            self._kept[caller.key] = reach
            while len(self._kept) > _KEPT_CALLERS:
                self._kept.popitem(last=False)
        return reach.copies(request), gate

    def _followed_reach(self, tx: Tx, gate: Gate, reach: _Reach | None, marks: _Marks) -> _Reach:
        """``reach`` brought up to ``marks``: by the rows changed since, when only the feed's
        head moved; else made again from every live publication."""
        same = reach is not None and reach.marks._replace(head=marks.head) == marks
        if reach is not None and same:
            reach.apply(gate, _changed(tx, reach.marks.head))
        else:
            self._follow(tx, marks)
            reach = _Reach(marks)
            reach.apply(gate, self._live.values())
        reach.marks = marks
        return reach

    def _follow(self, tx: Tx, marks: _Marks) -> None:
        """Bring the live publications kept up to the feed's ``marks``."""
        followed = self._followed
        if followed is None or followed[1] != marks.purges:
            self._live, followed = {}, (0, marks.purges)  # rows left the feed: read them all
        for row in _changed(tx, followed[0]):
            if row.live:
                self._live[row.copy] = row
            else:
                self._live.pop(row.copy, None)
        self._followed = (marks.head, marks.purges)


def _changed(tx: Tx, after: int) -> list[_Row]:
    """The rows changed after the cursor ``after``, in feed order."""
    rows = tx.execute(
        "SELECT copy_id, kind, author_key, project, audience FROM coord_envelopes "
        "WHERE cursor > ? ORDER BY cursor",
        (after,),
    ).fetchall()
    return [_Row(str(c), kind == "publication", str(a), p, d) for c, kind, a, p, d in rows]


def _restricted(tx: Tx, gate: Gate) -> bool:
    """Whether a live publication is restricted for anyone: one with an audience, or in a
    project with a read grant (each an indexed lookup)."""
    conditions: list[tuple[str, Parameters]] = [("audience IS NOT NULL", [])]
    if gate.granted:
        conditions.append(one_of(tx, "project", sorted(gate.granted)))
    return any(
        tx.execute(
            f"SELECT 1 FROM coord_envelopes WHERE kind = 'publication' AND {condition} LIMIT 1",
            values,
        ).fetchone()
        is not None
        for condition, values in conditions
    )
