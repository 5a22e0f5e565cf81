"""`mem revise` with a secret in the new text, through the real command line: as with `mem
remember`, the new item keeps ``[redacted: <detector>]`` instead and a warning says so;
``--keep-secret`` keeps it as written, and then the item can never be published."""

from pathlib import Path

import yaml

from memmesh.registry import create_identity
from tests.cli._output import error_line, json_of
from tests.cli.test_remember_secrets import GITHUB_TOKEN, REDACTED, RELEASE, _raw_store
from tests.conftest import MemRunner


def _remembered(mem: MemRunner, text: str = "The release bot pushes tags by hand") -> str:
    item_id: str = json_of(mem("remember", text, "--json"))["id"]
    return item_id


def test_revise_stores_a_github_token_redacted_and_says_so(mem: MemRunner, home: Path) -> None:
    old = _remembered(mem)

    result = mem("revise", old, RELEASE)

    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        "mem: warning: redacted a secret (github-token) before storing it; "
        "to store the text as written, add --keep-secret\n"
    )
    new = result.stdout.strip()
    assert json_of(mem("show", new, "--json"))["item"]["text"] == REDACTED
    assert GITHUB_TOKEN.encode() not in _raw_store(home)


def test_revise_json_names_what_it_redacted(mem: MemRunner) -> None:
    old = _remembered(mem)

    data = json_of(mem("revise", old, RELEASE, "--json"))

    assert (data["status"], data["superseded"]) == ("revised", old)
    assert data["redacted"] == ["github-token"]
    assert data["item"]["text"] == REDACTED


def test_revise_with_keep_secret_keeps_it_and_the_item_is_never_published(
    mem: MemRunner, home: Path
) -> None:
    old = _remembered(mem)
    result = mem("revise", old, RELEASE, "--keep-secret", "--json")
    data = json_of(result)
    assert data["item"]["text"] == RELEASE
    assert data["kept_secrets"] == ["github-token"]
    assert "kept a secret (github-token) as written" in result.stderr
    create_identity(home)
    policy = {
        "version": 1, "team": "acme", "identity": {"name": "tester"},
        "coordinator": "http://127.0.0.1:9", "share": {"kinds": ["fact"]},
    }  # fmt: skip
    (home / "team.yaml").write_text(yaml.safe_dump(policy), encoding="utf-8")

    refused = mem("team", "publish", data["id"], "--force")

    assert refused.returncode == 3, refused.stderr
    assert "github-token" in error_line(refused)
