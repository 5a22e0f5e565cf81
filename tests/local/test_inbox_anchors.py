"""A candidate keeps the anchors its item will get: stored with it as JSON (the anchor's
fields, its line hashes as hex), given to the item it becomes when it is accepted (a new one,
or the one it reinforces), shown as paths alone; a candidate without any keeps none."""

import json
from pathlib import Path

import pytest

from memmesh.local import inbox
from memmesh.local._db import connection_of
from memmesh.local.anchors import Anchor, anchor_file, anchors_of, staleness
from memmesh.local.inbox import Proposal
from memmesh.local.store import Store
from memmesh.policy.redaction import redact_text

NOW = 1_770_000_000.0
TEXT = "`pytest -q` fails with ImportError: cannot import name 'retry'; fixed by editing src/a.py"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository's work tree (a `.git` folder marks one) with two files."""
    top = tmp_path / "billing"
    (top / ".git").mkdir(parents=True)
    (top / "src").mkdir()
    (top / "src" / "a.py").write_text("def a():\n    return retry()\n")
    (top / "src" / "b.py").write_text("def retry():\n    return 3\n")
    return top


def _anchors(repo: Path) -> tuple[Anchor, ...]:
    return tuple(anchor_file(repo, p, 0, 0, NOW) for p in ("src/a.py", "src/b.py"))


def _propose(store: Store, about: tuple[Anchor, ...], text: str = TEXT) -> inbox.Candidate:
    (proposed,) = inbox.propose(
        store, [Proposal(text, "gotcha", "billing", about=about)], redact=redact_text
    )
    return proposed.candidate


def test_a_candidate_keeps_its_anchors_as_json_with_hex_line_hashes(
    store: Store, repo: Path
) -> None:
    anchors = _anchors(repo)

    proposed = _propose(store, anchors)

    assert proposed.about == anchors
    assert inbox.pending(store)[0].about == anchors
    assert inbox.find(store, proposed.id).about == anchors
    with store.read() as tx:
        (stored,) = connection_of(tx).execute("SELECT about FROM inbox").fetchone()
    first = json.loads(stored)[0]
    assert first == {
        "path": "src/a.py",
        "first_line": 0,
        "last_line": 0,
        "repo": str(repo),
        "digest": anchors[0].digest,
        "line_hashes": anchors[0].line_hashes.hex(),
        "anchored_at": NOW,
    }


def test_a_proposal_without_anchors_keeps_an_empty_list(store: Store) -> None:
    proposed = _propose(store, ())

    assert proposed.about == ()
    with store.read() as tx:
        (stored,) = connection_of(tx).execute("SELECT about FROM inbox").fetchone()
    assert stored == "[]"


def test_accepting_a_candidate_gives_its_new_item_the_anchors_it_was_captured_with(
    store: Store, repo: Path
) -> None:
    captured = _anchors(repo)
    proposed = _propose(store, captured)
    (repo / "src" / "a.py").write_text("def a():\n    return backoff()\n")

    _, item, how = inbox.accept(store, proposed.id, project="billing")

    assert how == "created"
    with store.read() as tx:
        assert anchors_of(connection_of(tx), [item.id]) == {item.id: list(captured)}
    files = staleness(store, [item.id])[item.id]
    assert [(f.path, f.stale) for f in files] == [("src/a.py", True), ("src/b.py", False)]


def test_accepting_a_candidate_the_store_knows_anchors_the_item_it_reinforces(
    store: Store, repo: Path
) -> None:
    known, _ = store.remember(TEXT, kind="gotcha", project="billing")
    proposed = _propose(store, _anchors(repo)[:1])

    _, item, how = inbox.accept(store, proposed.id, project="billing")

    assert (how, item.id) == ("reinforced", known.id)
    with store.read() as tx:
        assert [a.path for a in anchors_of(connection_of(tx), [known.id])[known.id]] == ["src/a.py"]


def test_a_rejected_candidate_anchors_nothing(store: Store, repo: Path) -> None:
    proposed = _propose(store, _anchors(repo))

    inbox.reject(store, proposed.id)

    with store.read() as tx:
        (count,) = connection_of(tx).execute("SELECT count(*) FROM item_anchors").fetchone()
    assert count == 0


def test_the_json_shape_names_the_files_and_never_the_repository_s_folder(
    store: Store, repo: Path
) -> None:
    lines = anchor_file(repo, "src/b.py", 1, 2, NOW)

    shown = _propose(store, (_anchors(repo)[0], lines)).to_dict()

    assert shown["about"] == ["src/a.py", "src/b.py:1-2"]
    assert str(repo) not in json.dumps(shown)
