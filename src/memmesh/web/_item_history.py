"""An item's history as its page shows it: the versions a revision chain links, one timeline
of what the journal logged (:mod:`memmesh.local.history`) and what the registry log recorded
(publications and retractions), and where the item stands with the team.

Everything here reads; nothing is changed and nothing is sent. Who was served the item is
asked of the coordinator by :mod:`._item` itself, with a deadline of its own.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memmesh.errors import MemmeshError
from memmesh.local.history import Event, events_of
from memmesh.local.items import Item
from memmesh.local.store import Store
from memmesh.policy import Policy, load_policy
from memmesh.registry import Entry, Identity, Registry, load_identity, withdrawals
from memmesh.registry.log import Live, fold

__all__ = ["MOST_VERSIONS", "Moment", "Standing", "Team", "chain_of", "standing", "team_of"]

MOST_VERSIONS = 50  # the most versions of one item the page follows either way


@dataclass(frozen=True)
class Team:
    """The member's team as this home has it: the policy and key when they load, and the
    message of the command that would refuse (``mem team publish``, ``mem team retract``)
    when they do not."""

    policy: Policy | None
    identity: Identity | None
    cannot_publish: str | None
    cannot_retract: str | None


@dataclass(frozen=True)
class Moment:
    """One line of the timeline: when, what (``label``), about which version of the item
    (``item_id``), in which tone (``ok``, ``warn``, ``bad`` or ``""``), with what else."""

    at: float
    label: str
    item_id: str
    tone: str = ""
    detail: str = ""
    link: str = ""


@dataclass(frozen=True)
class Standing:
    """What the page shows of an item beside its fields: its versions, oldest first, the
    timeline, newest first, and its publication (``live``: the version teammates are
    served, ``withheld``: the rule by which the next sync takes it back, the policy no
    longer allowing it)."""

    versions: list[Item]
    timeline: list[Moment]
    published_ever: bool
    live: int | None
    live_since: float | None
    withheld: str | None
    entries: list[Entry] = field(default_factory=list)
    # Whom the live publication is for, by name (``None``: the whole team), and who may read
    # it now by the roster this member verified last (``None``: every member, unlisted).
    audience: tuple[str, ...] | None = None
    readers: list[str] | None = None


def team_of(home: Path) -> Team:
    """The team of ``home``: what publishing and retracting would meet, as the commands meet
    it (the policy is read first for a publish, the key alone for a retraction)."""
    policy: Policy | None = None
    identity: Identity | None = None
    cannot_publish = cannot_retract = None
    try:
        policy = load_policy(home)
    except MemmeshError as exc:
        cannot_publish = str(exc)
    try:
        identity = load_identity(home)
    except MemmeshError as exc:
        cannot_retract = str(exc)
        cannot_publish = cannot_publish or str(exc)
    return Team(policy, identity, cannot_publish, cannot_retract)


def chain_of(store: Store, item: Item) -> list[Item]:
    """Every version of ``item`` its revision chain links, oldest first."""
    seen = {item.id}
    older = _walk(store, item, "supersedes", seen)
    newer = _walk(store, item, "superseded_by", seen)
    return [*reversed(older), item, *newer]


def _walk(store: Store, item: Item, link: str, seen: set[str]) -> list[Item]:
    """The versions ``item``'s ``link`` (``supersedes`` or ``superseded_by``) leads to, one
    after another, at most :data:`MOST_VERSIONS`, none of ``seen`` (which it adds to)."""
    found: list[Item] = []
    step: Item | None = item
    while step is not None and len(found) < MOST_VERSIONS:
        next_id = getattr(step, link)
        if next_id is None or next_id in seen:
            break
        step = store.items_by_id([next_id]).get(next_id)
        if step is not None:
            found.append(step)
            seen.add(step.id)
    return found


def standing(store: Store, item: Item, team: Team) -> Standing:
    """The item's versions, timeline and publication, read from the store and the log."""
    versions = chain_of(store, item)
    ids = [version.id for version in versions]
    moments = [_moment(event) for event in events_of(store, ids)]
    entries: list[Entry] = []
    live = live_since = held = None
    audience: tuple[str, ...] | None = None
    readers: list[str] | None = None
    if team.identity is not None:
        team_name = team.policy.team if team.policy else "default"
        registry = Registry(store, team.identity, team_name)
        # The log of these versions alone: folded, it gives the item's publication as the
        # whole log does, at the cost of one item rather than of every one ever published.
        entries = registry.entries_for(ids)
        moments += [_logged(entry) for entry in entries]
        current = fold(entry for entry in entries if entry.item_id == item.id).get(item.id)
        if current is not None:
            live, live_since = current.publication.version, current.publication.published_at
            if team.policy is not None:
                audience, readers = _reach(store, team.policy, team.identity, current)
                held_now = withdrawals(registry, team.policy, {item.id: current})
                decision = held_now.get(item.id)
                held = decision.rule if decision is not None else None
    moments.sort(key=lambda moment: moment.at, reverse=True)
    published = any(entry.item_id == item.id for entry in entries)
    return Standing(
        versions=versions,
        timeline=moments,
        published_ever=published,
        live=live,
        live_since=live_since,
        withheld=held,
        entries=entries,
        audience=audience,
        readers=readers,
    )


