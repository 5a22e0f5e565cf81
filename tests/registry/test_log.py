"""The append-only, hash-chained log: its chain, its fold, and what verify() catches."""

import itertools

import pytest

from memmesh.errors import MemmeshError
from memmesh.local.store import Store
from memmesh.policy.config import Policy
from memmesh.registry import (
    BadSignature,
    Identity,
    Publication,
    Registry,
    Retraction,
    open_envelope,
    publish,
    retract,
)
from memmesh.registry.log import GENESIS, _hash, fold
from tests.registry._helpers import (
    TEAM,
    flip_bit,
    log_length,
    publication,
    read_row,
    retraction,
    swap_entries,
    tamper,
)

HEAD_BROKEN = "the log's head does not match its last entry (entries were removed or added)"
FORCED_RULE = "share.kinds: preference is not shared"


def changed(seq: int) -> str:
    return f"entry {seq}: its contents were changed after it was written"


def unlinked(seq: int) -> str:
    return f"entry {seq}: does not follow the entry before it"


@pytest.fixture
def items(store: Store, registry: Registry, policy: Policy) -> dict[str, str]:
    """Five log entries: publish a, b, c; retract b; publish d by force. Item ids by name."""
    ids = {
        "a": store.remember("Deploys go out on Tuesdays", kind="decision")[0].id,
        "b": store.remember("The staging database resets nightly", kind="fact")[0].id,
        "c": store.remember("Run make lint before pushing", kind="gotcha")[0].id,
        "d": store.remember("I prefer tabs over spaces", kind="preference")[0].id,
    }
    for name in "abc":
        publish(registry, policy, [ids[name]])
    retract(registry, [ids["b"]])
    publish(registry, policy, [ids["d"]], force=True)
    assert log_length(store) == 5
    return ids


def test_entries_are_numbered_from_one_and_chained(
    registry: Registry, items: dict[str, str]
) -> None:
    entries = registry.entries()
    assert [e.seq for e in entries] == [1, 2, 3, 4, 5]
    assert entries[0].prev_hash == GENESIS
    for before, after in itertools.pairwise(entries):
        assert after.prev_hash == before.entry_hash
    assert len({e.entry_hash for e in entries}) == 5
    assert not any(e.acked for e in entries)


def test_entry_columns_match_their_signed_bodies(
    registry: Registry, identity: Identity, items: dict[str, str]
) -> None:
    entries = registry.entries()
    expected = [
        ("publication", items["a"], 1),
        ("publication", items["b"], 1),
        ("publication", items["c"], 1),
        ("retraction", items["b"], 1),
        ("publication", items["d"], 1),
    ]
    assert [(e.kind, e.item_id, e.version) for e in entries] == expected
    for entry in entries:
        body = open_envelope(entry.envelope)
        assert body.seq == entry.seq
        assert body.team == TEAM
        assert body.key_id == identity.key_id
        assert isinstance(body, Retraction if entry.kind == "retraction" else Publication)


def test_the_rule_a_force_overrode_is_recorded(registry: Registry, items: dict[str, str]) -> None:
    assert [e.forced_rule for e in registry.entries()] == [None, None, None, None, FORCED_RULE]


def test_entries_read_inside_a_transaction_are_the_same(
    store: Store, registry: Registry, items: dict[str, str]
) -> None:
    with store.read() as conn:
        assert registry.entries(conn) == registry.entries()


def test_folding_the_log_gives_the_published_set(
    store: Store, registry: Registry, items: dict[str, str]
) -> None:
    with store.read() as conn:
        live = registry.live(conn)
    assert set(live) == {items["a"], items["c"], items["d"]}
    assert live[items["a"]].publication.text == "Deploys go out on Tuesdays"
    assert live[items["d"]].forced_rule == FORCED_RULE
    assert live[items["a"]].forced_rule is None


def test_the_entries_for_some_items_are_theirs_alone_and_fold_as_the_whole_log_does(
    store: Store, registry: Registry, items: dict[str, str]
) -> None:
    whole = registry.entries()
    for name in "abcd":
        mine = registry.entries_for([items[name]])
        assert mine == [entry for entry in whole if entry.item_id == items[name]]
        assert fold(mine).get(items[name]) == registry.live().get(items[name])
    both = registry.entries_for([items["b"], items["d"], "01JZZZZZZZZZZZZZZZZZZZZZZZ"])
    assert [(e.seq, e.kind) for e in both] == [
        (2, "publication"),
        (4, "retraction"),
        (5, "publication"),
    ]
    assert registry.entries_for([]) == []
    with store.read() as conn:
        assert registry.entries_for([items["b"]], conn) == registry.entries_for([items["b"]])


