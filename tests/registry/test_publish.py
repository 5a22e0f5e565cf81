"""Publishing, retracting and reconciling: the policy decides, the registry records."""

from pathlib import Path

import msgspec
import pytest

from memmesh.local.errors import ItemNotFound
from memmesh.local.store import Store
from memmesh.policy.config import Policy
from memmesh.policy.errors import PublishRefused
from memmesh.registry import (
    Identity,
    Live,
    NotPublished,
    NotYourItem,
    Publication,
    Registry,
    Retraction,
    create_identity,
    open_envelope,
    plan,
    publish,
    reconcile,
    retract,
    withheld,
)
from memmesh.registry.envelopes import text_hash
from memmesh.registry.errors import RetractedBefore
from tests.registry._helpers import TEAM, log_length, make_policy

GITHUB_TOKEN = "ghp_R8x2Lq9ZtB4mK7vN1cW5yH3jD6sF0aE2uP8g"


def live_set(registry: Registry) -> dict[str, Live]:
    with registry.store.read() as conn:
        return registry.live(conn)


def live_versions(registry: Registry) -> dict[str, int]:
    return {item_id: live.publication.version for item_id, live in live_set(registry).items()}


def bodies(registry: Registry) -> list[Publication | Retraction]:
    out: list[Publication | Retraction] = []
    for entry in registry.entries():
        body = open_envelope(entry.envelope)
        assert isinstance(body, Publication | Retraction), "the log holds no presence"
        out.append(body)
    return out


def test_publish_appends_one_signed_publication_per_item(
    store: Store, registry: Registry, policy: Policy, identity: Identity
) -> None:
    first, _ = store.remember(
        "Deploys go out on Tuesdays", kind="decision", project="web", tags=["deploy"]
    )
    second, _ = store.remember("Run make lint before pushing", kind="gotcha")
    planned = publish(registry, policy, [first.id, second.id])
    assert [(p.item.id, p.action, p.version) for p in planned] == [
        (first.id, "publish", 1),
        (second.id, "publish", 1),
    ]
    assert [p.decision.rule for p in planned] == [
        "share.kinds: decision",
        "share.kinds: gotcha",
    ]
    published = bodies(registry)
    assert [type(b) for b in published] == [Publication, Publication]
    body = published[0]
    assert isinstance(body, Publication)
    assert (body.item_id, body.version, body.seq) == (first.id, 1, 1)
    assert (body.text, body.kind, body.project, body.tags) == (
        "Deploys go out on Tuesdays",
        "decision",
        "web",
        ("deploy",),
    )
    assert body.author == "tester"
    assert body.team == TEAM
    assert body.author_key == identity.public_key_text
    assert body.key_id == identity.key_id
    assert body.content_hash == text_hash("Deploys go out on Tuesdays")
    assert body.embedder == store.embedder.fingerprint
    assert published[1].seq == 2
    assert set(live_versions(registry)) == {first.id, second.id}


def test_publish_stamps_the_store_clock(tmp_path: Path, policy: Policy) -> None:
    home = tmp_path / "clocked"
    with Store(home, author="tester", clock=lambda: 1_700_000_123.5) as store:
        registry = Registry(store, create_identity(home), TEAM)
        item, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
        publish(registry, policy, [item.id])
        (body,) = bodies(registry)
    assert isinstance(body, Publication)
    assert body.published_at == 1_700_000_123.5


def test_publish_accepts_an_id_prefix(store: Store, registry: Registry, policy: Policy) -> None:
    item, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
    publish(registry, policy, [item.id[:20].lower()])
    assert list(live_versions(registry)) == [item.id]


def test_publish_is_all_or_nothing_and_lists_every_refusal(
    store: Store, registry: Registry, policy: Policy
) -> None:
    fine, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
    personal, _ = store.remember("I prefer tabs over spaces", kind="preference")
    private, _ = store.remember("The on-call rota lives in the wiki", tags=["private"])
    leaky, _ = store.remember(f"The CI token is {GITHUB_TOKEN}", kind="fact")
    gone, _ = store.remember("Staging resets nightly", kind="fact")
    store.forget(gone.id)
    ids = [fine.id, personal.id, private.id, leaky.id, gone.id]
    with pytest.raises(PublishRefused) as caught:
        publish(registry, policy, ids)
    assert caught.value.refusals == [
        (personal.id, "share.kinds: preference is not shared"),
        (private.id, "never.tags: private"),
        (leaky.id, "secret detected: github-token"),
        (gone.id, "item is archived"),
    ]
    assert caught.value.exit_code == 3
    assert "nothing was published" in str(caught.value)
    assert log_length(store) == 0


