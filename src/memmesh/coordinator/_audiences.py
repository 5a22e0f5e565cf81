"""What the coordinator serves each caller: the signed roster's read and publish rules, applied
to its rows.

:class:`~memmesh.registry.access.Access` states the rules; here they meet the rows of
``coord_envelopes``, which keep what the rules need in columns (:mod:`memmesh.coordinator.
_tables`): each item's project, the audience of its live publication and its *reach*, the union
of the audiences of every version it had. The roster is read as it stands at each request, from
the database (its verified state is kept in memory by its head: :class:`~memmesh.coordinator.
signed_roster.SignedRoster`), so a group change or a revocation posted through any process holds
in every process at the next request.

A :class:`Gate` is one caller's view under one roster: whether a row's item may be served to
them, decided once per distinct (own item, project, audience) it meets. In a team without
audiences or read grants, each row costs one comparison that finds it open to everyone.
"""

import msgspec

from memmesh.coordinator import _tables
from memmesh.coordinator._outcomes import rejected
from memmesh.coordinator.protocol import Outcome
from memmesh.coordinator.signed_roster import SignedRoster
from memmesh.coordinator.storage import CoordinatorStore, Parameters, Tx, one_of
from memmesh.errors import MemmeshError
from memmesh.net.signing import Caller
from memmesh.registry.access import Access
from memmesh.registry.envelopes import Publication
from memmesh.registry.errors import PublishNotAllowed, UnknownAudience
from memmesh.registry.roster_chain import RosterState

__all__ = ["UNKNOWN_AUDIENCE", "Audiences", "Gate"]

# The code of a publication whose audience names what the signed roster does not have (or any
# audience while the roster is not signed); a reader's and a left-out publisher's are
# Access.publish_refusal's reasons, ``reader`` and ``not_granted``.
UNKNOWN_AUDIENCE = "unknown_audience"


class Gate:
    """Whether ``caller`` may be served an item, under ``access`` (one roster); ``None``: the
    coordinator itself, in process, who may read everything."""

    def __init__(self, access: Access, caller: Caller | None) -> None:
        self.access = access
        self.caller = caller
        state = access.state
        # The projects whose read grant names who may read them: their items are restricted
        # even when they are for the whole team.
        self.granted = frozenset(
            project
            for project, grant in (state.grants if state else {}).items()
            if grant.read is not None
        )
        self._known: dict[tuple[bool, str | None, str | None], bool] = {}

    def admits(self, author_key: str, project: str | None, audience: str | None) -> bool:
        """Whether the caller may read an item of ``author_key`` in ``project`` for
        ``audience`` (a column's JSON, ``None``: the whole team)."""
        if self.caller is None or (audience is None and project not in self.granted):
            return True
        own = author_key == self.caller.key
        decided = self._known.get((own, project, audience))
        if decided is None:
            decided = self.access.may_read(
                self.caller.key_id,
                # Only whether the reader is the author matters: a member id is never "".
                author=self.caller.key_id if own else "",
                project=project or "",
                audience=_tables.audience_of(audience),
            )
            self._known[own, project, audience] = decided
        return decided

    def live(self, tx: Tx, copies: list[str]) -> dict[str, _tables.Live]:
        """The live publications behind ``copies`` that the caller may read, by copy."""
        found = _tables.live_publications(tx, copies)
        return {
            copy: pub
            for copy, pub in found.items()
            if self.admits(pub.author_key, pub.project, pub.audience)
        }

    def restricted(self, tx: Tx) -> tuple[str, Parameters]:
        """A condition on ``coord_envelopes`` that holds for every row this gate may refuse
        (by its audience, its reach or its project), and its parameters."""
        columns = "(audience IS NOT NULL OR reach IS NOT NULL)"
        if not self.granted:
            return columns, []
        among, values = one_of(tx, "project", sorted(self.granted))
        return f"({columns} OR {among})", values


class Audiences:
    """The read and publish rules of one coordinator's team, on its ``store``, as its
    ``roster`` stands at each request."""

    def __init__(self, store: CoordinatorStore, roster: SignedRoster) -> None:
        self._store = store
        self._roster = roster
        self._access = Access(None)

    def access(self, tx: Tx) -> Access:
        """The rules of the roster as the database holds it now."""
        state = self._roster.state(tx)
        access = self._access
        if access.state is not state:  # the roster's verified state is kept by its head
            access = self._access = Access(state)
        return access

    def gate(self, tx: Tx, caller: Caller | None) -> Gate:
        """``caller``'s view under the roster as it stands now."""
        return Gate(self.access(tx), caller)

    def allowed(self, tx: Tx, caller: Caller, body: Publication | Outcome) -> Publication | Outcome:
        """``body`` if the roster lets the caller publish it, else :meth:`publish_refusal`'s
        outcome (an outcome stands as it is)."""
        if isinstance(body, Outcome):
            return body
        return self.publish_refusal(tx, caller, body) or body

    def publish_refusal(self, tx: Tx, caller: Caller, body: Publication) -> Outcome | None:
        """Why the roster refuses the caller's publication ``body``, as its outcome (``code``:
        ``reader``, ``not_granted`` or :data:`UNKNOWN_AUDIENCE`), else ``None``."""
        access = self.access(tx)
        refusal: MemmeshError
        reason = access.publish_refusal(caller.key_id, body.project)
        unknown = access.unknown(body.audience)
        if reason is not None:
            refusal = PublishNotAllowed(_name(access.state, caller), body.project, reason)
        elif body.audience is not None and (access.state is None or unknown):
            reason, refusal = UNKNOWN_AUDIENCE, UnknownAudience(unknown, signed=bool(access.state))
        else:
            return None
        outcome = rejected(body.item_id, body.version, refusal.message)
        return msgspec.structs.replace(outcome, code=reason)

    def counts(self, tx: Tx, caller: Caller | None) -> tuple[int, int]:
        """How many live publications and tombstones ``caller`` may see (the feed's
        publications and tombstones it is served)."""
        gate = self.gate(tx, caller)
        kinds = dict(tx.execute("SELECT kind, count(*) FROM coord_envelopes GROUP BY kind"))
        published, tombstones = int(kinds.get("publication", 0)), int(kinds.get("retraction", 0))
        if caller is None:
            return published, tombstones
        condition, values = gate.restricted(tx)
        rows = tx.execute(
            "SELECT kind, author_key, project, audience, reach FROM coord_envelopes "
            f"WHERE {condition}",
            values,
        )
        for kind, author, project, audience, reach in rows:
            if kind == "publication" and not gate.admits(author, project, audience):
                published -= 1
            elif kind == "retraction" and not gate.admits(author, project, reach):
                tombstones -= 1
        return published, tombstones


def _name(state: RosterState | None, caller: Caller) -> str:
    """The caller's name on the roster, else its member id."""
    member = state.members.get(caller.key_id) if state else None
    return caller.key_id if member is None else member.name
