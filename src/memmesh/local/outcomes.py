"""How reported outcomes turn into an item's track record.

Each ``worked`` or ``failed`` report counts 1 (``partial`` counts half a success), and every
count halves every 90 days, so old failures fade. The score is

    (worked - 1.5 * failed) / (worked + 1.5 * failed + 2)

between -1 and 1; an item scoring -0.5 or lower is left out of recall until its failures
fade, and among relevant items a better record ranks higher.

Teammates' outcomes on a published item arrive as tallies (:mod:`memmesh.local.tallies`):
raw counts, each at most :data:`MAX_TALLY` per teammate, kept apart from the owner's own
record (:func:`teammates_spoken` says them in words).
"""

from typing import Literal

from memmesh.text import counted

__all__ = [
    "EXCLUDE_AT",
    "HALF_LIFE_SECONDS",
    "MAX_TALLY",
    "Outcome",
    "decay",
    "decayed",
    "rank_factor",
    "score",
    "spoken",
    "teammates_spoken",
]

Outcome = Literal["worked", "failed", "partial"]
HALF_LIFE_SECONDS = 90 * 24 * 3600.0
EXCLUDE_AT = -0.5
FAILURE_WEIGHT = 1.5
PARTIAL_CREDIT = 0.5
# The most one teammate's tally counts of one outcome kind on one item: a member's word on an
# item is bounded, so that a member with a grudge cannot sink it alone.
MAX_TALLY = 20


def decay(count: float, since: float | None, now: float) -> float:
    """``count`` as it stands at ``now`` after halving every 90 days from ``since``."""
    if since is None or count == 0.0:
        return count
    elapsed = max(0.0, now - since)
    return float(count * 0.5 ** (elapsed / HALF_LIFE_SECONDS))


def decayed(
    worked: float, failed: float, partial: float, since: float | None, now: float
) -> tuple[float, float, float]:
    """The three counts, last changed at ``since``, as they stand at ``now``."""
    return (decay(worked, since, now), decay(failed, since, now), decay(partial, since, now))


def score(worked: float, failed: float, partial: float = 0.0) -> float:
    """The track record in [-1, 1] from (already decayed) counts."""
    good = worked + PARTIAL_CREDIT * partial
    bad = FAILURE_WEIGHT * failed
    return (good - bad) / (good + bad + 2.0)


def rank_factor(outcome_score: float, reinforcements: int) -> float:
    """Multiplier on relevance: a good record and repeated confirmation rank a bit higher."""
    reinforcement_bonus = min(reinforcements, 10) * 0.01
    return 1.0 + 0.2 * outcome_score + reinforcement_bonus


def spoken(worked: float, failed: float, partial: float) -> str | None:
    """The track record in words, as an agent reads it: ``has worked 3 times, failed once``;
    ``None`` when nothing was reported (or every report has faded below a half)."""
    said = _said(worked, failed, partial)
    return "has " + said if said else None


def teammates_spoken(worked: float, failed: float, partial: float) -> str | None:
    """Teammates' record in words: ``teammates: worked twice, failed once``; ``None`` when
    no teammate reported anything."""
    said = _said(worked, failed, partial)
    return "teammates: " + said if said else None


def _said(worked: float, failed: float, partial: float) -> str:
    return ", ".join(
        f"{verb} {_times(round(count))}"
        for verb, count in (("worked", worked), ("failed", failed), ("partly worked", partial))
        if round(count) >= 1
    )


def _times(count: int) -> str:
    return {1: "once", 2: "twice"}.get(count) or counted(count, "time")
