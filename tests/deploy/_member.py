"""A member on this machine (the venv's `mem`, in a home of its own) who joins a coordinator
with its first admin's join code, publishes a gotcha, and asks the team for it."""

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.cli._output import json_of
from tests.conftest import MemRunner

TEXT = "The staging database is reset every Sunday night"
QUERY = "when is staging reset"


@dataclass(frozen=True)
class Answered:
    """What the member published, and the team's answer to its question."""

    item: str
    answer: dict[str, Any]

    def coordinator_hits(self) -> list[str]:
        """The ids of the hits the coordinator served."""
        return [hit["id"] for hit in self.answer["hits"] if hit["source"] == "coordinator"]


def publish_and_ask(member: MemRunner, join_code: str) -> Answered:
    """The member joins with ``join_code`` (sharing gotchas), publishes one, syncs it, and
    asks the team for it."""
    for args in (("team", "init", "--name", "ada", "--share", "gotcha"), ("team", "join", "-")):
        done = member(*args, stdin=join_code)
        assert done.returncode == 0, done.stderr
    item = json_of(member("remember", TEXT, "--kind", "gotcha", "--json"))["id"]
    for step in (("team", "publish", item), ("team", "sync")):
        done = member(*step)
        assert done.returncode == 0, done.stderr
    return Answered(item=item, answer=json_of(member("team", "recall-team", QUERY, "--json")))


def join_code_from(output: Callable[[], str], *, alive: Callable[[], bool]) -> str:
    """The first admin's join code a starting coordinator prints (``output`` reads what it
    printed so far), once it has printed it; fails when it exits first or takes over 60 s."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for line in output().splitlines():
            if line.startswith("memmesh-join:"):
                return line.strip()
        assert alive(), f"the coordinator exited: {output()}"
        time.sleep(0.1)
    raise AssertionError(f"no join code within 60 s: {output()}")
