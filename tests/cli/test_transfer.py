"""`mem export`, `mem import`, `mem backup` and `mem restore` through the real command line:
their output, exit codes and exact refusals."""

import json
import sqlite3
from pathlib import Path

from memmesh.local._schema import SCHEMA_VERSION
from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner, mode_of

GITHUB_TOKEN = "ghp" + "_R8kq2ZvX4mN7pL1sT9wY3bC6dF0gH5jK8aQe"  # split: no token in this file


def _items(mem: MemRunner, home: Path) -> list[dict[str, object]]:
    items: list[dict[str, object]] = json_of(
        mem("--home", str(home), "list", "--status", "all", "--json", home=False)
    )["items"]
    return items


def test_export_then_import_moves_every_item_and_a_second_import_says_nothing_is_new(
    mem: MemRunner, tmp_path: Path
) -> None:
    old = json_of(mem("remember", "Webhooks are retried 5 times", "--kind", "gotcha", "--json"))
    mem("revise", old["id"], "Webhooks are retried 8 times")
    mem("remember", f"The release bot pushes tags with {GITHUB_TOKEN}", "--keep-secret")
    out = tmp_path / "memory.jsonl"

    exported = mem("export", "-o", str(out))

    assert (exported.returncode, exported.stdout) == (0, "exported 3 items to " + f"{out}\n")
    assert mode_of(out) == 0o600
    assert json.loads(out.read_text("utf-8").splitlines()[0])["format"] == "memmesh-export"
    other = tmp_path / "other"
    first = mem("--home", str(other), "import", str(out), home=False)
    assert first.returncode == 0
    assert first.stdout == f"imported {out}: 3 created, 0 reinforced, 0 skipped\n"
    assert first.stderr == (
        "mem: warning: redacted a secret (github-token) in 1 item before storing them; "
        "to store them as written, add --keep-secret\n"
    )
    moved = {item["id"]: item for item in _items(mem, other)}
    assert moved[old["id"]]["status"] == "superseded"
    assert any(str(i["text"]).endswith("[redacted: github-token]") for i in moved.values())
    again = mem("--home", str(other), "import", str(out), "--json", home=False)
    assert json.loads(again.stdout) == {
        "file": str(out), "created": 0, "reinforced": 0, "skipped": 3, "redacted": 0,
        "reasons": {"already there": 3}, "reinforced_items": [], "conflicts": [],
    }  # fmt: skip
    text = mem("--home", str(other), "import", str(out), home=False)
    assert text.stdout == f"nothing new in {out}: 3 items skipped\n  3 already there\n"


def test_import_refuses_a_malformed_line_naming_it_and_imports_nothing(
    mem: MemRunner, tmp_path: Path
) -> None:
    mem("remember", "Use uv, not pip")
    out = tmp_path / "memory.jsonl"
    mem("export", "-o", str(out))
    out.write_text(out.read_text("utf-8") + "{not json\n", "utf-8")
    other = tmp_path / "other"

    refused = mem("--home", str(other), "import", str(out), home=False)

    assert refused.returncode == 2
    assert error_line(refused).startswith(f"mem: error: {out} line 3: JSON is malformed")
    assert error_line(refused).endswith("; nothing was imported")
    assert _items(mem, other) == []