def test_latest_version_counts_retractions_and_unknown_items_are_zero(
    store: Store, registry: Registry, items: dict[str, str]
) -> None:
    with store.read() as conn:
        assert registry.latest_version(conn, items["b"]) == 1
        assert registry.latest_version(conn, "01JZZZZZZZZZZZZZZZZZZZZZZZ") == 0


def test_a_newer_version_replaces_the_older_in_the_fold(
    registry: Registry, identity: Identity
) -> None:
    entries = []
    with registry.store.transaction() as conn:
        for version, text in ((1, "first wording"), (2, "second wording")):
            body = publication(identity, version=version, seq=registry.next_seq(conn), text=text)
            entries.append(registry.append(conn, body))
    live = fold(entries)
    assert live[entries[0].item_id].publication.version == 2
    assert live[entries[0].item_id].publication.text == "second wording"


def test_a_retraction_beats_every_version_up_to_its_own(
    registry: Registry, identity: Identity
) -> None:
    with registry.store.transaction() as conn:
        for version in (1, 2):
            registry.append(conn, publication(identity, version=version, seq=version))
        registry.append(conn, retraction(identity, version=2, seq=3))
        assert registry.live(conn) == {}
        registry.append(conn, publication(identity, version=3, seq=4, text="third"))
        live = registry.live(conn)
    assert [live_item.publication.version for live_item in live.values()] == [3]


def test_an_older_retraction_does_not_beat_a_newer_version(
    registry: Registry, identity: Identity
) -> None:
    with registry.store.transaction() as conn:
        registry.append(conn, publication(identity, version=1, seq=1))
        registry.append(conn, publication(identity, version=2, seq=2, text="newer"))
        registry.append(conn, retraction(identity, version=1, seq=3))
        live = registry.live(conn)
    assert [live_item.publication.version for live_item in live.values()] == [2]


def test_verify_passes_on_a_good_log(registry: Registry, items: dict[str, str]) -> None:
    assert registry.verify() == []


def test_verify_passes_on_an_empty_log(registry: Registry) -> None:
    assert registry.verify() == []


def test_verify_reports_an_edited_payload_byte(
    store: Store, registry: Registry, items: dict[str, str]
) -> None:
    with store.read() as conn:
        payload = read_row(conn, 2)["payload"]
    index = payload.index(b"staging")
    tamper(store, 2, payload=flip_bit(payload, index, 5))  # "s" -> "S"
    problems = registry.verify()
    assert problems == [changed(2), "entry 2: envelope rejected: the signature does not verify"]


def test_verify_reports_an_edited_signature(
    store: Store, registry: Registry, items: dict[str, str]
) -> None:
    with store.read() as conn:
        signature = read_row(conn, 3)["signature"]
    tamper(store, 3, signature=flip_bit(signature, 40))
    problems = registry.verify()
    assert problems == [changed(3), "entry 3: envelope rejected: the signature does not verify"]


@pytest.mark.parametrize(
    ("seq", "rule"),
    [(1, "never.tags: private"), (5, None), (5, "share.kinds: decision is not shared")],
    ids=["added", "removed", "replaced"],
)
def test_verify_reports_an_edited_forced_rule(
    store: Store, registry: Registry, items: dict[str, str], seq: int, rule: str | None
) -> None:
    tamper(store, seq, forced_rule=rule)
    assert registry.verify() == [changed(seq)]


def test_verify_reports_an_edited_recorded_at(
    store: Store, registry: Registry, items: dict[str, str]
) -> None:
    with store.read() as conn:
        recorded_at = read_row(conn, 4)["recorded_at"]
    tamper(store, 4, recorded_at=recorded_at - 3600.0)
    assert registry.verify() == [changed(4)]


def test_verify_reports_a_removed_middle_entry(
    store: Store, registry: Registry, items: dict[str, str]
) -> None:
    with store.transaction() as conn:
        conn.execute("DELETE FROM registry WHERE seq = 4")  # the retraction of b
    problems = registry.verify()
    assert "entry 5: expected position 4 (an entry is missing)" in problems
    assert unlinked(5) in problems
    assert HEAD_BROKEN in problems


def test_verify_reports_a_removed_last_entry(
    store: Store, registry: Registry, items: dict[str, str]
) -> None:
    with store.transaction() as conn:
        conn.execute("DELETE FROM registry WHERE seq = 5")
    assert registry.verify() == [HEAD_BROKEN]


def test_verify_reports_a_removed_first_entry(
    store: Store, registry: Registry, items: dict[str, str]
) -> None:
    with store.transaction() as conn:
        conn.execute("DELETE FROM registry WHERE seq = 1")
    problems = registry.verify()
    assert "entry 2: expected position 1 (an entry is missing)" in problems
    assert unlinked(2) in problems


