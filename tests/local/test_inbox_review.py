"""Reviewing the inbox, as `mem inbox` and the page both do it: where an accepted candidate
goes, where a candidate came from, and what a review did, in one set of words."""

from pathlib import Path

import pytest

from memmesh.local.inbox import Candidate
from memmesh.local.inbox_review import (
    accepted_line,
    accepted_summary,
    project_for,
    redacted_notice,
    rejected_notice,
    relative_path,
    secrets_named,
    source_of,
)


def _candidate(**fields: object) -> Candidate:
    given: dict[str, object] = {
        "id": "01J9ZC4XQM0000000000000000",
        "text": "staging deploys run from main",
        "kind": "fact",
        "project": "",
        "source_path": "",
        "source_line": None,
        "session_id": "",
        "context": "",
        "created_at": 0.0,
        "status": "pending",
        "item_id": None,
        "decided_at": None,
    }
    return Candidate(**{**given, **fields})  # type: ignore[arg-type]


def test_secrets_are_named_by_count_and_each_detector_once() -> None:
    assert secrets_named(("github-token",)) == "a secret (github-token)"
    assert secrets_named(["github-token", "password-in-url", "github-token"]) == (
        "3 secrets (github-token, password-in-url)"
    )
    assert redacted_notice(("aws-key",)) == "redacted a secret (aws-key) before storing it"


def test_a_source_below_the_working_folder_is_named_relative_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    below = str(tmp_path / "docs" / "notes.md")
    elsewhere = str(tmp_path.parent / "notes.md")
    assert relative_path(below) == str(Path("docs", "notes.md"))
    assert relative_path(elsewhere) == elsewhere
    assert relative_path("") == ""
    found = _candidate(source_path=below, source_line=12, context="Deploys > Staging")
    assert source_of(found) == f"{Path('docs', 'notes.md')}:12 (Deploys > Staging)"
    assert source_of(_candidate(source_path=elsewhere)) == elsewhere
    assert source_of(_candidate()) == ""


def test_an_accepted_candidate_goes_to_the_project_given_else_its_own_else_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEM_PROJECT", "billing")
    monkeypatch.chdir(tmp_path)
    proposed, unplaced = _candidate(project="web"), _candidate()
    assert project_for("api")(proposed) == "api"
    assert project_for()(proposed) == "web"
    assert project_for()(unplaced) == "billing"
    assert project_for(None)(unplaced) == "billing"


def test_what_accepting_and_rejecting_did_is_said_in_one_set_of_words() -> None:
    assert accepted_line("01J9ZC4XQM", "created", 0) == "created item 01J9ZC4XQM"
    assert accepted_line("01J9ZC4XQM", "reinforced", 3) == (
        "reinforced an existing item 01J9ZC4XQM (3x)"
    )
    assert accepted_summary(["created", "reinforced", "created"]) == (
        "created 2 items, reinforced 1"
    )
    assert accepted_summary(["created"]) == "created 1 item, reinforced 0"
    assert rejected_notice(["01J9ZC4XQM"], every=False) == "rejected 01J9ZC4XQM"
    assert rejected_notice(["01J9ZC4XQM"], every=True) == "rejected 1 candidate"
    assert rejected_notice(["01J9ZC4XQM", "01J9ZC4XQN"], every=False) == "rejected 2 candidates"
    assert rejected_notice([], every=True) == "rejected 0 candidates"
