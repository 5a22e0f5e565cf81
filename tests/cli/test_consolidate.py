"""`mem consolidate` and `mem resolve`, run for real: what they report, what --apply does,
the journal, taking an action back, and bad input changing nothing."""

import json
import subprocess
import sys
from pathlib import Path

from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner

REDIS = "we use Redis locks for the job queue"
POSTGRES = "we use Postgres advisory locks for the job queue"
CACHE = "CI caches node_modules; bust it by bumping CACHE_VERSION"
CACHE_AGAIN = "to bust the CI cache of node_modules, bump CACHE_VERSION"


def _remember(mem: MemRunner, text: str, *options: str, author: str = "ada") -> str:
    result = mem("remember", text, "--global", *options, "--json", env={"MEM_AUTHOR": author})
    item_id: str = json_of(result)["id"]
    return item_id


def _listed(mem: MemRunner, status: str = "active") -> dict[str, str]:
    """Every item of ``status``: id -> text."""
    items = json_of(mem("list", "--status", status, "--json"))["items"]
    return {item["id"]: item["text"] for item in items}


def test_without_apply_it_reports_and_changes_nothing(mem: MemRunner) -> None:
    _remember(mem, REDIS)
    _remember(mem, POSTGRES)
    _remember(mem, CACHE, author="bob")
    _remember(mem, CACHE_AGAIN)
    before = _listed(mem)

    report = json_of(mem("consolidate", "--json"))

    assert [sorted(g["item_ids"]) for g in report["duplicates"]] == [
        sorted(i for i, text in before.items() if "node_modules" in text)
    ]
    (contradiction,) = report["contradictions"]
    assert {contradiction["a_text"], contradiction["b_text"]} == {REDIS, POSTGRES}
    assert report["applied"] is None
    assert _listed(mem) == before
    text = mem("consolidate").stdout
    assert "1 group of duplicates, 1 contradiction" in text
    assert "mem resolve A B --keep A|B|both" in text


def test_apply_merges_keeping_both_authors_and_undo_takes_it_back(mem: MemRunner) -> None:
    first = _remember(mem, CACHE, author="bob")
    second = _remember(mem, CACHE_AGAIN, author="ada")

    applied = json_of(mem("consolidate", "--apply", "--json"))["applied"]

    (entry,) = applied
    assert entry["action"] == "merge"
    assert sorted(entry["item_ids"]) == sorted([first, second])
    merged = json_of(mem("show", entry["result_id"], "--json"))["item"]
    assert {merged["author"], *merged["coauthors"]} == {"ada", "bob"}
    assert set(_listed(mem)) == {entry["result_id"]}
    assert "into" in mem("consolidate", "--log").stdout

    undone = json_of(mem("consolidate", "--undo", entry["id"], "--json"))["undone"]

    assert undone["undone_at"] is not None
    assert set(_listed(mem)) == {first, second}
    again = mem("consolidate", "--undo", entry["id"])
    assert again.returncode == 2
    assert "taken back already" in error_line(again)
    assert set(_listed(mem)) == {first, second}


def test_an_expired_item_is_archived_by_apply_and_restored_by_undo(mem: MemRunner) -> None:
    freeze = _remember(mem, "code freeze for the release branch", "--until", "2020-01-02")

    report = json_of(mem("consolidate", "--json"))
    assert [(d["id"], d["why"]) for d in report["decay"]] == [(freeze, "expired")]
    assert "nothing relevant" in mem("recall", "code freeze release branch").stdout

    (entry,) = json_of(mem("consolidate", "--apply", "--only", "decay", "--json"))["applied"]
    assert freeze in _listed(mem, "archived")
    mem("consolidate", "--undo", entry["id"])
    assert freeze in _listed(mem)


def test_resolve_keeps_one_or_both_and_both_is_never_raised_again(mem: MemRunner) -> None:
    redis = _remember(mem, REDIS)
    postgres = _remember(mem, POSTGRES)

    kept = mem("resolve", redis, postgres, "--keep", "both")
    assert kept.returncode == 0, kept.stderr
    assert json_of(mem("consolidate", "--json"))["contradictions"] == []

    entry = json_of(mem("resolve", redis, postgres, "--keep", "A", "--json"))["entry"]
    assert set(_listed(mem)) == {redis}
    mem("consolidate", "--undo", entry["id"])
    assert set(_listed(mem)) == {redis, postgres}


def test_bad_input_is_refused_in_one_line_and_changes_nothing(mem: MemRunner) -> None:
    redis = _remember(mem, REDIS)
    before = _listed(mem)
    cases = [
        (["consolidate", "--undo", "0123abcd"], 2, "no consolidation entry"),
        (["consolidate", "--only", "decay"], 2, "--only goes with --apply"),
        (["consolidate", "--apply", "--log"], 2, "give one of"),
        (["consolidate", "--half-life", "0"], 2, "half-life"),
        (["resolve", redis, redis, "--keep", "a"], 2, "two different items"),
        (["resolve", redis, "ZZZZZZZZ", "--keep", "b"], 1, "ZZZZZZZZ"),
        (["resolve", redis, redis, "--keep", "neither"], 2, "--keep"),
    ]
    for words, code, said in cases:
        result = mem(*words)
        assert (result.returncode, result.stdout) == (code, ""), (words, result.stderr)
        assert said in result.stderr, (words, result.stderr)
        assert "Traceback" not in result.stderr
    assert _listed(mem) == before
    assert json_of(mem("consolidate", "--log", "--json"))["entries"] == []