def test_verify_reports_an_entirely_emptied_log(
    store: Store, registry: Registry, items: dict[str, str]
) -> None:
    with store.transaction() as conn:
        conn.execute("DELETE FROM registry")
    assert registry.verify() == [HEAD_BROKEN]


def test_verify_reports_a_last_entry_rewritten_with_a_fresh_hash(
    store: Store, registry: Registry, items: dict[str, str]
) -> None:
    # Someone who recomputes the edited entry's own hash is still caught by the head.
    last = registry.entries()[-1]
    rehashed = _hash(last.prev_hash, last.seq, last.envelope, None, last.recorded_at)
    tamper(store, 5, forced_rule=None, entry_hash=rehashed)
    assert registry.verify() == [HEAD_BROKEN]


def test_verify_reports_an_appended_copy_without_a_head(
    store: Store, registry: Registry, items: dict[str, str]
) -> None:
    with store.transaction() as conn:
        row = read_row(conn, 5)
        conn.execute(
            "INSERT INTO registry (seq, kind, item_id, version, payload, signature, forced_rule, "
            "recorded_at, prev_hash, entry_hash, acked) VALUES (6, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
            (
                row["kind"], row["item_id"], row["version"], row["payload"], row["signature"],
                row["forced_rule"], row["recorded_at"], row["entry_hash"], "f" * 64,
            ),
        )  # fmt: skip
    problems = registry.verify()
    assert changed(6) in problems
    assert "entry 6: its columns disagree with its signed payload" in problems
    assert HEAD_BROKEN in problems


def test_verify_reports_two_swapped_entries(
    store: Store, registry: Registry, items: dict[str, str]
) -> None:
    swap_entries(store, 2, 3)
    problems = registry.verify()
    assert unlinked(2) in problems
    assert unlinked(3) in problems
    assert unlinked(4) in problems
    assert "entry 2: its columns disagree with its signed payload" in problems
    assert "entry 3: its columns disagree with its signed payload" in problems


def test_verify_reports_a_changed_prev_hash(
    store: Store, registry: Registry, items: dict[str, str]
) -> None:
    tamper(store, 3, prev_hash="0" * 64)
    assert registry.verify() == [unlinked(3), changed(3)]


def test_verify_reports_a_changed_entry_hash(
    store: Store, registry: Registry, items: dict[str, str]
) -> None:
    tamper(store, 2, entry_hash="e" * 64)
    assert registry.verify() == [changed(2), unlinked(3)]


@pytest.mark.parametrize(
    ("column", "value"),
    [("item_id", "01JZZZZZZZZZZZZZZZZZZZZZZZ"), ("version", 9), ("kind", "retraction")],
)
def test_verify_reports_a_column_that_disagrees_with_the_payload(
    store: Store, registry: Registry, items: dict[str, str], column: str, value: object
) -> None:
    tamper(store, 1, **{column: value})
    assert registry.verify() == ["entry 1: its columns disagree with its signed payload"]


def test_verify_ignores_the_acked_flag(
    store: Store, registry: Registry, items: dict[str, str]
) -> None:
    # Sync flips ``acked`` after the coordinator confirms; that is not an edit of the log.
    with store.transaction() as conn:
        conn.execute("UPDATE registry SET acked = 1")
    assert registry.verify() == []


def test_verify_reports_an_entry_signed_by_another_key(
    store: Store,
    registry: Registry,
    policy: Policy,
    other_identity: Identity,
    items: dict[str, str],
) -> None:
    theirs = Registry(store, other_identity, TEAM)
    item, _ = store.remember("Their fact about the cache", kind="fact")
    publish(theirs, policy, [item.id])
    assert registry.verify() == [f"entry 6: signed by another key ({other_identity.key_id})"]
    assert theirs.verify()[:5] == [
        f"entry {seq}: signed by another key ({registry.identity.key_id})" for seq in range(1, 6)
    ]


def test_folding_a_corrupted_entry_refuses_instead_of_guessing(
    store: Store, registry: Registry, items: dict[str, str]
) -> None:
    with store.read() as conn:
        payload = read_row(conn, 4)["payload"]
    edited = payload.replace(b'"version":1', b'"version":2')
    assert edited != payload
    tamper(store, 4, payload=edited)
    with store.read() as conn, pytest.raises(BadSignature):
        registry.live(conn)


def test_a_removed_last_entry_is_still_reported_after_a_later_publish(
    store: Store, registry: Registry, policy: Policy, items: dict[str, str]
) -> None:
    with store.transaction() as conn:
        conn.execute("DELETE FROM registry WHERE seq = 5")
    item, _ = store.remember("Cache keys expire after 10 minutes", kind="fact")
    try:
        publish(registry, policy, [item.id])
    except MemmeshError:  # refusing to append onto a broken log is also right
        return
    assert registry.verify() != []
