"""Where the member's items stand with the team, project by project: what `mem team status`
counts, and for one project each item with the rule that decides it, as `mem team publish
--dry-run` decides it.

An item is ``published`` (a live publication the policy still allows), ``withheld`` (live,
but the policy, or a change to the item, now holds it back: the next sync retracts it),
``eligible`` (private, and the policy would let it go) or ``private`` (the policy refuses it,
or it was published and retracted before, which only a publish with ``--again`` shares anew).
"""

from typing import Literal

import msgspec

from memmesh.local.items import check_name
from memmesh.policy import load_policy
from memmesh.registry import withheld
from memmesh.team.member import Member, withholding
from memmesh.team.status import TeamStatus, team_status

__all__ = ["SHOWN", "ItemRow", "Overview", "overview"]

# The most items of one project the page lists (newest first).
SHOWN = 300

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
    """The member's standing (``status``), what it means in one line each (``hints``), and
    the items of ``project`` when one is asked for (``more``: it holds more than are shown)."""

    status: TeamStatus
    hints: list[str]
    project: str = ""
    rows: list[ItemRow] = msgspec.field(default_factory=list)
    more: bool = False


def overview(member: Member, project: str = "") -> Overview:
    """The member's status, and ``project``'s items (none when ``project`` is empty).

    Raises :class:`~memmesh.local.errors.InvalidInput` for a project name no item can have,
    and what `mem team status` raises for a policy it cannot use."""
    if project:
        check_name(project, "project")
    status = team_status(member)
    hints = [hint for hint in (withholding(len(status.policy_withholds)),) if hint]
    if status.embedder_mismatch:
        hints.append(status.embedder_mismatch)
    if not project:
        return Overview(status=status, hints=hints)
    items = member.store.items(project=project, status="active", limit=SHOWN + 1)
    rows = _rows(member, [item.id for item in items[:SHOWN]])
    return Overview(status=status, hints=hints, project=project, rows=rows, more=len(items) > SHOWN)


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
