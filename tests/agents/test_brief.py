"""The session brief's text: at most 600 characters, most useful first, in each client's form."""

import json
from pathlib import Path

import pytest

from memmesh.agents.brief import MAX_CHARS, hook_output, render, working_folder
from memmesh.local.digest import Digest, Useful


def _useful(text: str, *, kind: str = "fact", reinforcements: int = 0) -> Useful:
    return Useful(
        id=f"01ID{abs(hash(text)) % 10**8:08d}",
        text=text,
        kind=kind,
        project="web",
        reinforcements=reinforcements,
        outcome_score=0.0,
    )


def test_an_empty_digest_gives_no_text() -> None:
    assert render(Digest(project="web", items=[], preferences=[])) == ""


def test_the_brief_lists_items_then_preferences() -> None:
    digest = Digest(
        project="web",
        items=[_useful("Staging deploys need the VPN", kind="gotcha")],
        preferences=[_useful("Prefer small commits", kind="preference")],
    )
    assert render(digest) == (
        "memmesh: what you know about web (recall more with memmesh):\n"
        "- [gotcha] Staging deploys need the VPN\n"
        "Preferences:\n"
        "- [preference] Prefer small commits"
    )


def test_a_global_brief_does_not_name_a_project() -> None:
    digest = Digest(project="global", items=[_useful("Python 3.11 everywhere")], preferences=[])
    assert render(digest).startswith("memmesh: what you know (recall more with memmesh):\n")


@pytest.mark.parametrize("count", [1, 5, 40])
def test_the_brief_never_exceeds_600_characters(count: int) -> None:
    items = [_useful(f"Item {n} " + "word " * 60) for n in range(count)]
    preferences = [_useful(f"Preference {n} " + "word " * 60) for n in range(count)]
    text = render(Digest(project="web", items=items, preferences=preferences))
    assert 0 < len(text) <= MAX_CHARS
    # Long items are cut with an ellipsis, never mid-way without saying so.
    assert all(line.endswith("…") for line in text.splitlines()[1:] if line.startswith("- "))


def test_the_least_useful_items_are_dropped_first_and_one_preference_stays() -> None:
    items = [_useful(f"Project fact number {n:02d} " + "x" * 90) for n in range(10)]
    preferences = [_useful(f"Preference {n} " + "y" * 90) for n in range(3)]
    text = render(Digest(project="web", items=items, preferences=preferences))
    kept = [line for line in text.splitlines() if "Project fact" in line]
    assert kept == [f"- [fact] Project fact number {n:02d} " + "x" * 90 for n in range(len(kept))]
    assert 1 <= len(kept) < 10
    assert "Preference 0" in text


def test_whitespace_in_items_is_folded_onto_one_line() -> None:
    digest = Digest(project="web", items=[_useful("Run\n  make   seed\tfirst")], preferences=[])
    assert render(digest).splitlines()[1] == "- [fact] Run make seed first"


def test_cursor_gets_its_json_answer_and_the_others_plain_text() -> None:
    assert json.loads(hook_output("cursor", "hello")) == {
        "continue": True,
        "additional_context": "hello",
    }
    assert json.loads(hook_output("cursor", "")) == {"continue": True}
    assert hook_output("claude", "hello") == "hello"
    assert hook_output(None, "hello") == "hello"


def test_the_working_folder_comes_from_the_clients_hook_input(tmp_path: Path) -> None:
    assert working_folder(json.dumps({"cwd": str(tmp_path)})) == tmp_path
    assert working_folder(json.dumps({"workspace_roots": [str(tmp_path)]})) == tmp_path


@pytest.mark.parametrize(
    "stdin",
    ["", "not json", "[1, 2]", '{"cwd": 3}', '{"cwd": "relative/path"}', '{"cwd": "/no/such"}'],
)
def test_hook_input_that_names_no_usable_folder_is_ignored(stdin: str) -> None:
    assert working_folder(stdin) is None
