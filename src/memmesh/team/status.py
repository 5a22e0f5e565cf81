"""Where a member's items stand with the team, project by project (`mem team status`), and
whether their store is in the team's vector space."""

from collections import Counter

import msgspec

from memmesh.local.items import Item
from memmesh.local.store import Store
from memmesh.policy import Policy, decide, load_policy
from memmesh.registry import Live, Registry, withdrawals, withheld
from memmesh.team.member import Member

__all__ = ["ProjectStatus", "Tally", "TeamStatus", "embedder_mismatch", "team_status"]


class ProjectStatus(msgspec.Struct, frozen=True, kw_only=True):
    """One project's active items.

    * ``private`` - not published; ``eligible`` of them the policy would let go.
    * ``published`` - live publications that still pass the policy; ``withheld`` - live ones
      it now holds back.
    * ``blocked`` - private items the policy refuses, counted by the rule that refuses them.
    """

    private: int
    eligible: int
    published: int
    withheld: int
    blocked: dict[str, int]


class TeamStatus(msgspec.Struct, frozen=True, kw_only=True):
    """A member, their team and coordinator, what awaits sync, each project's items, the ids
    of the retractions the coordinator has not given a receipt for (``unreceipted``), and of
    the published items the policy now withholds, which the next sync retracts
    (``policy_withholds``)."""

    member_id: str
    public_key: str
    team: str
    coordinator: str | None
    awaiting_sync: int
    projects: dict[str, ProjectStatus]
    unreceipted: list[str] = msgspec.field(default_factory=list)
    policy_withholds: list[str] = msgspec.field(default_factory=list)
    # The embedder of the member's store, the team's (team.yaml's ``embedder``), and what to
    # do when they differ (see :func:`embedder_mismatch`).
    store_embedder: str = ""
    team_embedder: str = ""
    embedder_mismatch: str | None = None


def embedder_mismatch(store: Store, policy: Policy | None) -> str | None:
    """What to tell a member whose store uses another embedder than team.yaml names for the
    team, naming both and the command that switches it; ``None`` when it is the team's."""
    mine = store.embedder.name
    if policy is None or mine == policy.embedder:
        return None
    team = policy.embedder
    return (
        f"your store uses the {mine} embedder, but team.yaml names {team} for the team: "
        "teammates' answers are ranked here by words alone, and what you publish is embedded "
        f"again by the coordinator, until you run `mem reindex --embedder {team}`"
    )


def team_status(member: Member, tally: "Tally | None" = None) -> TeamStatus:
    """Count the member's active items per project (projects sorted by name); ``tally`` is
    what an earlier count kept (see :class:`Tally`), which this count brings up to date.

    Raises :class:`PolicyError` when the member's policy is unusable.
    """
    # Without a policy in hand, reading it again raises why it cannot be used.
    policy = member.policy or load_policy(member.store.home)
    tally = tally if tally is not None else Tally()
    projects, withholds = tally.count(member.registry, policy)
    return TeamStatus(
        member_id=member.identity.key_id,
        public_key=member.identity.public_key_text,
        team=policy.team,
        coordinator=policy.coordinator,
        awaiting_sync=member.registry.unacked_count(),
        projects=projects,
        unreceipted=[entry.item_id for entry in member.registry.unreceipted()],
        policy_withholds=withholds,
        store_embedder=member.store.embedder.name,
        team_embedder=policy.embedder,
        embedder_mismatch=embedder_mismatch(member.store, policy),
    )


# Where an active item stands: ("published" | "withheld" | "eligible", "") or ("blocked", rule).
_State = tuple[str, str]


class Tally:
    """Where each of a member's active items stands, kept between counts so that counting
    again reads only what changed since: the items written after the store's revision then
    (:meth:`Store.changed_since`), and the items whose publication or withholding changed
    when the registry's head did. Another policy or key counts every item anew.

    One tally follows one store and one member; callers that share it hold a lock around
    :func:`team_status`.
    """

    def __init__(self) -> None:
        self._basis: tuple[Policy, str] | None = None
        # The store's revision and the registry's head, read before the last count read.
        self.seen: tuple[int, str | None] = (-1, None)
        self._live: dict[str, Live] = {}
        self._held: set[str] = set()
        self._withholds: list[str] = []
        self._states: dict[str, tuple[str, _State]] = {}
        self._counts: dict[str, Counter[_State]] = {}

    def count(
        self, registry: Registry, policy: Policy
    ) -> tuple[dict[str, ProjectStatus], list[str]]:
        """Each project's counts (sorted by name), and the ids of the published items the
        policy now withholds that the next sync retracts."""
        basis = (policy, registry.identity.public_key_text)
        seen = (registry.store.revision(), registry.head())
        try:
            if basis != self._basis:
                self._recount(registry, policy)
            elif seen != self.seen:
                self._update(registry, policy, seen[1] != self.seen[1])
        except BaseException:
            self._basis = None  # half brought up to date: the next count counts anew
            raise
        self._basis, self.seen = basis, seen
        return self._projects(), list(self._withholds)

    def _recount(self, registry: Registry, policy: Policy) -> None:
        self._follow(registry, policy, registry.live())
        self._states, self._counts = {}, {}
        for item in registry.store.items(status="active"):
            self._add(item, policy)

    def _update(self, registry: Registry, policy: Policy, refold: bool) -> None:
        changed = {item.id: item for item in registry.store.changed_since(self.seen[0])}
        live, held = self._live, self._held
        self._follow(registry, policy, registry.live() if refold else live)
        touched = changed.keys() | (live.keys() ^ self._live.keys()) | (held ^ self._held)
        missing = [item_id for item_id in touched if item_id not in changed]
        found = {**registry.store.items_by_id(missing), **changed}
        for item_id in touched:
            self._drop(item_id)
            item = found.get(item_id)
            if item is not None and item.status == "active":
                self._add(item, policy)

    def _follow(self, registry: Registry, policy: Policy, live: dict[str, Live]) -> None:
        """Take up the live publications, and which of them are withheld now."""
        self._live = live
        self._held = set(withheld(registry, policy, live))
        self._withholds = list(withdrawals(registry, policy, live))

    def _add(self, item: Item, policy: Policy) -> None:
        state: _State
        if item.id in self._live:
            state = ("withheld" if item.id in self._held else "published", "")
        else:
            decision = decide(item, policy)
            state = ("eligible", "") if decision.allowed else ("blocked", decision.rule)
        self._states[item.id] = (item.project, state)
        self._counts.setdefault(item.project, Counter())[state] += 1

    def _drop(self, item_id: str) -> None:
        project, state = self._states.pop(item_id, ("", ("", "")))
        counts = self._counts.get(project)
        if counts is None:
            return
        counts[state] -= 1
        if not counts[state]:
            del counts[state]
        if not counts:
            del self._counts[project]

    def _projects(self) -> dict[str, ProjectStatus]:
        projects = {}
        for name, counts in sorted(self._counts.items()):
            blocked = {rule: n for (state, rule), n in sorted(counts.items()) if state == "blocked"}
            eligible = counts["eligible", ""]
            projects[name] = ProjectStatus(
                private=eligible + sum(blocked.values()),
                eligible=eligible,
                published=counts["published", ""],
                withheld=counts["withheld", ""],
                blocked=blocked,
            )
        return projects
