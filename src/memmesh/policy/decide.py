"""Deciding, item by item, whether the policy lets it leave the laptop.

Rules are checked in a fixed order and the first that refuses decides. Some refusals can be
overridden with ``--force`` (the user's own eligibility and never rules); a detected secret, the
missing coordinator (the kill switch) and an inactive item never can.
"""

import msgspec

from memmesh.local.items import Item
from memmesh.policy.config import Policy, ProjectRule
from memmesh.policy.secrets import find_secrets

__all__ = ["Decision", "decide", "effective_share", "rule_key"]


class Decision(msgspec.Struct, frozen=True, kw_only=True):
    """The verdict on one item.

    * ``allowed`` - the item may leave (possibly only because of ``force``).
    * ``rule`` - the rule that decided, as a user reads it in ``team.yaml``.
    * ``overridable`` - whether ``--force`` can override a refusal.
    * ``forced`` - allowed only because ``--force`` overrode ``rule``.
    """

    item_id: str
    allowed: bool
    rule: str
    overridable: bool = False
    forced: bool = False


def effective_share(policy: Policy, project: str) -> tuple[tuple[str, ...], int] | None:
    """The kinds and reinforcement floor for ``project``; ``None`` if it is never shared."""
    rule = policy.share.projects.get(project, True)
    if rule is False:
        return None
    kinds: tuple[str, ...] = policy.share.kinds
    floor = policy.share.min_reinforcements
    if isinstance(rule, ProjectRule):
        if rule.kinds is not None:
            kinds = rule.kinds
        if rule.min_reinforcements is not None:
            floor = rule.min_reinforcements
    return kinds, floor


def rule_key(rule: str) -> str:
    """The rule's name without the values it saw: ``share.min_reinforcements: 0 < 3`` ->
    ``share.min_reinforcements``. A forced rule stays overridden when only its values change."""
    return rule.split(":", 1)[0]


def decide(
    item: Item, policy: Policy, *, force: bool = False, forced_rule: str | None = None
) -> Decision:
    """Whether ``item`` may leave under ``policy``.

    ``forced_rule`` is a rule overridden earlier (at publish); re-checking an item later
    (at sync or when serving) lets that same rule pass, but any other refusal withholds it.
    """
    hard = _hard_refusal(item, policy)
    if hard is not None:
        return Decision(item_id=item.id, allowed=False, rule=hard)
    soft, allowed_by = _soft_check(item, policy)
    if soft is None:
        return Decision(item_id=item.id, allowed=True, rule=allowed_by)
    if force or (forced_rule is not None and rule_key(soft) == rule_key(forced_rule)):
        return Decision(item_id=item.id, allowed=True, rule=soft, overridable=True, forced=True)
    return Decision(item_id=item.id, allowed=False, rule=soft, overridable=True)


def _hard_refusal(item: Item, policy: Policy) -> str | None:
    """Refusals that nothing overrides."""
    if item.status != "active":
        return f"item is {item.status}"
    findings = find_secrets(item.text + "\n" + " ".join(item.tags))
    if findings:
        return f"secret detected: {findings[0].detector}"
    if policy.coordinator is None:
        return "coordinator: not set (nothing leaves this laptop)"
    return None


def _soft_check(item: Item, policy: Policy) -> tuple[str | None, str]:
    """The first user rule that refuses the item, or ``None`` and the rule that allows it."""
    share = effective_share(policy, item.project)
    if share is None:
        return f"share.projects.{item.project}: false", ""
    for tag in item.tags:
        if tag in policy.never.tags:
            return f"never.tags: {tag}", ""
    for index, pattern in enumerate(policy.patterns()):
        if pattern.search(item.text):
            return f"never.patterns[{index}]", ""
    kinds, floor = share
    rule = policy.share.projects.get(item.project)
    own = rule if isinstance(rule, ProjectRule) else None
    project_key = f"share.projects.{item.project}"
    kinds_key = project_key if own is not None and own.kinds is not None else "share"
    floor_key = project_key if own is not None and own.min_reinforcements is not None else "share"
    if item.kind not in kinds:
        return f"{kinds_key}.kinds: {item.kind} is not shared", ""
    if item.reinforcements < floor:
        return f"{floor_key}.min_reinforcements: {item.reinforcements} < {floor}", ""
    return None, f"{kinds_key}.kinds: {item.kind}"
