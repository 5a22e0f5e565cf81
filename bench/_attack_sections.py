"""The attack sections ``bench/fuzz.py`` runs after its socket attacks, each with its verdict.

Each section is one bench module's ``run_*`` (see that module's docstring for what it does and
how it is bounded), printed as a table under its own heading, then judged:

* ``presence`` (:mod:`_attack_presence`): recall-team under 3,000 hinted addresses and 3,000
  listed presences; fails when the coordinator's hit did not come back in every case.
* ``memory`` (:mod:`_attack_memory`): publications of random words against a real coordinator
  process; fails when an authorised search stopped answering.
* ``yaml`` (:mod:`_attack_yaml`): hostile team.yaml files; fails when ``mem list`` did not
  exit 0 or ``mem team policy check`` did not refuse the file with exit 3.
* ``disk`` (:mod:`_attack_disk`): bytes of retracted text found in the coordinator's files;
  fails when any were found (goal 0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from _common import log, table


@dataclass(frozen=True)
class Section:
    title: str
    run: Callable[[], tuple[list[str], list[list[object]]]]
    # Whether the rows show the attack was held off.
    held: Callable[[list[str], list[list[object]]], bool]


def _column(header: list[str], rows: list[list[object]], name: str) -> list[object]:
    index = header.index(name)
    return [row[index] for row in rows]


def _presence() -> tuple[list[str], list[list[object]]]:
    import _attack_presence

    return _attack_presence.HEADER, _attack_presence.run_presence(entries=3000, runs=3)


def _memory() -> tuple[list[str], list[list[object]]]:
    import _attack_memory

    return _attack_memory.HEADER, _attack_memory.run_memory()


def _yaml() -> tuple[list[str], list[list[object]]]:
    import _attack_yaml

    return _attack_yaml.HEADER, _attack_yaml.run_yaml(limit=30.0)


def _disk() -> tuple[list[str], list[list[object]]]:
    import _attack_disk

    return _attack_disk.HEADER, _attack_disk.run_disk(items=2000, retracted=20)


SECTIONS: dict[str, Section] = {
    "presence": Section(
        "recall-team under hint and presence floods",
        _presence,
        lambda header, rows: all(hit == "yes" for hit in _column(header, rows, "coordinator hit")),
    ),
    "memory": Section(
        "a coordinator's resident memory under random-vocabulary publications",
        _memory,
        lambda header, rows: all(status == 200 for status in _column(header, rows, "search")),
    ),
    "yaml": Section(
        "hostile team.yaml files against the real command",
        _yaml,
        lambda header, rows: all(
            listed == 0 and checked == 3
            for listed, checked in zip(
                _column(header, rows, "list exit"), _column(header, rows, "check exit"), strict=True
            )
        ),
    ),
    "disk": Section(
        "bytes of retracted text found on the coordinator's disk (goal 0)",
        _disk,
        lambda header, rows: all(
            found == 0 for found in _column(header, rows, "retracted bytes found")
        ),
    ),
}


def run_sections(names: Sequence[str]) -> bool:
    """Run and print each named section; whether every one held."""
    held = True
    for name in names:
        section = SECTIONS[name]
        log(f"attack section: {name}")
        header, rows = section.run()
        ok = section.held(header, rows)
        print(f"\n== attack: {section.title}: {'held' if ok else 'NOT HELD'}")
        print(table(header, rows))
        held = held and ok
    return held
