"""Deciding item by item, fail-closed: what --force can override, and what it never can."""

from typing import Any

import pytest
import yaml

from memmesh.local.items import KINDS, Item
from memmesh.local.store import Store
from memmesh.policy import Policy, decide, parse_policy

COORDINATOR = "http://team-host:8400"
NO_COORDINATOR = "coordinator: not set (nothing leaves this laptop)"
GITHUB_TOKEN = "ghp_R8kq2ZvX4mN7pL1sT9wY3bC6dF0gH5jK8aQe"


def _policy(**overrides: Any) -> Policy:
    """A parsed policy: a coordinator, all kinds shared, plus ``overrides`` (None drops a key)."""
    data: dict[str, Any] = {
        "version": 1,
        "team": "acme",
        "coordinator": COORDINATOR,
        "share": {"kinds": list(KINDS)},
    }
    data.update(overrides)
    return parse_policy(yaml.safe_dump({k: v for k, v in data.items() if v is not None}))


def _item(
    store: Store,
    text: str,
    *,
    kind: str = "decision",
    project: str = "shop",
    tags: tuple[str, ...] = (),
) -> Item:
    item, status = store.remember(text, kind=kind, project=project, tags=tags)
    assert status == "created"
    return item


# -- what nothing overrides ------------------------------------------------------------------


def test_allowed_item_names_the_rule_that_allows_it(store: Store) -> None:
    item = _item(store, "We chose Postgres advisory locks")
    decision = decide(item, _policy())
    assert decision.item_id == item.id
    assert (decision.allowed, decision.forced, decision.rule) == (
        True,
        False,
        "share.kinds: decision",
    )


def test_without_a_coordinator_every_item_is_refused_even_with_force(store: Store) -> None:
    policy = _policy(coordinator=None)
    assert policy.coordinator is None
    for kind in KINDS:
        item = _item(store, f"Something worth sharing about {kind}s", kind=kind)
        for force in (False, True):
            decision = decide(item, policy, force=force)
            assert (decision.allowed, decision.overridable, decision.forced) == (
                False,
                False,
                False,
            )
            assert decision.rule == NO_COORDINATOR
        # Not even a rule recorded as forced earlier lets it through.
        assert not decide(item, policy, forced_rule=NO_COORDINATOR).allowed


@pytest.mark.parametrize(
    ("text", "detector", "secret"),
    [
        (f"The release bot uses {GITHUB_TOKEN} for tags", "github-token", GITHUB_TOKEN),
        (
            "The staging bucket is read with AKIAZ7Q2W4E6R8T0Y1U3 from CI",
            "aws-access-key-id",
            "AKIAZ7Q2W4E6R8T0Y1U3",
        ),
        (
            "Connect with postgres://app:q7Vt9xLm2Rk@db.internal/app",
            "password-in-url",
            "q7Vt9xLm2Rk",
        ),
    ],
)
def test_detected_secret_is_refused_even_with_force_and_only_the_detector_is_named(
    store: Store, text: str, detector: str, secret: str
) -> None:
    item = _item(store, text)
    # The user's own rules would allow it; the detectors are always on.
    policy = _policy(never={"tags": [], "patterns": []})
    for force in (False, True):
        decision = decide(item, policy, force=force)
        assert (decision.allowed, decision.overridable, decision.forced) == (False, False, False)
        assert decision.rule == f"secret detected: {detector}"
        assert secret not in decision.rule
    assert not decide(item, policy, forced_rule=f"secret detected: {detector}").allowed


def test_secret_wins_over_a_refusal_force_could_override(store: Store) -> None:
    item = _item(store, f"Deploys use {GITHUB_TOKEN}", kind="command", tags=("private",))
    decision = decide(item, _policy(share={"kinds": ["decision"]}), force=True)
    assert (decision.allowed, decision.rule) == (False, "secret detected: github-token")


