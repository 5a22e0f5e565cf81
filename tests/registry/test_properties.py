"""Properties of the registry: the fold matches a model of the rules, and any tamper is caught."""

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memmesh.local.errors import NotActive
from memmesh.local.store import Store
from memmesh.policy.errors import PublishRefused
from memmesh.registry import (
    NotPublished,
    Registry,
    RetractedBefore,
    create_identity,
    publish,
    reconcile,
    retract,
)
from tests.registry._helpers import (
    SHARED_KINDS,
    TEAM,
    flip_bit,
    log_length,
    make_policy,
    read_row,
    swap_entries,
    tamper,
)

SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
POLICY = make_policy()
# Weighted towards publish and retract, so that items go round publish-retract-publish often.
OPERATIONS = (
    *("publish",) * 4,
    *("retract",) * 3,
    "remember",
    "revise",
    "forget",
    "reconcile",
)
KINDS = ("fact", "gotcha", "preference")  # preference is not shared by POLICY
FORCED_RULE = "share.kinds: preference is not shared"
LOG_LENGTH = 5


@contextmanager
def fresh_registry() -> Iterator[Registry]:
    """A registry over a new store in a folder of its own, removed afterwards."""
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        with Store(home, author="tester") as store:
            yield Registry(store, create_identity(home), TEAM)


def live_versions(registry: Registry) -> dict[str, int]:
    with registry.store.read() as conn:
        return {item_id: live.publication.version for item_id, live in registry.live(conn).items()}


class Model:
    """The registry's rules in plain Python: what should be live, at which version."""

    def __init__(self) -> None:
        self.known: list[str] = []
        self.active: set[str] = set()
        self.shareable: dict[str, bool] = {}
        self.live: set[str] = set()
        self.versions: dict[str, int] = {}

    def add(self, item_id: str, shareable: bool) -> None:
        self.known.append(item_id)
        self.active.add(item_id)
        self.shareable[item_id] = shareable

    def publishable(self, item_id: str) -> bool:
        return item_id in self.active and self.shareable[item_id]

    def publish(self, item_id: str) -> None:
        if item_id not in self.live:
            self.versions[item_id] = self.versions.get(item_id, 0) + 1
            self.live.add(item_id)

    def retracted(self, item_id: str) -> bool:
        return item_id not in self.live and self.versions.get(item_id, 0) > 0

    def reconcile(self) -> None:
        self.live &= self.active

    def expected(self) -> dict[str, int]:
        return {item_id: self.versions[item_id] for item_id in self.live}


class Driver:
    """Applies one operation to the real API and to the model, checking each refusal."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.store = registry.store
        self.model = Model()
        self.counter = 0

    def text(self, stem: str) -> str:
        self.counter += 1
        return f"{stem} number {self.counter} about the build"

    def remember(self, choice: int) -> None:
        kind = KINDS[choice % len(KINDS)]
        item, status = self.store.remember(self.text("note"), kind=kind)
        assert status == "created"
        self.model.add(item.id, kind in SHARED_KINDS)

    def apply(self, operation: str, choice: int) -> None:
        model = self.model
        if operation == "remember":
            self.remember(choice)
            return
        if operation == "reconcile":
            reconcile(self.registry)
            model.reconcile()
            return
        item_id = model.known[choice % len(model.known)]
        if operation == "publish":
            if model.publishable(item_id) and model.retracted(item_id):
                # Publishing a retracted item again must be asked for.
                with pytest.raises(RetractedBefore):
                    publish(self.registry, POLICY, [item_id])
                publish(self.registry, POLICY, [item_id], again=True)
                model.publish(item_id)
            elif model.publishable(item_id):
                publish(self.registry, POLICY, [item_id])
                model.publish(item_id)
            else:
                with pytest.raises(PublishRefused):
                    publish(self.registry, POLICY, [item_id])
        elif operation == "retract":
            if item_id in model.live:
                retract(self.registry, [item_id])
                model.live.discard(item_id)
            else:
                with pytest.raises(NotPublished):
                    retract(self.registry, [item_id])
        elif operation == "forget":
            if item_id in model.active:
                self.store.forget(item_id)
                model.active.discard(item_id)
            else:
                with pytest.raises(NotActive):
                    self.store.forget(item_id)
        elif operation == "revise":
            if item_id in model.active:
                _, new = self.store.revise(item_id, self.text("revised note"))
                model.active.discard(item_id)
                model.add(new.id, model.shareable[item_id])
            else:
                with pytest.raises(NotActive):
                    self.store.revise(item_id, self.text("revised note"))


@SETTINGS
@given(
    seeds=st.lists(st.integers(0, 2), min_size=1, max_size=3),
    operations=st.lists(
        # Small choices keep landing on the same few items.
        st.tuples(st.sampled_from(OPERATIONS), st.integers(0, 7)),
        min_size=1,
        max_size=30,
    ),
)
def test_the_fold_matches_a_model_of_the_rules(
    seeds: list[int], operations: list[tuple[str, int]]
) -> None:
    with fresh_registry() as registry:
        driver = Driver(registry)
        for seed in seeds:
            driver.remember(seed)
        for operation, choice in operations:
            driver.apply(operation, choice)
        reconcile(registry)
        driver.model.reconcile()
        assert live_versions(registry) == driver.model.expected()
        assert registry.verify() == []
        # Every live item is active locally: nothing forgotten or revised is still served.
        assert set(live_versions(registry)) <= driver.model.active


@dataclass(frozen=True)
class Tamper:
    """One change to a log written behind the registry's back."""

    kind: str
    seq: int
    other: int
    index: int
    bit: int
    rule: str | None
    delta: float


