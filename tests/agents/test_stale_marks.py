"""Agents see that an item may be stale once the file it is anchored to changed: the MCP
`recall` tool, the prompt hook's lines and the session brief say so beside the item; and the
brief leaves out an item past the date it held until."""

import subprocess
from pathlib import Path

from memmesh.agents.brief import render
from memmesh.agents.prompt import block, recall_lines
from memmesh.agents.tools import Tools
from memmesh.local.anchors import anchor_file, save
from memmesh.local.digest import digest
from memmesh.local.store import Store
from memmesh.local.validity import set_validity

TEXT = "retry() in the billing worker gives up after 3 attempts"
QUESTION = "how many attempts does retry make in the billing worker"


def _anchored(store: Store, tmp_path: Path) -> tuple[str, Path]:
    repo = tmp_path / "billing"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    source = repo / "worker.py"
    source.write_text("def retry():\n    return 3\n")
    item, _ = store.remember(TEXT, kind="gotcha", project="billing")
    with store.transaction() as tx:
        save(tx, item.id, [anchor_file(repo, "worker.py", 0, 0, store.clock())])
    return item.id, source


def test_the_recall_tool_says_a_hit_may_be_stale_once_its_file_changed(
    home: Path, store: Store, tmp_path: Path
) -> None:
    item_id, source = _anchored(store, tmp_path)
    tools = Tools(home, store)
    (fresh,) = tools.recall(QUESTION, project="billing")["hits"]
    assert fresh["id"] == item_id
    assert "stale" not in fresh

    source.write_text("def retry():\n    return settings.RETRY_ATTEMPTS\n")

    (stale,) = tools.recall(QUESTION, project="billing")["hits"]
    assert stale["stale"].startswith("may be stale: worker.py changed since ")
    assert str(tmp_path) not in stale["stale"]


def test_the_prompt_hook_line_ends_with_the_stale_mark(
    home: Path, store: Store, tmp_path: Path
) -> None:
    _, source = _anchored(store, tmp_path)
    source.unlink()

    lines, _ = recall_lines(home, QUESTION, "billing", store=store)

    (line,) = lines
    assert line.stale == "may be stale: worker.py is gone"
    shown = block(lines)
    assert "may be stale: worker.py is gone" in shown
    assert len(shown.splitlines()) == 2  # the header and one line per item


def test_the_brief_puts_the_stale_mark_under_the_item_and_leaves_out_an_expired_one(
    home: Path, store: Store, tmp_path: Path
) -> None:
    _, source = _anchored(store, tmp_path)
    expired, _ = store.remember("the billing freeze holds", kind="decision", project="billing")
    with store.transaction() as tx:
        set_validity(tx, expired.id, None, 1_000_000.0, store.clock())
    source.write_text("def other():\n    pass\n")

    brief = render(digest(home, "billing"))

    lines = brief.splitlines()
    assert f"- [gotcha] {TEXT}" in lines
    under = lines[lines.index(f"- [gotcha] {TEXT}") + 1]
    assert under.startswith("   may be stale: worker.py changed since ")
    assert "billing freeze" not in brief
