"""What a team policy allows, said in one line (`mem team policy check` prints it)."""

from collections.abc import Sequence

from memmesh.policy.config import Policy, ProjectRule

__all__ = ["policy_summary"]


def policy_summary(policy: Policy) -> str:
    """One line on what ``policy`` lets leave this laptop: kinds, reinforcement floor,
    projects, never rules and auto_sync; or why it shares nothing. The secret detectors,
    always on, go unsaid."""
    share = policy.share
    rules = {name: rule for name, rule in share.projects.items() if isinstance(rule, ProjectRule)}
    if not share.kinds and not any(rule.kinds for rule in rules.values()):
        if policy.coordinator is None:
            return (
                "shares nothing: no coordinator (nothing leaves this laptop) "
                "and share.kinds lists no kinds"
            )
        return "shares nothing: share.kinds lists no kinds"
    parts = [_scope(share.kinds, share.min_reinforcements, team_wide=True)]
    excluded = sorted(name for name, rule in share.projects.items() if rule is False)
    if excluded and share.kinds:
        parts[0] += ", from every project but " + ", ".join(excluded)
    for name in sorted(rules):
        rule = rules[name]
        if rule.kinds is None and rule.min_reinforcements is None:
            continue
        kinds = share.kinds if rule.kinds is None else rule.kinds
        floor = rule.min_reinforcements
        floor = share.min_reinforcements if floor is None else floor
        parts.append(f"project {name}: " + _scope(kinds, floor, team_wide=False))
    parts.append("never: " + _never(policy))
    parts.append(f"auto_sync {'on' if policy.auto_sync else 'off'}")
    line = "; ".join(parts)
    if policy.coordinator is None:
        return "shares nothing while no coordinator is set (nothing leaves this laptop); then: " + (
            line.removeprefix("shares ")
        )
    return line


def _scope(kinds: Sequence[str], floor: int, *, team_wide: bool) -> str:
    """``kinds decision, gotcha reinforced at least 2 times`` (``shares`` first team-wide)."""
    said = "kinds " + ", ".join(kinds) if kinds else "no kinds"
    if not kinds and team_wide:
        said += " team-wide"
    if kinds and floor > 0:
        said += f" reinforced at least {floor} time{'s' if floor != 1 else ''}"
    return f"shares {said}" if team_wide else said


def _never(policy: Policy) -> str:
    """``tags private, secret and 1 pattern``: what the user's never rules hold back."""
    tags = "tags " + ", ".join(policy.never.tags) if policy.never.tags else "no tags"
    count = len(policy.never.patterns)
    patterns = f"{count} pattern{'s' if count != 1 else ''}" if count else "no patterns"
    if count or not policy.never.tags:
        return f"{tags} and {patterns}"
    return tags
