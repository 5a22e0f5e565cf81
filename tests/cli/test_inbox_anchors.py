"""A fix captured from a session, through the real command line and the page: `mem ingest` and
the capture hook anchor the gotcha to the file it edited, `mem inbox` and the page's inbox
say what it is about, the accepted item keeps the anchor (`mem show`), and `mem recall` says
it may be stale once the file changes; a file outside any repository or deleted before
capture gives no anchor and no error."""

import json
import subprocess
from pathlib import Path

from memmesh.local.anchors import staleness
from memmesh.local.hooklog import last_run
from tests.agents.test_transcripts_anchors import claude_session
from tests.cli._output import json_of
from tests.conftest import MemRunner
from tests.web._page import serving

QUESTION = "pytest fails importing retry from senders"


def _repo(mem: MemRunner) -> Path:
    """The folder `mem` runs in, made a real git repository holding ``src/senders.py``."""
    repo = Path(mem.cwd)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "src").mkdir()
    (repo / "src" / "senders.py").write_text("def send(hook):\n    return retry(hook)\n")
    return repo


def test_a_captured_fix_is_shown_with_its_file_and_its_item_may_go_stale(
    mem: MemRunner, tmp_path: Path
) -> None:
    repo = _repo(mem)
    transcript = claude_session(tmp_path, str(repo), str(repo / "src" / "senders.py"))
    assert mem("ingest", "claude", str(transcript)).returncode == 0

    listed = mem("inbox")
    (candidate,) = json_of(mem("inbox", "--json"))["candidates"]

    assert listed.returncode == 0
    assert listed.stdout.endswith("\n    about: src/senders.py\n")
    assert candidate["about"] == ["src/senders.py"]
    assert str(repo) not in json.dumps(candidate["about"])
    accepted = json_of(mem("inbox", "accept", candidate["id"], "--json"))
    item = accepted["item"]["id"]
    shown = mem("show", item)
    assert "\nabout:          src/senders.py\n" in shown.stdout
    assert "may be stale" not in mem("recall", QUESTION).stdout
    (repo / "src" / "senders.py").write_text("def send(hook):\n    return backoff(hook, 3)\n")
    recalled = mem("recall", QUESTION)
    assert item[:10] in recalled.stdout.splitlines()[0]
    assert "may be stale: src/senders.py changed since" in recalled.stdout


def test_files_outside_a_repository_or_deleted_give_the_hook_no_anchor_and_no_error(
    mem: MemRunner, tmp_path: Path
) -> None:
    repo = _repo(mem)
    outside = tmp_path / "scratch.py"
    outside.write_text("x = 1\n")
    deleted = repo / "src" / "old.py"
    transcript = claude_session(tmp_path, str(repo), str(outside), str(deleted))
    hook_input = {"session_id": "s-1", "transcript_path": str(transcript), "cwd": str(repo)}

    ran = mem("hook", "capture", "--client", "claude", stdin=json.dumps(hook_input))

    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "", "")
    run = last_run(mem.home, session="s-1")
    assert run is not None
    assert run.error == ""
    (candidate,) = json_of(mem("inbox", "--json"))["candidates"]
    assert "fixed by editing" in candidate["text"]
    assert candidate["about"] == []
    assert "about:" not in mem("inbox").stdout


def test_the_page_s_inbox_says_what_a_candidate_is_about_and_accepting_keeps_it(
    mem: MemRunner, tmp_path: Path
) -> None:
    repo = _repo(mem)
    transcript = claude_session(tmp_path, str(repo), str(repo / "src" / "senders.py"))
    assert mem("ingest", "claude", str(transcript)).returncode == 0

    (candidate,) = json_of(mem("inbox", "--json"))["candidates"]

    with serving(mem.home) as page:
        html = page.get("/inbox").text
        answer = page.post("/inbox/accept", {"one": candidate["id"]})
        assert answer.status_code == 303
        found = staleness(page.store)

    assert 'class="about' in html
    assert 'about: <span class="mono">src/senders.py</span>' in html
    assert str(repo) not in html.split('class="about')[1].split("</div>")[0]
    (files,) = found.values()
    assert [(f.path, f.stale) for f in files] == [("src/senders.py", False)]