def test_remember_about_a_file_then_recall_says_it_may_be_stale_once_it_changes(
    mem: MemRunner, tmp_path: Path
) -> None:
    repo = tmp_path / "cwd"
    repo.mkdir(exist_ok=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    source = repo / "retry.py"
    source.write_text("def attempts():\n    return 3\n\n\ndef other():\n    pass\n")
    _remember(mem, "attempts() gives up after 3 tries", "--about", "retry.py:1-2")

    fresh = json_of(mem("recall", "how many tries before attempts gives up", "--json"))
    assert fresh["hits"][0]["stale"] == []
    source.write_text("def other():\n    pass\n\n\ndef attempts():\n    return 3\n")
    moved = json_of(mem("recall", "how many tries before attempts gives up", "--json"))
    assert moved["hits"][0]["stale"] == []

    source.write_text("def attempts():\n    return settings.ATTEMPTS\n")
    stale = json_of(mem("recall", "how many tries before attempts gives up", "--json"))
    (changed,) = stale["hits"][0]["stale"]
    assert changed["path"] == "retry.py:1-2"
    assert not changed["gone"]
    assert str(repo) not in str(stale)
    assert "may be stale: retry.py:1-2 changed since" in mem("recall", "attempts tries").stdout
    assert "retry.py:1-2" in mem("consolidate").stdout


def test_recall_as_of_answers_with_what_held_then(mem: MemRunner) -> None:
    old = _remember(mem, "deploys go out with helm charts")
    mem("revise", old, "deploys go out with kustomize overlays")

    now = json_of(mem("recall", "how do deploys go out", "--json"))
    assert [hit["text"] for hit in now["hits"]] == ["deploys go out with kustomize overlays"]
    long_ago = json_of(mem("recall", "how do deploys go out", "--as-of", "2001-01-01", "--json"))
    assert long_ago["hits"] == []
    assert long_ago["as_of"] == "2001-01-01T23:59:59+00:00"
    bad = mem("recall", "deploys", "--as-of", "yesterday")
    assert bad.returncode == 2
    assert "is not a date" in bad.stderr


def test_the_session_brief_says_what_the_last_recorded_run_left_to_tidy(mem: MemRunner) -> None:
    _remember(mem, REDIS)
    _remember(mem, POSTGRES)
    assert "memory to tidy" not in mem("hook", "brief", "--project", "global").stdout

    assert mem("consolidate", "--record").returncode == 0

    brief = mem("hook", "brief", "--project", "global").stdout
    assert brief.rstrip().endswith("memory to tidy: 1 contradiction (`mem consolidate`)")
    assert len(brief.rstrip()) <= 600


VAULT = "deploy secrets live in Vault"
MANAGER = "deploy secrets live in AWS Secrets Manager"
# A judge that finds what the word rules let pass (a shared word, "secrets", splits the second
# name): it says two texts about where secrets live contradict, and keeps what it was given.
JUDGE = """
import json, sys
given = json.load(sys.stdin)
open(sys.argv[1], "w").write(json.dumps(given))
print(json.dumps([
    {"id": p["id"], "relation": "contradicts", "reason": "one vault, not two"}
    for p in given["pairs"] if "secrets" in p["a"]["text"] and "secrets" in p["b"]["text"]
]))
"""


def test_the_judge_command_has_the_last_word_on_the_pairs_the_rules_let_pass(
    mem: MemRunner, tmp_path: Path
) -> None:
    _remember(mem, VAULT)
    _remember(mem, MANAGER, author="bob")
    alone = json_of(mem("consolidate", "--json"))
    assert alone["contradictions"] == []
    assert len(alone["duplicates"]) == 1  # the words and the cosine take them for one
    judge = tmp_path / "judge.py"
    judge.write_text(JUDGE)
    seen = tmp_path / "seen.json"
    command = f"{sys.executable} {judge} {seen}"

    report = json_of(mem("consolidate", "--json", env={"MEM_JUDGE_COMMAND": command}))

    (found,) = report["contradictions"]
    assert report["duplicates"] == []
    assert {found["a_text"], found["b_text"]} == {VAULT, MANAGER}
    assert found["reason"] == "one vault, not two"
    (pair,) = json.loads(seen.read_text())["pairs"]
    assert {pair["a"]["author"], pair["b"]["author"]} == {"ada", "bob"}


def test_a_judge_that_fails_leaves_the_rules_verdicts_and_says_why(mem: MemRunner) -> None:
    _remember(mem, REDIS)
    _remember(mem, POSTGRES)
    _remember(mem, VAULT)
    _remember(mem, MANAGER)
    broken = f"{sys.executable} -c \"print('not json')\""

    result = mem("consolidate", "--json", env={"MEM_JUDGE_COMMAND": broken})

    assert result.returncode == 0
    assert len(json.loads(result.stdout)["contradictions"]) == 1
    warning = json.loads(result.stderr)
    assert warning["code"] == "judge_failed"
    assert "did not print JSON" in warning["warning"]


def test_as_of_a_date_an_item_holds_through_its_until_day_and_not_before_its_from_day(
    mem: MemRunner,
) -> None:
    until = _remember(mem, "the code freeze holds on the release branch", "--until", "2030-12-20")
    start = _remember(mem, "the release branch opens for merges", "--valid-from", "2030-12-21")

    def found(day: str) -> set[str]:
        data = json_of(mem("recall", "release branch", "--as-of", day, "--json"))
        return {hit["id"] for hit in data["hits"]}

    assert found("2030-12-20") == {until}
    assert found("2030-12-21") == {start}
