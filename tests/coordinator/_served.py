"""A coordinator served by a real server, as the coordinator's tests reach it."""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from memmesh.coordinator import Coordinator
from memmesh.local import Transaction
from memmesh.net.client import Client
from memmesh.registry import Identity, create_identity
from tests._clock import FakeClock
from tests._signed import signed_client
from tests.registry._helpers import TEAM

# The team token of the served coordinator.
TOKEN = "t"


@dataclass
class Served:
    """The coordinator behind a real server at ``url``, and where members keep their keys."""

    coordinator: Coordinator
    url: str
    clock: FakeClock
    root: Path

    def client(self, identity: Identity, *, token: str | None = TOKEN) -> Client:
        """A client whose requests ``identity`` signs (with the token, unless told)."""
        return signed_client(self.url, identity, team=TEAM, token=token)

    def key(self, name: str) -> Identity:
        """A new member key."""
        return create_identity(self.root / name)


@contextmanager
def cache_read(coordinator: Coordinator) -> Iterator[Transaction]:
    """Reads of the coordinator's search cache (its ``items``), brought up to its database."""
    coordinator.store.follow()
    with coordinator.store.cache.read() as tx:
        yield tx