def _reach(
    store: Store, policy: Policy, identity: Identity, current: Live
) -> tuple[tuple[str, ...] | None, list[str] | None]:
    """Whom ``current`` is for, and who may read it, by the roster kept in the home (the page
    never waits on the network for it)."""
    from memmesh.peer.chain import kept_access
    from memmesh.registry.access import Access
    from memmesh.team.audience import readers
    from memmesh.team.groups import names_of

    access = kept_access(store.home, policy) or Access(None)
    publication = current.publication
    reach = readers(access, identity.key_id, publication.project, publication.audience)
    return names_of(access, publication.audience), reach


_OUTCOME_TONES = {"worked": "ok", "partial": "warn", "failed": "bad"}
_LABELS = {
    "remember": "remembered",
    "reinforce": "reinforced: remembered again",
    "import_reinforce": "reinforced by an import",
    "forget": "forgotten (archived)",
    "unforget": "brought back",
    "purge": "erased: its text and tags are gone",
    "put": "copied in",
}


def _moment(event: Event) -> Moment:
    """A line of the timeline for what the journal logged."""
    data: dict[str, Any] = event.data
    if event.kind == "outcome":
        result = str(data.get("result", ""))
        score = data.get("score")
        detail = f"track record {score:+.2f}" if isinstance(score, int | float) else ""
        tone = _OUTCOME_TONES.get(result, "")
        return Moment(event.at, f"outcome: {result}", event.item_id, tone, detail)
    if event.kind == "edit":
        changed = data.get("changed")
        fields = ", ".join(map(str, changed)) if isinstance(changed, list) else ""
        return Moment(event.at, "edited", event.item_id, detail=fields)
    if event.kind == "revise":
        new_id = str(data.get("new_id", ""))
        return Moment(event.at, "revised: a new version replaces it", event.item_id, link=new_id)
    if event.kind == "remember":
        where = f"{data.get('kind', '')} in {data.get('project', '')}".strip()
        return Moment(event.at, "remembered", event.item_id, detail=where if data else "")
    label = _LABELS.get(event.kind, event.kind)
    return Moment(event.at, label, event.item_id, "bad" if event.kind == "purge" else "")


def _logged(entry: Entry) -> Moment:
    """A line of the timeline for a publication or retraction in the registry log."""
    sent = "acknowledged by the coordinator" if entry.acked else "awaiting `mem team sync`"
    if entry.kind == "publication":
        forced = f"; forced over {entry.forced_rule}" if entry.forced_rule else ""
        label = f"published v{entry.version}"
        return Moment(entry.recorded_at, label, entry.item_id, "ok", sent + forced)
    return Moment(entry.recorded_at, f"retracted v{entry.version}", entry.item_id, "warn", sent)
