"""`mem remember` with a secret in the text, through the real command line: the store keeps
``[redacted: <detector>]`` instead, and says so; ``--keep-secret`` keeps it as written, and
then the item can never be published, not even with ``--force``."""

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import yaml

from memmesh.registry import create_identity
from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner

# Split so that this file does not itself look like it holds a token.
GITHUB_TOKEN = "ghp" + "_R8kq2ZvX4mN7pL1sT9wY3bC6dF0gH5jK8aQe"
RELEASE = f"The release bot pushes tags with {GITHUB_TOKEN}"
REDACTED = "The release bot pushes tags with [redacted: github-token]"


def _raw_store(home: Path) -> bytes:
    """Every byte of the store's files: the database, its WAL and shared memory."""
    return b"".join(path.read_bytes() for path in sorted(home.glob("memory.db*")))


def _stored_text(mem: MemRunner, item_id: str) -> str:
    text: str = json_of(mem("show", item_id, "--json"))["item"]["text"]
    return text


def test_remember_stores_a_github_token_redacted_and_says_so(mem: MemRunner, home: Path) -> None:
    result = mem("remember", RELEASE)
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        "mem: warning: redacted a secret (github-token) before storing it; "
        "to store the text as written, add --keep-secret\n"
    )
    item_id = result.stdout.strip()
    assert _stored_text(mem, item_id) == REDACTED
    assert GITHUB_TOKEN.encode() not in _raw_store(home)


def test_remember_json_names_what_it_redacted(mem: MemRunner) -> None:
    text = f"Deploy with {GITHUB_TOKEN}; staging DB_PASSWORD=Summer2024!"
    data = json_of(mem("remember", text, "--json"))
    assert data["redacted"] == ["github-token", "password-assignment"]
    assert data["item"]["text"] == (
        "Deploy with [redacted: github-token]; staging DB_PASSWORD=[redacted: password-assignment]"
    )


def test_each_family_a_newcomer_pasted_is_redacted(mem: MemRunner, home: Path) -> None:
    notes = {
        "the staging password is hunter2-Xq9!": "password-in-prose",
        "mysql -u root -p'Xq9!hunter' shop": "cli-password-flag",
        "psql --password=Xq9hunter2 -h db": "cli-password-flag",
        "SECRET_KEY=my-app-secret-2024": "secret-assignment",
        "CI pushes with dckr_pat_" + "Xk3Jd9Qw2LmN7pRt4VbY8ZcHe1s": "docker-hub-token",
        "Twilio key SK" + "9c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f": "twilio-api-key",
    }
    for text, detector in notes.items():
        data = json_of(mem("remember", text, "--json"))
        assert data["redacted"] == [detector], text
        assert f"[redacted: {detector}]" in data["item"]["text"]
    stored = _raw_store(home)
    for secret in (b"hunter2-Xq9!", b"Xq9!hunter", b"Xq9hunter2", b"my-app-secret-2024"):
        assert secret not in stored


def test_a_tag_holding_a_secret_is_dropped(mem: MemRunner) -> None:
    data = json_of(mem("remember", "CI publishes on tags", "--tag", "ci", "--tag", GITHUB_TOKEN,
                       "--json"))  # fmt: skip
    assert data["item"]["tags"] == ["ci"]
    assert data["redacted"] == ["github-token"]


def test_the_same_secret_again_reinforces_the_redacted_item(mem: MemRunner) -> None:
    first = json_of(mem("remember", RELEASE, "--json"))
    again = json_of(mem("remember", RELEASE, "--json"))
    assert again["status"] == "reinforced"
    assert again["id"] == first["id"]


def test_text_without_a_secret_is_stored_as_written_without_a_warning(mem: MemRunner) -> None:
    result = mem("remember", "The billing service retries webhooks 5 times", "--json")
    assert result.stderr == ""
    assert "redacted" not in json_of(result)


def test_keep_secret_stores_the_text_as_written_and_warns(mem: MemRunner) -> None:
    result = mem("remember", RELEASE, "--keep-secret", "--json")
    warning = "kept a secret (github-token) as written: this item can never be published"
    assert json.loads(result.stderr) == {"warning": warning, "code": "secret_kept"}
    data = json_of(result)
    assert data["item"]["text"] == RELEASE
    assert data["kept_secrets"] == ["github-token"]
    assert "redacted" not in data


def test_a_kept_secret_can_never_be_published_not_even_with_force(
    mem: MemRunner, home: Path
) -> None:
    create_identity(home)
    policy = {
        "version": 1,
        "team": "acme",
        "identity": {"name": "ada"},
        "coordinator": "http://127.0.0.1:8400",
        "share": {"kinds": ["fact"]},
    }
    (home / "team.yaml").write_text(yaml.safe_dump(policy), encoding="utf-8")
    item_id = json_of(mem("remember", RELEASE, "--keep-secret", "--json"))["id"]

    for extra in ((), ("--force",)):
        refused = mem("team", "publish", item_id, *extra)
        assert refused.returncode == 3, refused.stderr
        assert error_line(refused) == (
            "mem: error: refused by policy, nothing was published "
            f"({item_id}: secret detected: github-token)"
        )
        assert GITHUB_TOKEN not in refused.stdout + refused.stderr
    with closing(sqlite3.connect(home / "memory.db")) as conn:
        assert conn.execute("SELECT count(*) FROM registry").fetchone() == (0,)