def test_import_of_a_notes_file_proposes_its_bullets_to_the_inbox_and_stores_no_item(
    mem: MemRunner, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Tooling\n\n- Use uv, not pip\n- Never push to main\n", "utf-8")

    done = json_of(mem("import", str(notes), "--project", "web", "--json"))

    (file,) = done["files"]
    assert [c["text"] for c in file["proposed"]] == ["Use uv, not pip", "Never push to main"]
    assert {c["project"] for c in file["proposed"]} == {"web"}
    assert _items(mem, mem.home) == []
    pending = json_of(mem("inbox", "--json"))
    assert len(pending["candidates"]) == 2


def test_project_is_refused_for_an_export_which_keeps_its_own(
    mem: MemRunner, tmp_path: Path
) -> None:
    mem("remember", "Use uv, not pip")
    out = tmp_path / "memory.jsonl"
    mem("export", "-o", str(out))

    refused = mem("import", str(out), "--project", "web")

    assert refused.returncode == 2
    assert error_line(refused) == (
        "mem: error: --project is for notes files; an export keeps its projects "
        "(see `mem import --help`)"
    )


def test_export_as_markdown_groups_by_project_then_kind(mem: MemRunner) -> None:
    mem("remember", "Use uv, not pip", "--kind", "preference", "--tag", "python")
    mem("remember", "Deploys freeze\non Fridays", "--kind", "gotcha", "--project", "ops")
    listed = {i["kind"]: i["id"][:10] for i in json_of(mem("list", "--json"))["items"]}

    shown = mem("export", "--format", "markdown")

    assert shown.stdout == (
        "# memmesh notes\n\n## global\n\n### preference\n\n"
        f"- Use uv, not pip _(python)_ `{listed['preference']}`\n\n"
        "## ops\n\n### gotcha\n\n- Deploys freeze\n  on Fridays\n"
        f"  `{listed['gotcha']}`\n"
    )


def test_backup_keeps_the_newest_n_and_restore_puts_one_back(mem: MemRunner, home: Path) -> None:
    mem("remember", "Use uv, not pip")
    made = [json_of(mem("backup", "--keep", "2", "--json")) for _ in range(3)]
    folder = home / "backups"
    assert sorted(folder.iterdir()) == sorted(Path(m["backup"]) for m in made[1:])
    assert made[2]["pruned"] == [made[0]["backup"]]
    mem("remember", "Deploys freeze on Fridays")

    restored = mem("restore", made[2]["backup"])

    assert restored.returncode == 0
    assert restored.stdout.startswith(f"restored {made[2]['backup']} (1 item); the store it ")
    assert [i["text"] for i in _items(mem, home)] == ["Use uv, not pip"]
    (aside,) = home.glob("memory.db.before-restore-*")
    assert sqlite3.connect(aside).execute("SELECT count(*) FROM items").fetchone() == (2,)


def test_restore_refuses_a_newer_schema_or_a_foreign_file_and_replaces_nothing(
    mem: MemRunner, home: Path, tmp_path: Path
) -> None:
    mem("remember", "Use uv, not pip")
    copy = Path(json_of(mem("backup", str(tmp_path / "b"), "--json"))["backup"])
    conn = sqlite3.connect(copy)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    before = (home / "memory.db").read_bytes()

    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n" * 20, "utf-8")

    newer = mem("restore", str(copy))
    foreign = mem("restore", str(notes))

    assert newer.returncode == 1
    assert error_line(newer) == (
        f"mem: error: {copy} was not restored: its schema version {SCHEMA_VERSION + 1} is "
        f"newer than this memmesh reads ({SCHEMA_VERSION}); upgrade memmesh; nothing was "
        "replaced"
    )
    assert foreign.returncode == 1
    assert error_line(foreign) == (
        f"mem: error: {notes} was not restored: it is not a SQLite database; nothing was replaced"
    )
    assert (home / "memory.db").read_bytes() == before
    assert sorted(p.name for p in home.iterdir() if "restor" in p.name) == []


def test_a_markdown_export_imported_elsewhere_proposes_the_same_texts_kinds_and_projects(
    mem: MemRunner, tmp_path: Path
) -> None:
    texts = [
        ("Use uv, not pip", "preference", "global", ("--tag", "python")),
        ("Deploys freeze\non Fridays", "gotcha", "ops", ()),
        ("Run `make lint` before pushing", "command", "ops", ()),
    ]
    for text, kind, project, extra in texts:
        where = ("--global",) if project == "global" else ("--project", project)
        assert mem("remember", text, "--kind", kind, *where, *extra).returncode == 0
    notes = tmp_path / "notes.md"
    assert mem("export", "--format", "markdown", "-o", str(notes)).returncode == 0
    other = tmp_path / "other"

    assert mem("--home", str(other), "import", str(notes), home=False).returncode == 0
    candidates = json_of(mem("--home", str(other), "inbox", "--json", home=False))["candidates"]

    proposed = {(c["text"], c["kind"], c["project"]) for c in candidates}
    # A text's line breaks come back as spaces: a bullet's lines are one paragraph.
    assert proposed == {(" ".join(t.split()), k, p) for t, k, p, _ in texts}
    assert _items(mem, other) == []


def test_import_refuses_an_item_id_not_shaped_as_the_stores_naming_its_line(
    mem: MemRunner, tmp_path: Path
) -> None:
    mem("remember", "Use uv, not pip")
    mem("remember", "Deploys freeze on Fridays")
    out = tmp_path / "memory.jsonl"
    mem("export", "-o", str(out))
    header, first, second = out.read_text("utf-8").splitlines()
    record = json.loads(second)
    record["id"] = "../../etc/passwd"
    out.write_text(f"{header}\n{first}\n{json.dumps(record)}\n", "utf-8")
    other = tmp_path / "other"

    refused = mem("--home", str(other), "import", str(out), home=False)

    assert refused.returncode == 2
    assert error_line(refused) == (
        f"mem: error: {out} line 3: item id '../../etc/passwd' is not an item id (26 "
        "characters of Crockford base32, as memmesh makes them); nothing was imported"
    )
    assert _items(mem, other) == []


def test_import_refuses_an_overlong_line_without_holding_it_in_memory(
    mem: MemRunner, tmp_path: Path
) -> None:
    from tests._rss import peak_bytes

    mem("remember", "Use uv, not pip")
    small = tmp_path / "memory.jsonl"
    mem("export", "-o", str(small))
    header, item = small.read_text("utf-8").splitlines()
    record = json.loads(item)
    record["text"] = "x" * (40 << 20)
    big = tmp_path / "big.jsonl"
    big.write_text(f"{header}\n{json.dumps(record)}\n", "utf-8")

    baseline = peak_bytes(tmp_path / "h1", mem.cwd, "import", str(small))
    peak = peak_bytes(tmp_path / "h2", mem.cwd, "import", str(big))
    refused = mem("--home", str(tmp_path / "h3"), "import", str(big), home=False)

    assert peak - baseline < 16 << 20, f"{(peak - baseline) >> 20} MiB more than a small file"
    assert refused.returncode == 2
    assert error_line(refused) == (
        f"mem: error: {big} line 2: longer than 64 KiB, more than any item takes; nothing "
        "was imported"
    )


def test_restore_refuses_a_backup_holding_schema_objects_memmesh_does_not_define(
    mem: MemRunner, home: Path, tmp_path: Path
) -> None:
    mem("remember", "Use uv, not pip")
    copy = Path(json_of(mem("backup", str(tmp_path / "b"), "--json"))["backup"])
    conn = sqlite3.connect(copy)
    conn.executescript(
        "CREATE TABLE loot (x);"
        "CREATE VIEW peek AS SELECT text FROM items;"
        "CREATE TRIGGER steal AFTER INSERT ON items BEGIN INSERT INTO loot VALUES (new.text);"
        " END;"
    )
    conn.close()
    before = (home / "memory.db").read_bytes()

    refused = mem("restore", str(copy))
    unchanged = (home / "memory.db").read_bytes() == before
    after = mem("remember", "Deploys freeze on Fridays")

    assert refused.returncode == 1
    assert error_line(refused) == (
        f"mem: error: {copy} was not restored: it holds schema objects memmesh does not define "
        "(table loot, trigger steal, view peek); nothing was replaced"
    )
    assert unchanged
    assert after.returncode == 0, after.stderr
    assert sorted(p.name for p in home.iterdir() if "restor" in p.name) == []
    assert len(_items(mem, home)) == 2