def test_force_overrides_eligibility_and_records_the_rule(
    store: Store, registry: Registry, policy: Policy
) -> None:
    item, _ = store.remember("I prefer tabs over spaces", kind="preference")
    (planned,) = publish(registry, policy, [item.id], force=True)
    assert planned.action == "publish"
    assert planned.decision.forced
    (entry,) = registry.entries()
    assert entry.forced_rule == "share.kinds: preference is not shared"
    assert live_set(registry)[item.id].forced_rule == "share.kinds: preference is not shared"


def test_force_never_overrides_a_detected_secret(
    store: Store, registry: Registry, policy: Policy
) -> None:
    item, _ = store.remember(f"The CI token is {GITHUB_TOKEN}", kind="fact")
    with pytest.raises(PublishRefused) as caught:
        publish(registry, policy, [item.id], force=True)
    assert caught.value.refusals == [(item.id, "secret detected: github-token")]
    assert log_length(store) == 0


def test_force_never_overrides_the_kill_switch(store: Store, registry: Registry) -> None:
    item, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
    with pytest.raises(PublishRefused) as caught:
        publish(registry, make_policy(coordinator=False), [item.id], force=True)
    assert caught.value.refusals == [(item.id, "coordinator: not set (nothing leaves this laptop)")]
    assert log_length(store) == 0


def test_an_unchanged_republish_is_a_no_op(
    store: Store, registry: Registry, policy: Policy
) -> None:
    item, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
    publish(registry, policy, [item.id])
    before = registry.entries()
    (planned,) = publish(registry, policy, [item.id])
    assert (planned.action, planned.version) == ("unchanged", 1)
    assert registry.entries() == before


def test_the_same_item_twice_in_one_batch_is_published_once(
    store: Store, registry: Registry, policy: Policy
) -> None:
    item, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
    planned = publish(registry, policy, [item.id, item.id[:12]])
    assert len(planned) == 1
    assert log_length(store) == 1


def test_changed_tags_publish_a_new_version(
    store: Store, registry: Registry, policy: Policy
) -> None:
    item, _ = store.remember("Deploys go out on Tuesdays", kind="decision", tags=["deploy"])
    publish(registry, policy, [item.id])
    again, status = store.remember("Deploys go out on Tuesdays", kind="decision", tags=["release"])
    assert (again.id, status) == (item.id, "reinforced")
    (planned,) = publish(registry, policy, [item.id])
    assert (planned.action, planned.version) == ("publish", 2)
    live = live_set(registry)[item.id].publication
    assert (live.version, live.tags) == (2, ("deploy", "release"))
    assert log_length(store) == 2


def test_retract_then_publish_again_only_when_asked_gives_version_2(
    store: Store, registry: Registry, policy: Policy
) -> None:
    item, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
    publish(registry, policy, [item.id])
    (entry,) = retract(registry, [item.id])
    assert (entry.kind, entry.item_id, entry.version) == ("retraction", item.id, 1)
    assert live_set(registry) == {}
    with pytest.raises(RetractedBefore) as refused:
        publish(registry, policy, [item.id])
    assert refused.value.retracted == [(item.id, 1)]
    assert len(registry.entries()) == 2
    (planned,) = publish(registry, policy, [item.id], again=True)
    assert (planned.action, planned.version) == ("publish", 2)
    assert live_versions(registry) == {item.id: 2}
    assert [(e.kind, e.version) for e in registry.entries()] == [
        ("publication", 1),
        ("retraction", 1),
        ("publication", 2),
    ]


def test_a_retraction_covers_every_version_up_to_its_own(
    store: Store, registry: Registry, policy: Policy
) -> None:
    item, _ = store.remember("Deploys go out on Tuesdays", kind="decision", tags=["deploy"])
    publish(registry, policy, [item.id])
    store.remember("Deploys go out on Tuesdays", kind="decision", tags=["release"])
    publish(registry, policy, [item.id])
    (entry,) = retract(registry, [item.id])
    assert entry.version == 2
    assert live_set(registry) == {}
    with store.read() as conn:
        assert registry.latest_version(conn, item.id) == 2
    (planned,) = publish(registry, policy, [item.id], again=True)
    assert planned.version == 3


