"""A spec of each scheduled service, so that each test of a schedule runs for every one."""

from collections.abc import Callable
from pathlib import Path

from memmesh.service.units import (
    SCHEDULED,
    Kind,
    Schedule,
    ServiceSpec,
    backup_spec,
    consolidate_spec,
)

Build = Callable[[Path, tuple[str, ...], Schedule], ServiceSpec]

# Consolidation with --apply: the longer of its two command lines.
BUILDERS: dict[Kind, Build] = {
    "backup": lambda home, mem, every: backup_spec(home, mem, keep=4, every=every),
    "consolidate": lambda home, mem, every: consolidate_spec(home, mem, every=every, apply=True),
}
assert tuple(BUILDERS) == SCHEDULED, "a scheduled kind has no spec to test"


def scheduled_specs(home: Path, mem: tuple[str, ...], every: Schedule) -> list[ServiceSpec]:
    """Each scheduled service of ``home``, run by ``mem`` once ``every`` hour, day or week."""
    return [build(home, mem, every) for build in BUILDERS.values()]
