"""The coordinator for any ASGI server: `uvicorn memmesh.coordinator.asgi:app`, set up by
environment variables, run here as a real uvicorn process on 127.0.0.1; a variable missing or
wrong is named in one line, and nothing starts."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx
import pytest

from memmesh.coordinator.asgi import settings_from_environment
from memmesh.coordinator.errors import CoordinatorError
from memmesh.coordinator.protocol import Info
from memmesh.coordinator.serve import CoordinatorSettings
from memmesh.embed import get_embedder
from memmesh.net.quotas import Quotas
from memmesh.net.server import free_port
from memmesh.net.tls import ensure_certificate
from memmesh.registry import create_identity
from tests._signed import signed_client
from tests.coordinator._served import TOKEN
from tests.coordinator.test_serve import disclosed, publish, search
from tests.registry._helpers import TEAM


class Uvicorn:
    """`python -m uvicorn memmesh.coordinator.asgi:app` on 127.0.0.1, with ``environ``."""

    def __init__(self, environ: Mapping[str, str], *options: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEM_")}
        where = ["--host", "127.0.0.1", "--port", str(self.port)]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "memmesh.coordinator.asgi:app", *where, *options],
            env={**env, **environ},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.errors = ""

    def wait(self) -> None:
        """Return once it answers ``/healthz``; fail if it exits first."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"uvicorn exited with {self.stop()}: {self.errors}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{self.url}/healthz", timeout=0.5).status_code == 200:
                    return
            time.sleep(0.05)
        pytest.fail("uvicorn did not answer within 30 s")

    def stop(self) -> int:
        """SIGTERM it (if it still runs) and wait; its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.ended()

    def ended(self) -> int:
        """Wait for it to exit by itself; its exit code."""
        _, errors = self.process.communicate(timeout=30)
        self.errors = errors.decode("utf-8", errors="replace")
        return self.process.returncode


@contextlib.contextmanager
def uvicorn_serving(environ: Mapping[str, str], *options: str) -> Iterator[Uvicorn]:
    server = Uvicorn(environ, *options)
    try:
        server.wait()
        yield server
    finally:
        server.stop()


def environment(data: Path, **more: str) -> dict[str, str]:
    return {
        "MEM_COORDINATOR_DATA": str(data),
        "MEM_COORDINATOR_TEAM": TEAM,
        "MEM_TEAM_TOKEN": TOKEN,
        "MEM_COORDINATOR_EMBEDDER": "hashing",
        **more,
    }


def test_uvicorn_serves_the_coordinator_its_environment_describes(tmp_path: Path) -> None:
    data = tmp_path / "coordinator"
    ada, bob = create_identity(tmp_path / "ada"), create_identity(tmp_path / "bob")

    with uvicorn_serving(environment(data)) as server:
        with signed_client(server.url, ada, team=TEAM, token=TOKEN) as client:
            info = client.get("/v1/info", Info)
        publish(server.url, ada)
        assert search(server.url, bob) == 1
    returned = server.process.returncode

    assert (info.team, info.embedder) == (TEAM, get_embedder("hashing").fingerprint)
    # uvicorn ends as the signal it was stopped by would end it, once it has shut down.
    assert returned in (0, -signal.SIGTERM), server.errors
    assert "Application shutdown complete" in server.errors
    assert "Traceback" not in server.errors
    # Closed as uvicorn shut down: the disclosure rows it kept in memory were written.
    assert disclosed(settings_from_environment(environment(data)), ada) == 1


def test_a_server_without_a_lifespan_gets_the_app_at_its_first_request(tmp_path: Path) -> None:
    ada = create_identity(tmp_path / "ada")

    with (
        uvicorn_serving(environment(tmp_path / "c"), "--lifespan", "off") as server,
        signed_client(server.url, ada, team=TEAM, token=TOKEN) as client,
    ):
        info = client.get("/v1/info", Info)

    assert info.team == TEAM
    assert "Traceback" not in server.errors


def test_uvicorn_does_not_start_without_a_team_and_says_which_variable(tmp_path: Path) -> None:
    data = tmp_path / "coordinator"
    environ = environment(data)
    del environ["MEM_COORDINATOR_TEAM"]

    server = Uvicorn(environ)
    code = server.ended()

    assert code != 0
    assert "MEM_COORDINATOR_TEAM is not set" in server.errors
    assert "Traceback" not in server.errors
    assert not data.exists()


def test_the_environment_gives_every_setting(tmp_path: Path) -> None:
    certificate = ensure_certificate(tmp_path / "tls", ["team-host.example"])
    environ = {
        "MEM_COORDINATOR_DATA": str(tmp_path / "coordinator"),
        "MEM_COORDINATOR_TEAM": TEAM,
        "MEM_COORDINATOR_URL": "https://team-host.example:8400/",
        "MEM_COORDINATOR_EMBEDDER": "wordllama",
        "MEM_COORDINATOR_DATABASE": "postgresql://memmesh@db.example/memmesh",
        "MEM_COORDINATOR_TLS_CERT": certificate.cert_path,
        "MEM_COORDINATOR_MEMBER_ITEMS": "10",
        "MEM_COORDINATOR_MEMBER_BYTES": "20",
        "MEM_COORDINATOR_TOTAL_ITEMS": "30",
        "MEM_COORDINATOR_TOTAL_BYTES": "40",
        "MEM_COORDINATOR_PRESENCES": "50",
        "MEM_TEAM_TOKEN": TOKEN,
    }

    assert settings_from_environment(environ) == CoordinatorSettings(
        data=tmp_path / "coordinator",
        team=TEAM,
        embedder="wordllama",
        token=TOKEN,
        url="https://team-host.example:8400",
        pin=certificate.pin,
        quotas=Quotas(
            member_items=10, member_bytes=20, total_items=30, total_bytes=40, presences=50
        ),
        open_without_roster=True,  # behind the team token
        loopback_peers=False,  # members reach it beyond this machine
        database="postgresql://memmesh@db.example/memmesh",
    )


@pytest.mark.parametrize(
    ("url", "token", "open_without_roster", "loopback_peers"),
    [
        (None, None, False, False),
        ("http://127.0.0.1:8400", None, True, True),
        ("https://team-host.example", None, False, False),
    ],
)
def test_an_empty_roster_is_open_only_behind_the_token_or_on_loopback(
    tmp_path: Path,
    url: str | None,
    token: str | None,
    open_without_roster: bool,
    loopback_peers: bool,
) -> None:
    environ = {"MEM_COORDINATOR_DATA": str(tmp_path), "MEM_COORDINATOR_TEAM": TEAM}
    if url:
        environ["MEM_COORDINATOR_URL"] = url

    read = settings_from_environment(environ)

    assert (read.token, read.open_without_roster, read.loopback_peers) == (
        token,
        open_without_roster,
        loopback_peers,
    )


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("MEM_COORDINATOR_DATA", "", "MEM_COORDINATOR_DATA is not set"),
        ("MEM_COORDINATOR_TEAM", "  ", "MEM_COORDINATOR_TEAM is not set"),
        ("MEM_COORDINATOR_URL", "ftp://team-host", "MEM_COORDINATOR_URL: 'ftp://team-host'"),
        ("MEM_COORDINATOR_EMBEDDER", "word2vec", "MEM_COORDINATOR_EMBEDDER: unknown embedder"),
        ("MEM_COORDINATOR_DATABASE", "mysql://db/x", "MEM_COORDINATOR_DATABASE: not a "),
        ("MEM_COORDINATOR_MEMBER_ITEMS", "lots", "MEM_COORDINATOR_MEMBER_ITEMS: 'lots' is not"),
        ("MEM_COORDINATOR_PRESENCES", "0", "MEM_COORDINATOR_PRESENCES: must be 1 or more"),
        ("MEM_COORDINATOR_TLS_CERT", "/nowhere/cert.pem", "MEM_COORDINATOR_TLS_CERT: "),
    ],
)
def test_a_variable_missing_or_wrong_is_named(
    tmp_path: Path, variable: str, value: str, said: str
) -> None:
    environ = {"MEM_COORDINATOR_DATA": str(tmp_path / "c"), "MEM_COORDINATOR_TEAM": TEAM}
    environ[variable] = value

    with pytest.raises(CoordinatorError) as refused:
        settings_from_environment(environ)

    assert said in refused.value.message
    assert not (tmp_path / "c").exists()


def test_every_problem_is_named_at_once() -> None:
    with pytest.raises(CoordinatorError) as refused:
        settings_from_environment({"MEM_COORDINATOR_TOTAL_BYTES": "-1"})

    message = refused.value.message
    for said in (
        "MEM_COORDINATOR_DATA is not set",
        "MEM_COORDINATOR_TEAM is not set",
        "MEM_COORDINATOR_TOTAL_BYTES: must be 1 or more",
    ):
        assert said in message
