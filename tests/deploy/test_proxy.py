"""deploy/proxy/: nginx, run for real in front of a real coordinator started with the command
line each example gives, on loopback. Through the proxy that ends TLS, a member joins with a
code that holds no pin (trusting the proxy's certificate), publishes and gets the item back;
through the proxy that passes TLS on, the member pins the coordinator's own certificate.

nginx is ``$MEMMESH_NGINX`` (.ci/run unpacks Debian's nginx and its stream module), else
``nginx`` on the PATH; without either these tests are skipped, except where
``MEMMESH_NGINX`` is set: there a missing nginx fails them.
"""

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

from memmesh.coordinator.invites import JoinCode
from memmesh.net.server import free_port
from memmesh.net.tls import ensure_certificate
from memmesh.policy import load_policy
from tests._servers import stop
from tests.conftest import MemRunner
from tests.deploy._commands import DEPLOY
from tests.deploy._member import Answered, join_code_from, publish_and_ask

TERMINATE = DEPLOY / "proxy" / "nginx-tls-terminate.conf"
PASSTHROUGH = DEPLOY / "proxy" / "nginx-tls-passthrough.conf"
# The paths nginx would use for its own files by default, outside the test's folder.
_MAIN = """daemon off;
worker_processes 1;
pid {folder}/nginx.pid;
{modules}
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    {http}
}}
{top}
"""


def nginx() -> str:
    """The nginx binary to run, or a skip (a failure where CI asked for one)."""
    asked = os.environ.get("MEMMESH_NGINX", "")
    found = shutil.which(asked or "nginx") or shutil.which("nginx", path="/usr/sbin")
    if asked and not (found and Path(found).samefile(asked)):
        pytest.fail(f"MEMMESH_NGINX names {asked}, which is not there: .ci/run unpacks it")
    if found is None:
        pytest.skip("no nginx on this machine (apt-get install -y nginx libnginx-mod-stream)")
    return found


def _rewritten(text: str, changes: Mapping[str, str]) -> str:
    """``text`` with each of ``changes`` made, each found exactly once."""
    for old, new in changes.items():
        assert text.count(old) == 1, f"{old!r} is not in the example once"
        text = text.replace(old, new)
    return text


def _documented_command(example: Path) -> str:
    """The `mem coordinator serve` command line the example's comments give."""
    text = example.read_text(encoding="utf-8")
    match = re.search(r"^#   (mem coordinator serve .*?)$\n#\n", text, re.M | re.S)
    assert match, f"{example.name} gives no `mem coordinator serve` command"
    return " ".join(line.lstrip("# ").rstrip("\\ ") for line in match.group(1).splitlines())


@contextmanager
def _coordinator(command: str, folder: Path) -> Iterator[str]:
    """The documented ``command`` running (with this venv's `mem`); yields its join code."""
    log = folder / "serve.log"
    words = shlex.split(command)
    assert words[:3] == ["mem", "coordinator", "serve"], words
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "memmesh", *words[1:]], stdout=subprocess.DEVNULL, stderr=out
        )
    try:
        yield join_code_from(
            lambda: log.read_text(encoding="utf-8"), alive=lambda: process.poll() is None
        )
    finally:
        stop(process)


@contextmanager
def _proxy(
    binary: str,
    folder: Path,
    port: int,
    *,
    http: str = "",
    top: str = "",
) -> Iterator[None]:
    """nginx with ``http`` inside its http {} and ``top`` at its top level, until it listens
    on ``port``."""
    modules = Path(binary).resolve().parents[1] / "lib" / "nginx" / "modules"
    stream = modules / "ngx_stream_module.so"
    conf = folder / "nginx.conf"
    conf.write_text(
        _MAIN.format(
            folder=folder,
            modules=f"load_module {stream};" if top and stream.exists() else "",
            http=http,
            top=top,
        ),
        encoding="utf-8",
    )
    errors = folder / "error.log"
    process = subprocess.Popen(
        [binary, "-p", str(folder), "-c", str(conf), "-e", str(errors)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 20
        while not _listens(port):
            assert process.poll() is None, errors.read_text(encoding="utf-8")
            assert time.monotonic() < deadline, "nginx did not listen within 20 s"
            time.sleep(0.05)
        yield
    finally:
        stop(process)


def _listens(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return False
    return True


def _through(code: str, folder: Path) -> Answered:
    return publish_and_ask(MemRunner(folder / "ada", folder), code)


def test_through_a_proxy_that_ends_tls_a_member_pins_nothing_and_gets_the_item_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary = nginx()
    proxy, port = free_port(), free_port()
    issued = ensure_certificate(tmp_path / "issued", ["127.0.0.1"])
    # The proxy's certificate is one the member's system trusts, as an authority's would be.
    monkeypatch.setenv("SSL_CERT_FILE", issued.cert_path)
    site = _rewritten(
        TERMINATE.read_text(encoding="utf-8"),
        {
            "listen 443 ssl;": f"listen 127.0.0.1:{proxy} ssl;",
            "listen [::]:443 ssl;": "",
            "server 127.0.0.1:8400;": f"server 127.0.0.1:{port};",
            "/etc/letsencrypt/live/memmesh.example.com/fullchain.pem": issued.cert_path,
            "/etc/letsencrypt/live/memmesh.example.com/privkey.pem": issued.key_path,
        },
    )
    command = _rewritten(
        _documented_command(TERMINATE),
        {
            "/var/lib/memmesh": str(tmp_path / "data"),
            "--port 8400": f"--port {port}",
            "https://memmesh.example.com": f"https://127.0.0.1:{proxy}",
        },
    )

    with _coordinator(command, tmp_path) as code, _proxy(binary, tmp_path, proxy, http=site):
        answered = _through(code, tmp_path)

    assert answered.coordinator_hits() == [answered.item]
    assert (JoinCode.decode(code).url, JoinCode.decode(code).pin) == (
        f"https://127.0.0.1:{proxy}",
        None,
    )
    policy = load_policy(tmp_path / "ada")
    assert (policy.coordinator, policy.coordinator_pin) == (f"https://127.0.0.1:{proxy}", None)


def test_through_a_proxy_that_passes_tls_on_a_member_pins_the_coordinators_own_certificate(
    tmp_path: Path,
) -> None:
    binary = nginx()
    proxy, port = free_port(), free_port()
    stream = _rewritten(
        PASSTHROUGH.read_text(encoding="utf-8"),
        {
            "listen 8400;": f"listen 127.0.0.1:{proxy};",
            "listen [::]:8400;": "",
            "server 127.0.0.1:8443;": f"server 127.0.0.1:{port};",
        },
    )
    command = _rewritten(
        _documented_command(PASSTHROUGH),
        {
            "/var/lib/memmesh": str(tmp_path / "data"),
            "--port 8443": f"--port {port}",
            "https://memmesh.example.com:8400": f"https://127.0.0.1:{proxy}",
        },
    )

    with _coordinator(command, tmp_path) as code, _proxy(binary, tmp_path, proxy, top=stream):
        answered = _through(code, tmp_path)
    printed = (tmp_path / "serve.log").read_text(encoding="utf-8")

    assert answered.coordinator_hits() == [answered.item]
    pin = JoinCode.decode(code).pin
    assert pin is not None
    assert f"TLS pin: {pin}" in printed
    policy = load_policy(tmp_path / "ada")
    assert (policy.coordinator, policy.coordinator_pin) == (f"https://127.0.0.1:{proxy}", pin)
