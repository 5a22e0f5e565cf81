"""Real servers for tests: uvicorn in a thread, or `mem coordinator serve` as a process."""

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import uvicorn
from starlette.types import ASGIApp

from memmesh._processes import stop_process
from memmesh.net.server import free_port
from memmesh.net.tls import Certificate


@contextmanager
def running(
    app: ASGIApp,
    *,
    limit_concurrency: int | None = None,
    port: int | None = None,
    tls: Certificate | None = None,
) -> Iterator[str]:
    """Serve ``app`` with uvicorn on 127.0.0.1 in a thread (on ``port``, or a free one; over
    https with ``tls``); yields its URL."""
    port = port or free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="error",
        access_log=False,
        limit_concurrency=limit_concurrency,
        lifespan="off",
        ssl_certfile=tls.cert_path if tls else None,
        ssl_keyfile=tls.key_path if tls else None,
    )
    with in_a_thread(uvicorn.Server(config)):
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}"


@contextmanager
def in_a_thread(server: uvicorn.Server, *run_args: object) -> Iterator[None]:
    """``server.run(*run_args)`` in a thread, once it has started, stopped on leaving."""
    thread = threading.Thread(target=server.run, args=run_args, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=10)


class CoordinatorProcess:
    """`mem coordinator serve` in a real process, which tests may kill and restart.

    ``args`` go on its command line (``--tls``, say); what it prints goes to :attr:`log`.
    """

    def __init__(
        self,
        data: Path,
        *,
        team: str,
        token: str | None,
        port: int | None = None,
        workers: int = 1,
        args: Sequence[str] = (),
    ) -> None:
        self.data = data
        self.team = team
        self.token = token
        self.workers = workers
        self.args = tuple(args)
        self.port = port or free_port()
        # As `mem coordinator serve` decides (the host it listens on is always loopback here).
        scheme = "https" if {"--tls", "--tls-cert"} & set(self.args) else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        self.log = data.with_name(f"{data.name}-serve.log")
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> "CoordinatorProcess":
        env = {**os.environ}
        if self.token:
            env["MEM_TEAM_TOKEN"] = self.token
        else:
            env.pop("MEM_TEAM_TOKEN", None)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "memmesh", "coordinator", "serve", "--data", str(self.data),
                 "--port", str(self.port), "--workers", str(self.workers), "--team", self.team,
                 *self.args],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )  # fmt: skip
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"the coordinator exited with {self.process.returncode}: {self.output()}"
                )
            try:
                # Only whether it answers: the certificate is checked by the tests' clients.
                probe = httpx.get(f"{self.url}/healthz", timeout=0.5, verify=False)  # noqa: S501
                if probe.status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError("the coordinator did not start within 20 s")

    def output(self) -> str:
        """Everything it printed so far."""
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def join_code(self) -> str:
        """The first admin's join code it wrote to its data folder."""
        return (self.data / "admin-join-code").read_text(encoding="utf-8").strip()

    def kill(self) -> None:
        """SIGKILL: no chance to clean up, as in a crash."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def stop(self) -> None:
        """SIGTERM and wait."""
        if self.process is not None:
            stop(self.process)


def stop(process: "subprocess.Popen[bytes]") -> None:
    """SIGTERM ``process`` and wait for it; SIGKILL it when it does not end within 10 s."""
    stop_process(process)
