"""One store file written by several members, as consolidation meets it (the tests of merges,
plans and their actions)."""

from pathlib import Path

from memmesh.local.store import Store
from tests._clock import FakeClock


class Members:
    """One store file written by several members (each a store opened under their name)."""

    def __init__(self, home: Path, clock: FakeClock) -> None:
        self.home, self.clock = home, clock
        self.stores: dict[str, Store] = {}

    def __getitem__(self, name: str) -> Store:
        if name not in self.stores:
            self.stores[name] = Store(self.home, author=name, clock=self.clock)
        return self.stores[name]

    def close(self) -> None:
        for opened in self.stores.values():
            opened.close()
