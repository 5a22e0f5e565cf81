"""`mem coordinator serve` through the real command line: where it agrees to listen, and
that it serves one named team."""

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
         "--port", str(port), "--team", "acme", *args],
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
    process = CoordinatorProcess(tmp_path / "data", team="acme", token=None)
    try:
        process.start()
        info = httpx.get(f"{process.url}/v1/info", timeout=5)
    finally:
        process.stop()

    assert info.status_code == 200
    assert info.json()["published"] == 0


def _children(pid: int) -> list[int]:
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            children.append(int(stat.parent.name))
    return children


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process tree from /proc")
def test_several_workers_share_one_port_see_each_others_writes_and_stop_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memmesh.local.store import Store
    from memmesh.team.member import Member as Asker
    from tests.team._team import TEAM, TOKEN, Team

    monkeypatch.setenv("MEM_TEAM_TOKEN", TOKEN)
    process = CoordinatorProcess(tmp_path / "data", team=TEAM, token=TOKEN, workers=3)
    try:
        process.start()
        assert process.process is not None
        workers = _children(process.process.pid)
        assert len(workers) == 3
        team = Team(tmp_path, process.url)
        ada, bob = team.add("ada"), team.add("bob")
        ada.share("Deploys go through the blue-green script in ops/deploy.sh")
        with Store(bob.home, author="bob") as store:
            asker = Asker(store, bob.identity, bob.policy(), reconcile_first=False)
            # Each ask opens new connections, which the kernel hands to any of the workers.
            answers = [
                [h.text for h in asker.ask_team("how do deploys work", k=3, project="global").hits]
                for _ in range(12)
            ]
        assert answers == [["Deploys go through the blue-green script in ops/deploy.sh"]] * 12
    finally:
        process.stop()
    assert process.process is not None
    assert process.process.returncode == 0
    assert all(not Path(f"/proc/{pid}").exists() for pid in workers)


def test_workers_must_be_a_positive_number(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "memmesh", "coordinator", "serve", "--data", str(tmp_path),
         "--workers", "0"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert "argument --workers: must be 1 or more, not 0" in error_line(result)


def test_serve_without_a_team_is_a_usage_error_and_never_listens(tmp_path: Path) -> None:
    data = tmp_path / "data"
    port = free_port()

    result = subprocess.run(
        [sys.executable, "-m", "memmesh", "coordinator", "serve", "--data", str(data),
         "--port", str(port)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    assert result.returncode == 2
    assert error_line(result) == (
        "mem coordinator serve: error: the following arguments are required: --team "
        "(see `mem coordinator serve --help`)"
    )
    assert not _listening(port)
    assert not data.exists()