def test_retract_of_an_unpublished_item_raises_not_published(
    store: Store, registry: Registry
) -> None:
    item, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
    with pytest.raises(NotPublished) as caught:
        retract(registry, [item.id])
    assert caught.value.item_id == item.id
    assert caught.value.status == 404
    assert log_length(store) == 0


def test_retracting_twice_raises_not_published(
    store: Store, registry: Registry, policy: Policy
) -> None:
    item, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
    publish(registry, policy, [item.id])
    retract(registry, [item.id])
    with pytest.raises(NotPublished):
        retract(registry, [item.id])
    assert log_length(store) == 2


def test_retract_is_all_or_nothing(store: Store, registry: Registry, policy: Policy) -> None:
    published, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
    unpublished, _ = store.remember("Run make lint before pushing", kind="gotcha")
    publish(registry, policy, [published.id])
    with pytest.raises(NotPublished) as caught:
        retract(registry, [published.id, unpublished.id])
    assert caught.value.item_id == unpublished.id
    assert log_length(store) == 1
    assert list(live_versions(registry)) == [published.id]


def test_retract_of_an_unknown_id_raises_item_not_found(registry: Registry) -> None:
    with pytest.raises(ItemNotFound):
        retract(registry, ["01JZZZZZZZZZZZZZZZZZZZZZZZ"])


def test_the_same_item_twice_in_one_retract_is_retracted_once(
    store: Store, registry: Registry, policy: Policy
) -> None:
    item, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
    publish(registry, policy, [item.id])
    assert len(retract(registry, [item.id, item.id[:10]])) == 1
    assert log_length(store) == 2


def test_retract_of_an_item_another_key_published_raises_not_your_item(
    store: Store, registry: Registry, policy: Policy, other_identity: Identity
) -> None:
    theirs = Registry(store, other_identity, TEAM)
    item, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
    publish(theirs, policy, [item.id])
    with pytest.raises(NotYourItem) as caught:
        retract(registry, [item.id])
    assert caught.value.item_id == item.id
    assert caught.value.status == 403
    assert log_length(store) == 1
    assert live_set(registry)[item.id].publication.key_id == other_identity.key_id
    # Its author can.
    (entry,) = retract(theirs, [item.id])
    assert open_envelope(entry.envelope).key_id == other_identity.key_id


def test_a_forgotten_item_can_still_be_retracted_by_hand(
    store: Store, registry: Registry, policy: Policy
) -> None:
    item, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
    publish(registry, policy, [item.id])
    store.forget(item.id)
    (entry,) = retract(registry, [item.id])
    assert (entry.kind, entry.item_id) == ("retraction", item.id)
    assert reconcile(registry) == []


def test_reconcile_retracts_a_forgotten_item(
    store: Store, registry: Registry, policy: Policy
) -> None:
    kept, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
    forgotten, _ = store.remember("Run make lint before pushing", kind="gotcha")
    publish(registry, policy, [kept.id, forgotten.id])
    store.forget(forgotten.id)
    entries = reconcile(registry)
    assert [(e.kind, e.item_id, e.version) for e in entries] == [("retraction", forgotten.id, 1)]
    assert list(live_versions(registry)) == [kept.id]


def test_reconcile_retracts_the_old_version_of_a_revised_item(
    store: Store, registry: Registry, policy: Policy
) -> None:
    item, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
    publish(registry, policy, [item.id])
    old, new = store.revise(item.id, "Deploys go out on Wednesdays")
    entries = reconcile(registry)
    assert [(e.kind, e.item_id, e.version) for e in entries] == [("retraction", old.id, 1)]
    # The revision is a new item: it is not published until its author says so.
    assert live_set(registry) == {}
    publish(registry, policy, [new.id])
    assert live_versions(registry) == {new.id: 1}


def test_reconcile_is_idempotent(store: Store, registry: Registry, policy: Policy) -> None:
    item, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
    publish(registry, policy, [item.id])
    store.forget(item.id)
    assert len(reconcile(registry)) == 1
    assert reconcile(registry) == []
    assert log_length(store) == 2


def test_reconcile_with_nothing_published_appends_nothing(store: Store, registry: Registry) -> None:
    store.remember("Deploys go out on Tuesdays", kind="decision")
    assert reconcile(registry) == []
    assert log_length(store) == 0