def test_archived_and_superseded_items_are_refused_even_with_force(store: Store) -> None:
    kept = _item(store, "Retry webhooks five times")
    store.forget(kept.id)
    archived = store.get(kept.id)
    old, _new = store.revise(
        _item(store, "Use ruff for linting").id, "Use ruff for linting and formatting"
    )
    policy = _policy()
    for item, status in ((archived, "archived"), (old, "superseded")):
        assert item.status == status
        decision = decide(item, policy, force=True)
        assert (decision.allowed, decision.overridable) == (False, False)
        assert decision.rule == f"item is {status}"


# -- what --force overrides ------------------------------------------------------------------

OVERRIDABLE = [
    pytest.param(
        {"share": {"kinds": ["decision"]}},
        {"kind": "command"},
        "share.kinds: command is not shared",
        id="share.kinds",
    ),
    pytest.param(
        {"share": {"kinds": [], "min_reinforcements": 0}},
        {"kind": "decision"},
        "share.kinds: decision is not shared",
        id="share.kinds-empty",
    ),
    pytest.param(
        {"share": {"kinds": ["decision"], "min_reinforcements": 2}},
        {},
        "share.min_reinforcements: 0 < 2",
        id="share.min_reinforcements",
    ),
    pytest.param(
        {"share": {"kinds": ["decision"], "projects": {"billing": False}}},
        {"project": "billing"},
        "share.projects.billing: false",
        id="project-false",
    ),
    pytest.param(
        {},
        {"tags": ("ci", "personal")},
        "never.tags: personal",
        id="never.tags-default",
    ),
    pytest.param(
        {"never": {"tags": ["hr"]}},
        {"tags": ("hr",)},
        "never.tags: hr",
        id="never.tags-own",
    ),
    pytest.param(
        {"never": {"patterns": ["^nothing$", "(?i)internal host"]}},
        {"text": "The Internal Host for billing is bill-01"},
        "never.patterns[1]",
        id="never.patterns",
    ),
]


@pytest.mark.parametrize(("overrides", "fields", "rule"), OVERRIDABLE)
def test_force_overrides_eligibility_and_never_rules_and_names_the_rule(
    store: Store, overrides: dict[str, Any], fields: dict[str, Any], rule: str
) -> None:
    extra = dict(fields)  # the parameters are shared between runs: leave them intact
    text = extra.pop("text", "We chose Postgres advisory locks")
    item = _item(store, text, **extra)
    policy = _policy(**overrides)

    refused = decide(item, policy)
    assert (refused.allowed, refused.overridable, refused.forced) == (False, True, False)
    assert refused.rule == rule

    forced = decide(item, policy, force=True)
    assert (forced.allowed, forced.overridable, forced.forced) == (True, True, True)
    assert forced.rule == rule


def test_never_rules_are_checked_before_eligibility(store: Store) -> None:
    item = _item(store, "Our on-call rota", kind="preference", tags=("private",))
    decision = decide(item, _policy(share={"kinds": ["decision"], "min_reinforcements": 5}))
    assert decision.rule == "never.tags: private"


def test_forced_rule_passes_later_but_another_rule_still_withholds(store: Store) -> None:
    item = _item(store, "Run the tests with make test", kind="command")
    first = _policy(share={"kinds": ["decision"]})
    forced = decide(item, first, force=True)
    assert forced.rule == "share.kinds: command is not shared"

    # Re-checked later (at sync, when serving): the rule forced at publish passes...
    again = decide(item, first, forced_rule=forced.rule)
    assert (again.allowed, again.forced, again.rule) == (True, True, forced.rule)

    # ...but a rule added since withholds it, and --force was not given this time.
    tightened = _policy(share={"kinds": ["decision"], "projects": {"shop": False}})
    withheld = decide(item, tightened, forced_rule=forced.rule)
    assert (withheld.allowed, withheld.rule) == (False, "share.projects.shop: false")
    patterned = _policy(share={"kinds": ["decision"]}, never={"patterns": ["make test"]})
    assert decide(item, patterned, forced_rule=forced.rule).rule == "never.patterns[0]"
    assert not decide(item, patterned, forced_rule=forced.rule).allowed

    # A forced rule does not excuse an unrelated rule the item never had to pass.
    other = _item(store, "We chose Redis for sessions", kind="decision", project="billing")
    billing_off = _policy(share={"kinds": ["decision"], "projects": {"billing": False}})
    assert not decide(other, billing_off, forced_rule=forced.rule).allowed


