"""Withdrawing: a publication the policy no longer allows is retracted, once, and stays so."""

import importlib

import pytest

from memmesh.local.store import Store
from memmesh.policy.config import Policy, parse_policy
from memmesh.policy.secrets import Finding
from memmesh.registry import Identity, Registry, plan, publish, reconcile, withdraw, withdrawals
from tests.registry._helpers import COORDINATOR, TEAM, log_length

SCHEDULER = "We chose Postgres advisory locks for the invoice scheduler"


def _policy(
    *,
    kinds: str = "fact, decision, gotcha",
    share: str = "",
    never: str = "",
    coordinator: bool = True,
) -> Policy:
    """Real team.yaml text sharing ``kinds``, plus ``share`` and ``never`` lines (each already
    indented under its key)."""
    lines = ["version: 1", f"team: {TEAM}"]
    if coordinator:
        lines.append(f"coordinator: {COORDINATOR}")
    lines += ["share:", f"  kinds: [{kinds}]", share]
    if never:
        lines += ["never:", never]
    return parse_policy("\n".join(line for line in lines if line) + "\n")


def _retractions(registry: Registry) -> list[tuple[str, int]]:
    return [(e.item_id, e.version) for e in registry.entries() if e.kind == "retraction"]


@pytest.fixture
def published(store: Store, registry: Registry) -> str:
    """A decision in project billing, tagged ``locks``, published (version 1)."""
    item, _ = store.remember(SCHEDULER, kind="decision", project="billing", tags=["locks"])
    publish(registry, _policy(), [item.id])
    return item.id


@pytest.mark.parametrize(
    ("tighter", "rule"),
    [
        (_policy(share="  projects:\n    billing: false"), "share.projects.billing: false"),
        (_policy(kinds="fact"), "share.kinds: decision is not shared"),
        (_policy(never="  tags: [locks]"), "never.tags: locks"),
        (_policy(never="  patterns: ['(?i)advisory']"), "never.patterns[0]"),
        (_policy(share="  min_reinforcements: 2"), "share.min_reinforcements: 0 < 2"),
        (
            _policy(share="  projects:\n    billing: {kinds: [gotcha]}"),
            "share.projects.billing.kinds: decision is not shared",
        ),
    ],
    ids=["project-false", "kind-removed", "tag-denied", "pattern", "floor", "project-kinds"],
)
def test_withdraw_retracts_a_publication_a_tightened_policy_refuses(
    registry: Registry, published: str, tighter: Policy, rule: str
) -> None:
    assert withdraw(registry, _policy()) == []
    assert [d.rule for d in withdrawals(registry, tighter).values()] == [rule]

    withdrawn = withdraw(registry, tighter)

    assert [(entry.item_id, entry.kind, why) for entry, why in withdrawn] == [
        (published, "retraction", rule)
    ]
    assert not withdrawn[0][0].acked  # queued for the next sync
    with registry.store.read() as tx:
        assert published not in registry.live(tx)


def test_withdraw_is_idempotent(registry: Registry, published: str) -> None:
    tighter = _policy(never="  tags: [locks]")
    withdraw(registry, tighter)
    assert withdraw(registry, tighter) == []
    assert withdrawals(registry, tighter) == {}
    assert _retractions(registry) == [(published, 1)]


def test_withdrawals_says_what_withdraw_would_retract_and_appends_nothing(
    store: Store, registry: Registry, published: str
) -> None:
    before = log_length(store)
    held = withdrawals(registry, _policy(never="  tags: [locks]"))
    assert list(held) == [published]
    assert log_length(store) == before


def test_a_loosened_policy_brings_nothing_back(registry: Registry, published: str) -> None:
    withdraw(registry, _policy(never="  tags: [locks]"))
    loose = _policy()
    assert withdraw(registry, loose) == []
    with registry.store.read() as tx:
        assert registry.live(tx) == {}
    # Sharing it again is the user's act, asked for: a new version.
    (unasked,) = plan(registry, loose, [published])
    (again,) = plan(registry, loose, [published], again=True)
    assert (unasked.action, unasked.version) == ("retracted", 2)
    assert (again.action, again.version) == ("publish", 2)


def test_withdraw_leaves_a_forgotten_or_revised_item_to_reconcile(
    store: Store, registry: Registry, published: str
) -> None:
    other, _ = store.remember("Invoices are exported as Parquet files", kind="decision")
    publish(registry, _policy(), [other.id])
    store.forget(published)
    store.revise(other.id, "Invoices are exported as Parquet files, never CSV")
    tighter = _policy(kinds="fact")

    assert withdrawals(registry, tighter) == {}
    assert withdraw(registry, tighter) == []
    reconcile(registry)
    assert sorted(_retractions(registry)) == sorted([(published, 1), (other.id, 1)])


def test_a_forced_publication_stays_past_the_rule_it_overrode_but_not_a_new_one(
    store: Store, registry: Registry
) -> None:
    item, _ = store.remember("I prefer squash merges", kind="preference", tags=["style"])
    publish(registry, _policy(), [item.id], force=True)
    # The overridden rule, with other values: still overridden.
    assert withdraw(registry, _policy(kinds="fact")) == []
    (entry, rule), *rest = withdraw(registry, _policy(never="  tags: [style]"))
    assert (entry.item_id, rule, rest) == (item.id, "never.tags: style", [])


def test_force_never_keeps_a_publication_a_secret_detector_now_flags(
    store: Store, registry: Registry, published: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    forced, _ = store.remember("I prefer rebasing onto main", kind="preference")
    publish(registry, _policy(), [forced.id], force=True)
    # A detector added since publishing fires on both texts.
    found = Finding(detector="newly-detected", start=0, end=3)
    deciding = importlib.import_module("memmesh.policy.decide")
    monkeypatch.setattr(deciding, "find_secrets", lambda text: [found])

    withdrawn = withdraw(registry, _policy())

    assert sorted((e.item_id, why) for e, why in withdrawn) == sorted(
        [(published, "secret detected: newly-detected"),
         (forced.id, "secret detected: newly-detected")]
    )  # fmt: skip


def test_withdraw_without_a_coordinator_retracts_nothing(
    registry: Registry, published: str
) -> None:
    # The kill switch stops anything leaving; it is no verdict on what was shared.
    unset = _policy(coordinator=False)
    assert withdrawals(registry, unset) == {}
    assert withdraw(registry, unset) == []
    assert _retractions(registry) == []


def test_withdraw_leaves_another_key_s_publications_alone(
    store: Store, registry: Registry, published: str, other_identity: Identity
) -> None:
    theirs = Registry(store, other_identity, TEAM)
    assert withdraw(theirs, _policy(never="  tags: [locks]")) == []
    assert _retractions(registry) == []
