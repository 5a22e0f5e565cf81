"""`mem inbox` through the real command line: notes files proposed, candidates listed,
accepted (created or reinforced), edited and rejected, with their exact messages and exit
codes."""

from pathlib import Path

from tests.cli._output import error_line, json_error, json_of
from tests.conftest import MemRunner

NOTES = Path(__file__).parent.parent / "agents" / "notes"


def _pending(mem: MemRunner) -> list[dict[str, object]]:
    candidates: list[dict[str, object]] = json_of(mem("inbox", "--json"))["candidates"]
    return candidates


def test_add_notes_proposes_and_the_inbox_lists_them_newest_first(
    mem: MemRunner, tmp_path: Path
) -> None:
    assert mem("inbox").stdout == "the inbox is empty\n"
    notes = NOTES / "cursorrules"

    added = mem("inbox", "add-notes", str(notes), str(tmp_path / "missing.md"))

    assert added.returncode == 1
    assert added.stdout == (
        f"{notes}: proposed 4, already pending 0, skipped 0\nreview them with `mem inbox`\n"
    )
    assert added.stderr == (
        f"mem: warning: {tmp_path / 'missing.md'}: No such file or directory; nothing of it "
        "was added to the inbox\n"
    )
    pending = _pending(mem)
    assert [c["text"] for c in pending] == [
        "Run `npm run lint` before pushing",
        "Prefer named exports over default exports.",
        "Always use functional components.",
        "You are an expert in TypeScript and React.",
    ]
    listed = mem("inbox").stdout.splitlines()
    shown, rest = listed[4].split(maxsplit=1)
    assert str(pending[2]["id"]).startswith(shown)
    assert len(shown) >= 10
    assert (rest, listed[5]) == (
        f"[convention, default project]  {notes}:2", "    Always use functional components.",
    )  # fmt: skip
    again = mem("inbox", "add-notes", str(notes), "--project", "web")
    assert again.stdout.startswith(f"{notes}: proposed 4, already pending 0")
    same = mem("inbox", "add-notes", str(notes), "--project", "web")
    assert (same.returncode, same.stdout) == (
        0, f"{notes}: proposed 0, already pending 4, skipped 0\n",
    )  # fmt: skip


def test_accept_creates_an_item_or_reinforces_the_one_the_store_knows(mem: MemRunner) -> None:
    mem("remember", "Always use functional components.", "--project", "web")
    mem("inbox", "add-notes", str(NOTES / "cursorrules"), "--project", "web")
    first, second, third, fourth = (str(c["id"]) for c in _pending(mem))

    dry = json_of(mem("inbox", "accept", "--all", "--dry-run", "--json"))
    assert [(p["candidate"], p["would"]) for p in dry["planned"]] == [
        (fourth, "create"), (third, "reinforce"), (second, "create"), (first, "create"),
    ]  # fmt: skip
    assert len(_pending(mem)) == 4

    reinforced = mem("inbox", "accept", third[:-1])  # a prefix (one batch shares 10 characters)
    assert reinforced.returncode == 0, reinforced.stderr
    assert reinforced.stdout.startswith("reinforced an existing item ")
    assert reinforced.stdout.endswith(" (1x)\n")
    created = json_of(mem("inbox", "accept", first, "--kind", "command", "--json"))
    assert (created["status"], created["item"]["kind"], created["item"]["project"]) == (
        "created", "command", "web",
    )  # fmt: skip
    assert created["candidate"]["item_id"] == created["item"]["id"]

    again = mem("inbox", "accept", first)
    assert (again.returncode, error_line(again)) == (
        1, f"mem: error: inbox candidate {first} was accepted already as item "
        f"{created['item']['id']}",
    )  # fmt: skip
    rest = mem("inbox", "accept", "--all")
    assert rest.stdout.splitlines()[-1] == "created 2 items, reinforced 0"
    assert _pending(mem) == []
    assert len(json_of(mem("list", "--json"))["items"]) == 4


def test_edit_screens_secrets_and_reject_removes_a_candidate(mem: MemRunner) -> None:
    mem("inbox", "add-notes", str(NOTES / "cursorrules"))
    first, second, *_ = (str(c["id"]) for c in _pending(mem))
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"

    edited = mem("inbox", "edit", first, f"Lint with token {token}")

    assert edited.returncode == 0
    assert edited.stderr == "mem: warning: redacted a secret (github-token) before storing it\n"
    assert _pending(mem)[0]["text"] == "Lint with token [redacted: github-token]"
    rejected = mem("inbox", "reject", second)
    assert rejected.stdout.startswith("rejected ")
    assert [c["id"] for c in _pending(mem)][:1] == [first]
    assert mem("inbox", "reject", "--all").stdout == "rejected 3 candidates\n"
    assert _pending(mem) == []


def test_inbox_ids_are_refused_as_items_are(mem: MemRunner) -> None:
    mem("inbox", "add-notes", str(NOTES / "cursorrules"))
    shared = str(_pending(mem)[0]["id"])[:10]

    ambiguous = mem("inbox", "reject", shared)
    short = mem("inbox", "accept", "01J")
    missing = json_error(mem("inbox", "edit", "ZZZZZZ", "x", "--json"))
    neither = mem("inbox", "accept")

    assert ambiguous.returncode == 2
    assert error_line(ambiguous).startswith(
        f"mem: error: id prefix '{shared}' matches 4 inbox candidates; give more characters: "
    )
    assert (short.returncode, error_line(short)) == (
        2, "mem: error: id prefix '01J' is too short: give at least 4 characters",
    )  # fmt: skip
    assert missing == {
        "error": "no inbox candidate with id 'ZZZZZZ' (`mem inbox` lists them)",
        "code": "candidate_not_found", "exit": 1,
    }  # fmt: skip
    assert neither.returncode == 2
    assert "give a candidate's id, or --all (not both)" in error_line(neither)