def test_reconcile_leaves_another_key_s_publications_alone(
    store: Store, registry: Registry, policy: Policy, other_identity: Identity
) -> None:
    theirs = Registry(store, other_identity, TEAM)
    item, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
    publish(theirs, policy, [item.id])
    store.forget(item.id)
    assert reconcile(registry) == []
    assert len(reconcile(theirs)) == 1


def test_an_archived_or_superseded_item_cannot_be_published(
    store: Store, registry: Registry, policy: Policy
) -> None:
    forgotten, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
    store.forget(forgotten.id)
    revised, _ = store.remember("Run make lint before pushing", kind="gotcha")
    store.revise(revised.id, "Run make lint and make test before pushing")
    with pytest.raises(PublishRefused) as caught:
        publish(registry, policy, [forgotten.id, revised.id], force=True)
    assert caught.value.refusals == [
        (forgotten.id, "item is archived"),
        (revised.id, "item is superseded"),
    ]


def test_withheld_reports_items_a_tightened_policy_refuses(
    store: Store, registry: Registry, policy: Policy
) -> None:
    fact, _ = store.remember("Staging resets nightly", kind="fact")
    decision, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
    publish(registry, policy, [fact.id, decision.id])
    assert withheld(registry, policy) == {}
    tightened = make_policy(("decision", "gotcha"))
    held = withheld(registry, tightened)
    assert list(held) == [fact.id]
    assert not held[fact.id].allowed
    assert held[fact.id].rule == "share.kinds: fact is not shared"
    # Withholding is a decision at serve time; the log is untouched.
    assert log_length(store) == 2


def test_withheld_reports_everything_when_the_coordinator_is_removed(
    store: Store, registry: Registry, policy: Policy
) -> None:
    fact, _ = store.remember("Staging resets nightly", kind="fact")
    publish(registry, policy, [fact.id])
    held = withheld(registry, make_policy(coordinator=False))
    assert held[fact.id].rule == "coordinator: not set (nothing leaves this laptop)"


def test_withheld_reports_a_forgotten_item_before_reconcile(
    store: Store, registry: Registry, policy: Policy
) -> None:
    fact, _ = store.remember("Staging resets nightly", kind="fact")
    publish(registry, policy, [fact.id])
    store.forget(fact.id)
    assert withheld(registry, policy)[fact.id].rule == "item is archived"
    reconcile(registry)
    assert withheld(registry, policy) == {}


def test_withheld_lets_the_forced_rule_pass_but_not_a_new_one(
    store: Store, registry: Registry, policy: Policy
) -> None:
    item, _ = store.remember("I prefer tabs over spaces", kind="preference", tags=["style"])
    publish(registry, policy, [item.id], force=True)
    assert withheld(registry, policy) == {}
    never_style = (*policy.never.tags, "style")
    stricter = msgspec.structs.replace(
        policy, never=msgspec.structs.replace(policy.never, tags=never_style)
    )
    assert withheld(registry, stricter)[item.id].rule == "never.tags: style"


def test_plan_shows_what_would_happen_and_appends_nothing(
    store: Store, registry: Registry, policy: Policy
) -> None:
    live, _ = store.remember("Deploys go out on Tuesdays", kind="decision")
    publish(registry, policy, [live.id])
    new, _ = store.remember("Run make lint before pushing", kind="gotcha")
    refused, _ = store.remember("I prefer tabs over spaces", kind="preference")
    planned = plan(registry, policy, [live.id, new.id, refused.id])
    assert [(p.item.id, p.action, p.version, p.decision.rule) for p in planned] == [
        (live.id, "unchanged", 1, "share.kinds: decision"),
        (new.id, "publish", 1, "share.kinds: gotcha"),
        (refused.id, "refused", 1, "share.kinds: preference is not shared"),
    ]
    assert log_length(store) == 1


def test_an_item_at_the_text_limit_never_makes_the_log_unreadable(
    store: Store, registry: Registry, policy: Policy
) -> None:
    # Quotes are one byte in the store but two in the JSON payload.
    item, _ = store.remember('say "' + '"' * 8000, kind="fact")
    try:
        publish(registry, policy, [item.id])
    except PublishRefused:  # refusing it cleanly is also right
        assert log_length(store) == 0
    assert registry.verify() == []
    assert set(live_set(registry)) <= {item.id}