def test_item_forced_over_the_floor_still_passes_after_it_is_reinforced(store: Store) -> None:
    text = "We chose Postgres advisory locks"
    item = _item(store, text)
    policy = _policy(share={"kinds": ["decision"], "min_reinforcements": 3})
    forced = decide(item, policy, force=True)
    assert forced.rule == "share.min_reinforcements: 0 < 3"
    reinforced, status = store.remember(text, kind="decision", project="shop")
    assert (status, reinforced.reinforcements) == ("reinforced", 1)
    assert decide(reinforced, policy, forced_rule=forced.rule).allowed


def test_reinforced_item_reaches_the_floor(store: Store) -> None:
    text = "Always squash-merge feature branches"
    item = _item(store, text, kind="convention")
    policy = _policy(share={"kinds": ["convention"], "min_reinforcements": 1})
    assert decide(item, policy).rule == "share.min_reinforcements: 0 < 1"
    reinforced, _ = store.remember(text, kind="convention", project="shop")
    assert decide(reinforced, policy).allowed


# -- per-project rules -----------------------------------------------------------------------

PROJECTS: dict[str, Any] = {
    "kinds": ["decision"],
    "min_reinforcements": 2,
    "projects": {
        "web": {"kinds": ["gotcha"], "min_reinforcements": 0},
        "api": {"min_reinforcements": 0},
        "lab": {"kinds": []},
        "docs": True,
        "billing": False,
    },
}


@pytest.mark.parametrize(
    ("project", "kind", "allowed", "rule"),
    [
        ("web", "gotcha", True, "share.projects.web.kinds: gotcha"),
        ("web", "decision", False, "share.projects.web.kinds: decision is not shared"),
        ("lab", "decision", False, "share.projects.lab.kinds: decision is not shared"),
        ("billing", "decision", False, "share.projects.billing: false"),
        ("shop", "decision", False, "share.min_reinforcements: 0 < 2"),
        ("shop", "gotcha", False, "share.kinds: gotcha is not shared"),
    ],
)
def test_project_rules_override_the_team_kinds_and_floor(
    store: Store, project: str, kind: str, allowed: bool, rule: str
) -> None:
    item = _item(store, f"A {kind} in {project}", kind=kind, project=project)
    decision = decide(item, _policy(share=PROJECTS))
    assert (decision.allowed, decision.rule) == (allowed, rule)


def test_project_rule_without_kinds_inherits_the_team_kinds(store: Store) -> None:
    policy = _policy(share=PROJECTS)
    # api lowers the floor to 0 but lists no kinds: the team's [decision] applies.
    decision = _item(store, "We chose gRPC for the api", kind="decision", project="api")
    gotcha = _item(store, "The api gateway drops idle sockets", kind="gotcha", project="api")
    assert decide(decision, policy).allowed
    refused = decide(gotcha, policy)
    assert not refused.allowed
    assert refused.rule.endswith("kinds: gotcha is not shared")


@pytest.mark.parametrize(
    ("project", "kind", "rule"),
    [
        ("docs", "decision", "share.min_reinforcements: 0 < 2"),
        ("api", "gotcha", "share.kinds: gotcha is not shared"),
    ],
)
def test_inherited_setting_is_reported_under_its_own_key(
    store: Store, project: str, kind: str, rule: str
) -> None:
    item = _item(store, f"A {kind} in {project}", kind=kind, project=project)
    assert decide(item, _policy(share=PROJECTS)).rule == rule
