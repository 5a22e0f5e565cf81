"""Where the member's items stand with the team, project by project: what `mem team status`
counts, and for one project each item with the rule that decides it, as `mem team publish
--dry-run` decides it.

An item is ``published`` (a live publication the policy still allows), ``withheld`` (live,
but the policy, or a change to the item, now holds it back: the next sync retracts it),
``eligible`` (private, and the policy would let it go) or ``private`` (the policy refuses it,
or it was published and retracted before, which only a publish with ``--again`` shares anew).

Counting every item of a large store takes a while, so the page keeps what it counted for its
store (:func:`current`) and answers from it while nothing it depends on has changed: the
store's revision (every write to an item), the registry's head (every publication and
retraction), team.yaml as it reads now, the member's key and the store's embedder. After a
change only what changed is counted again (:class:`~memmesh.team.status.Tally`); what awaits
sync and the receipts still owed are read afresh on every visit.

The member's published items a teammate's item contradicts (as `mem team status` lists them,
:mod:`memmesh.team.contradicted`) are found again only when the registry's head or the team
cache changed.
"""

import threading
import weakref
from pathlib import Path
from typing import Literal

import msgspec

from memmesh.local import teamcache
from memmesh.local.items import check_name
from memmesh.local.store import Store
from memmesh.policy import Policy, load_policy
from memmesh.registry import Registry, load_identity, withheld
from memmesh.team.contradicted import Contradicted, contradicted
from memmesh.team.member import Member, try_policy, withholding
from memmesh.team.status import Tally, TeamStatus, team_status

__all__ = ["SHOWN", "ItemRow", "Overview", "current"]

# The most items of one project the page lists (newest first).
SHOWN = 300
# The most projects whose items are kept between visits.
_KEPT_PROJECTS = 32

State = Literal["published", "withheld", "eligible", "private"]


class ItemRow(msgspec.Struct, frozen=True, kw_only=True):
    """One item of a project: where it stands, the rule that decides it (``forced``: allowed
    only because a publish with ``--force`` overrode it), and what else to know (``note``)."""

    id: str
    shown_id: str
    text: str
    kind: str
    state: State
    rule: str
    version: int
    forced: bool = False
    note: str = ""


class Overview(msgspec.Struct, frozen=True, kw_only=True):
    """The member's standing (``status``), what it means in one line each (``hints``), their
    published items a teammate's contradicts (``contradicted``), and the items of ``project``
    when one is asked for (``more``: it holds more than are shown)."""

    status: TeamStatus
    hints: list[str]
    contradicted: list[Contradicted] = msgspec.field(default_factory=list)
    project: str = ""
    rows: list[ItemRow] = msgspec.field(default_factory=list)
    more: bool = False


class _Kept:
    """What the page counted for one store, and under what (``basis``: team.yaml, the key,
    the embedder; the tally keeps the revision and head it read)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tally = Tally()
        self.basis: tuple[Policy | None, str, str] | None = None
        self.status: TeamStatus | None = None
        self.rows: dict[str, tuple[list[ItemRow], bool]] = {}
        # The registry's head and the team cache's state they were found under.
        self.contradicted: tuple[object, list[Contradicted]] | None = None


_KEPT: "weakref.WeakKeyDictionary[Store, _Kept]" = weakref.WeakKeyDictionary()
_KEPT_LOCK = threading.Lock()


def current(store: Store, home: Path, changing: threading.Lock, project: str = "") -> Overview:
    """The standing of the member of ``home`` working on ``store`` (and ``project``'s items
    when one is asked for), counted afresh only where something changed since the last count.

    A count that finds a change retracts what was forgotten or revised first, as `mem team
    status` does, holding ``changing``. Raises :class:`~memmesh.local.errors.InvalidInput`
    for a project name no item can have, :class:`~memmesh.registry.errors.IdentityMissing`
    without a key, and what `mem team status` raises for a policy it cannot use.
    """
    if project:
        check_name(project, "project")
    with _KEPT_LOCK:
        kept = _KEPT.setdefault(store, _Kept())
    with kept.lock:
        identity = load_identity(home)
        policy = try_policy(home)
        basis = (policy, identity.public_key_text, store.embedder.fingerprint)
        # For the log's head and what awaits the coordinator, which need no policy.
        registry = Registry(store, identity, policy.team if policy else "default")
        member = None
        seen = (store.revision(), registry.head())
        if kept.status is None or kept.basis != basis or kept.tally.seen != seen:
            with changing:  # as `mem team status`, what was forgotten is retracted first
                member = Member(store, identity, policy)
            counted = team_status(member, kept.tally)
            kept.basis, kept.status, kept.rows = basis, counted, {}
        status = msgspec.structs.replace(
            kept.status,
            awaiting_sync=registry.unacked_count(),
            unreceipted=[entry.item_id for entry in registry.unreceipted()],
        )
        hints = [hint for hint in (withholding(len(status.policy_withholds)),) if hint]
        if status.embedder_mismatch:
            hints.append(status.embedder_mismatch)
        said = _contradicted(kept, registry, home)
        if not project:
            return Overview(status=status, hints=hints, contradicted=said)
        if project not in kept.rows:
            # Nothing changed since the count (else it was counted again above): nothing to
            # retract first.
            member = member or Member(store, identity, policy, reconcile_first=False)
            items = store.items(project=project, status="active", limit=SHOWN + 1)
            rows = _rows(member, [item.id for item in items[:SHOWN]])
            if len(kept.rows) >= _KEPT_PROJECTS:
                kept.rows.clear()
            kept.rows[project] = (rows, len(items) > SHOWN)
        rows, more = kept.rows[project]
        return Overview(
            status=status, hints=hints, contradicted=said, project=project, rows=rows, more=more
        )


def _contradicted(kept: _Kept, registry: Registry, home: Path) -> list[Contradicted]:
    """The member's published items a teammate's cached item contradicts, found again only
    when the registry's head or the team cache changed."""
    cache = teamcache.state(home)
    basis = (
        registry.head(),
        cache.refreshed_at,
        cache.items,
        cache.retracted,
        teamcache.withheld(cache),
    )
    if kept.contradicted is None or kept.contradicted[0] != basis:
        own_key = registry.identity.key_id
        found = contradicted(home, registry.live(), own_key=own_key)
        kept.contradicted = (basis, found)
    return kept.contradicted[1]


def _rows(member: Member, item_ids: list[str]) -> list[ItemRow]:
    """Each item's standing: the dry run of publishing it, and whether it is live or held."""
    if not item_ids:
        return []
    policy = member.policy or load_policy(member.store.home)
    planned, _ = member.publish(item_ids, dry_run=True)
    live = member.registry.live()
    held = withheld(member.registry, policy, live)
    shown = member.store.short_ids(item_ids)
    rows = []
    for plan in planned:
        item, rule = plan.item, plan.decision.rule
        state: State = "eligible" if plan.action == "publish" else "private"
        version, forced, note = plan.version, plan.decision.forced, ""
        current = live.get(item.id)
        if current is not None:
            version = current.publication.version
            forced = current.forced_rule is not None
            state = "published"
            if item.id in held:
                state, rule = "withheld", held[item.id].rule
                note = "the next sync retracts it (mem team sync)"
        elif plan.action == "retracted":
            note = f"retracted before: a publish with --again shares it anew, as v{version}"
        rows.append(
            ItemRow(
                id=item.id,
                shown_id=shown.get(item.id, item.id),
                text=item.text,
                kind=item.kind,
                state=state,
                rule=rule,
                version=version,
                forced=forced,
                note=note,
            )
        )
    return rows
