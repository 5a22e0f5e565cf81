"""URLs on the `mem team` command line: an unsound `--advertise` or `--coordinator` is a usage
error (exit 2) that names what is wrong, and nothing is written or started."""

import subprocess

import pytest

from memmesh.policy import parse_policy
from tests.cli._output import error_line
from tests.conftest import MemRunner


def _refused(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    return error_line(result)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://ada:secret@127.0.0.1:8410", "it names a user or password"),
        ("http://127.0.0.1:8410/collect", "it has a path"),
        ("http://[::1", "it is not a URL (Invalid IPv6 URL)"),
        ("http://127.0.0.1:0", "the port must be a number from 1 to 65535"),
    ],
)
def test_serve_with_an_unsound_advertise_url_is_a_usage_error(
    mem: MemRunner, url: str, problem: str
) -> None:
    result = mem("team", "serve", "--port", "1", "--advertise", url)

    assert _refused(result) == (
        f"mem team serve: error: argument --advertise: {url!r} is not a usable URL: {problem} "
        "(see `mem team serve --help`)"
    )


def test_init_with_an_unsound_coordinator_url_is_a_usage_error_and_writes_nothing(
    mem: MemRunner,
) -> None:
    result = mem("team", "init", "--name", "ada", "--coordinator", "http://team-host:8400?x=1")

    assert _refused(result) == (
        "mem team init: error: argument --coordinator: 'http://team-host:8400?x=1' is not a "
        "usable URL: it has a query (see `mem team init --help`)"
    )
    assert not (mem.home / "team.yaml").exists()
    assert not (mem.home / "identity.key").exists()


def test_init_writes_the_coordinator_url_normalised(mem: MemRunner) -> None:
    result = mem("team", "init", "--name", "ada", "--coordinator", "HTTP://Team-Host:8400/")

    assert result.returncode == 0, result.stderr
    policy = parse_policy((mem.home / "team.yaml").read_text(encoding="utf-8"))
    assert policy.coordinator == "http://team-host:8400"
