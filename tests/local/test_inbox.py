"""The inbox: candidates kept apart from items until accepted, redacted before they are
stored, proposed once per text and project, bounded, and found by id prefix like items."""

from pathlib import Path

import pytest

from memmesh.local import inbox
from memmesh.local.errors import (
    AmbiguousId,
    CandidateNotFound,
    InboxFull,
    InvalidInput,
    NotPending,
)
from memmesh.local.inbox import Proposal
from memmesh.local.store import Store
from memmesh.policy.redaction import redact_text


def _propose(store: Store, *texts: str, project: str = "") -> list[inbox.Proposed]:
    return inbox.propose(store, [Proposal(t, "fact", project) for t in texts], redact=redact_text)


def test_a_candidate_is_no_item_until_it_is_accepted(store: Store) -> None:
    (proposed,) = _propose(store, "Staging deploys run from main")
    assert store.items() == []

    candidate, item, how = inbox.accept(store, proposed.candidate.id, project="billing")

    assert (how, item.text, item.project, item.kind) == (
        "created", "Staging deploys run from main", "billing", "fact",
    )  # fmt: skip
    assert (candidate.status, candidate.item_id) == ("accepted", item.id)
    assert inbox.pending(store) == []


def test_accepting_a_fact_the_store_knows_reinforces_it(store: Store) -> None:
    known, _ = store.remember("Staging deploys run from main", project="billing")
    (proposed,) = _propose(store, "staging deploys run from main.")

    planned = inbox.plan(store, [proposed.candidate], lambda c: "billing")
    candidate, item, how = inbox.accept(store, proposed.candidate.id, project="billing")

    assert planned[0].item is not None
    assert planned[0].item.id == known.id
    assert (how, item.id, item.reinforcements, candidate.item_id) == (
        "reinforced", known.id, 1, known.id,
    )  # fmt: skip


def test_the_same_text_for_the_same_project_is_proposed_once(store: Store) -> None:
    first = _propose(store, "Use the blue cluster", "use the blue cluster.")
    other_project = _propose(store, "Use the blue cluster", project="billing")

    assert [p.added for p in first] == ["proposed", "already pending"]
    assert first[1].candidate == first[0].candidate
    assert [p.added for p in other_project] == ["proposed"]
    inbox.reject(store, first[0].candidate.id)
    assert [p.added for p in _propose(store, "Use the blue cluster")] == ["rejected before"]


def test_a_secret_is_redacted_before_the_candidate_is_stored(store: Store) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    (proposed,) = _propose(store, f"deploy token {token}")
    edited, detectors = inbox.edit(
        store, proposed.candidate.id, f"the token is {token}", redact=redact_text
    )
    assert proposed.redacted == detectors == ("github-token",)
    assert edited.text == "the token is [redacted: github-token]"
    assert token.encode() not in store.path.read_bytes()


def test_a_full_inbox_refuses_the_whole_batch(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inbox, "MAX_PENDING", 3)
    _propose(store, "one", "two")

    with pytest.raises(InboxFull) as refused:
        _propose(store, "three", "four")

    assert str(refused.value) == (
        "the inbox holds 3 pending candidates, as many as it keeps: nothing of these 2 was "
        "added; accept or reject some first (`mem inbox`)"
    )
    assert [c.text for c in inbox.pending(store)] == ["two", "one"]
    assert [p.added for p in _propose(store, "one", "three")] == ["already pending", "proposed"]


def test_candidates_are_found_by_prefix_and_an_ambiguous_one_lists_them(store: Store) -> None:
    made = [p.candidate for p in _propose(store, "alpha fact", "beta fact")]
    shared = made[0].id[:10]
    assert made[1].id.startswith(shared)  # made in the same millisecond

    with pytest.raises(AmbiguousId) as ambiguous:
        inbox.find(store, shared.lower())
    shown = inbox.short_ids(store, [c.id for c in made])
    assert str(ambiguous.value) == (
        f"id prefix {shared.lower()!r} matches 2 inbox candidates; give more characters: "
        + " | ".join(f'{shown[c.id]} fact "{c.text}"' for c in sorted(made, key=lambda c: c.id))
    )
    assert inbox.find(store, shown[made[1].id]) == made[1]
    with pytest.raises(InvalidInput, match="too short"):
        inbox.find(store, "01J")
    with pytest.raises(CandidateNotFound):
        inbox.find(store, "ZZZZZZ")


def test_a_decided_candidate_cannot_be_decided_again(store: Store) -> None:
    (proposed,) = _propose(store, "a fact")
    rejected = inbox.reject(store, proposed.candidate.id)

    with pytest.raises(NotPending) as refused:
        inbox.accept(store, rejected.id, project="global")

    assert str(refused.value) == f"inbox candidate {rejected.id} was rejected already"
    assert store.items() == []


def test_a_candidate_another_process_decided_first_leaves_no_item_behind(
    store: Store, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (proposed,) = _propose(store, "Staging deploys run from main")
    read_as_pending = inbox._pending_one

    def rejected_meanwhile(store_: Store, candidate_id: str) -> inbox.Candidate:
        candidate = read_as_pending(store_, candidate_id)
        monkeypatch.setattr(inbox, "_pending_one", read_as_pending)
        with Store(home, author="tester") as other:  # a second process, deciding first
            inbox.reject(other, candidate_id)
        return candidate

    monkeypatch.setattr(inbox, "_pending_one", rejected_meanwhile)
    with pytest.raises(NotPending):
        inbox.accept(store, proposed.candidate.id, project="billing")

    assert store.items() == []
    assert inbox.find(store, proposed.candidate.id).status == "rejected"
