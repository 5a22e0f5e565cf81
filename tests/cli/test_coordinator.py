"""`mem coordinator serve` through the real command line: where it agrees to listen."""

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from memmesh.net.server import free_port
from tests._servers import CoordinatorProcess
from tests.cli._output import error_line

# Listening on every interface is what these tests are about.
ALL_INTERFACES = "0.0.0.0"  # noqa: S104
REFUSAL = (
    "mem: error: refusing to listen on 0.0.0.0 without a team token: set the token variable, "
    "or listen on 127.0.0.1"
)


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def _serve(
    data: Path, port: int, *args: str, env: dict[str, str]
) -> Iterator[subprocess.Popen[str]]:
    """`mem coordinator serve` as a process, killed on the way out whatever happened."""
    process = subprocess.Popen(
        [sys.executable, "-m", "memmesh", "coordinator", "serve", "--data", str(data),
         "--port", str(port), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )  # fmt: skip
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)


@pytest.mark.parametrize(
    ("env", "args"),
    [
        pytest.param({}, (), id="no-token"),
        pytest.param({"MEM_TEAM_TOKEN": ""}, (), id="empty-token"),
        pytest.param(
            {"MEM_TEAM_TOKEN": "s3cret"}, ("--token-env", "TEAM_HOST_TOKEN"), id="other-variable"
        ),
    ],
)
def test_serve_beyond_loopback_without_a_token_refuses_and_never_listens(
    tmp_path: Path, env: dict[str, str], args: tuple[str, ...]
) -> None:
    data = tmp_path / "data"
    port = free_port()

    with _serve(data, port, "--host", ALL_INTERFACES, *args, env=env) as process:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"it kept running (listening: {_listening(port)})")
        stdout, stderr = process.communicate()

    result = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    assert result.returncode == 1
    assert error_line(result) == REFUSAL
    assert not _listening(port)
    # It refused before touching anything: not even the data folder was created.
    assert not data.exists()


def _wait_until_healthy(url: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, "the coordinator exited"
        try:
            if httpx.get(f"{url}/healthz", timeout=0.5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    pytest.fail("the coordinator did not answer within 30 s")


def test_serve_beyond_loopback_with_a_token_listens_and_demands_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    port = free_port()
    url = f"http://127.0.0.1:{port}"

    with _serve(data, port, "--host", ALL_INTERFACES, env={"MEM_TEAM_TOKEN": "s3cret"}) as process:
        _wait_until_healthy(url, process)
        anonymous = httpx.get(f"{url}/v1/info", timeout=5)
        member = httpx.get(f"{url}/v1/info", headers={"authorization": "Bearer s3cret"}, timeout=5)

    assert anonymous.status_code == 401
    assert member.status_code == 200
    assert member.json()["service"] == "memmesh-coordinator"
    assert member.json()["published"] == 0
    assert (data / "memory.db").exists()


def test_serve_on_loopback_without_a_token_needs_none(tmp_path: Path) -> None:
    process = CoordinatorProcess(tmp_path / "data", token=None)
    try:
        process.start()
        info = httpx.get(f"{process.url}/v1/info", timeout=5)
    finally:
        process.stop()

    assert info.status_code == 200
    assert info.json()["published"] == 0