TAMPERS = st.builds(
    Tamper,
    kind=st.sampled_from(
        ["payload", "signature", "forced_rule", "recorded_at", "prev_hash", "remove", "swap"]
    ),
    seq=st.integers(1, LOG_LENGTH),
    other=st.integers(1, LOG_LENGTH),
    index=st.integers(0, 20_000),
    bit=st.integers(0, 7),
    rule=st.sampled_from([None, "", "never.tags: private", FORCED_RULE]),
    delta=st.floats(min_value=0.001, max_value=1e6) | st.floats(min_value=-1e6, max_value=-0.001),
)


def write_sample_log(registry: Registry) -> None:
    """Five entries: three publications, a retraction, a forced publication."""
    store = registry.store
    ids = [store.remember(f"sample fact {n} about the deploy")[0].id for n in range(3)]
    forced, _ = store.remember("I prefer tabs over spaces", kind="preference")
    publish(registry, POLICY, ids)
    retract(registry, [ids[1]])
    publish(registry, POLICY, [forced.id], force=True)
    assert log_length(store) == LOG_LENGTH
    assert registry.verify() == []


def apply_tamper(store: Store, change: Tamper) -> None:
    with store.read() as conn:
        row = read_row(conn, change.seq)
    if change.kind in ("payload", "signature"):
        value = flip_bit(row[change.kind], change.index, change.bit)
        tamper(store, change.seq, **{change.kind: value})
    elif change.kind == "forced_rule":
        rule = change.rule
        if rule == row["forced_rule"]:
            rule = "share.kinds: fact is not shared"
        tamper(store, change.seq, forced_rule=rule)
    elif change.kind == "recorded_at":
        moved = row["recorded_at"] + change.delta
        assert moved != row["recorded_at"]
        tamper(store, change.seq, recorded_at=moved)
    elif change.kind == "prev_hash":
        tamper(
            store, change.seq, prev_hash=flip_bit(row["prev_hash"].encode(), change.index).decode()
        )
    elif change.kind == "remove":
        with store.transaction() as conn:
            conn.execute("DELETE FROM registry WHERE seq = ?", (change.seq,))
    else:
        other = change.other if change.other != change.seq else change.seq % LOG_LENGTH + 1
        swap_entries(store, change.seq, other)


@SETTINGS
@given(change=TAMPERS)
def test_any_single_tamper_is_reported_by_verify(change: Tamper) -> None:
    with fresh_registry() as registry:
        write_sample_log(registry)
        apply_tamper(registry.store, change)
        assert registry.verify() != []
