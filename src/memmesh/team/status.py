"""Where a member's items stand with the team, project by project (`mem team status`), and
whether their store is in the team's vector space."""

from collections import Counter

import msgspec

from memmesh.local.store import Store
from memmesh.policy import Policy, decide, load_policy
from memmesh.registry import withdrawals, withheld
from memmesh.team.member import Member

__all__ = ["ProjectStatus", "TeamStatus", "embedder_mismatch", "team_status"]


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


def team_status(member: Member) -> TeamStatus:
    """Count the member's active items per project (projects sorted by name).

    Raises :class:`PolicyError` when the member's policy is unusable.
    """
    # Without a policy in hand, reading it again raises why it cannot be used.
    policy = member.policy or load_policy(member.store.home)
    live = member.registry.live()
    awaiting = member.registry.unacked_count()
    unreceipted = [entry.item_id for entry in member.registry.unreceipted()]
    items = member.store.items(status="active")
    held = withheld(member.registry, policy, live)
    projects: dict[str, Counter[str]] = {}
    blocked: dict[str, Counter[str]] = {}
    for item in items:
        counts = projects.setdefault(item.project, Counter())
        if item.id in live:
            counts["withheld" if item.id in held else "published"] += 1
            continue
        counts["private"] += 1
        decision = decide(item, policy)
        if decision.allowed:
            counts["eligible"] += 1
        else:
            blocked.setdefault(item.project, Counter())[decision.rule] += 1
    return TeamStatus(
        member_id=member.identity.key_id,
        public_key=member.identity.public_key_text,
        team=policy.team,
        coordinator=policy.coordinator,
        awaiting_sync=awaiting,
        projects={
            name: ProjectStatus(
                private=counts["private"],
                eligible=counts["eligible"],
                published=counts["published"],
                withheld=counts["withheld"],
                blocked=dict(blocked.get(name, {})),
            )
            for name, counts in sorted(projects.items())
        },
        unreceipted=unreceipted,
        policy_withholds=list(withdrawals(member.registry, policy, live)),
        store_embedder=member.store.embedder.name,
        team_embedder=policy.embedder,
        embedder_mismatch=embedder_mismatch(member.store, policy),
    )
