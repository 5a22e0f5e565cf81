"""`mem coordinator serve` through the real command line: where it agrees to listen, and
that it serves one named team."""

import argparse
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

from memmesh.cli._common import member_name
from memmesh.coordinator.invites import JOIN_PREFIX, JoinCode
from memmesh.coordinator.protocol import (
    Info,
    JoinRequest,
    JoinResponse,
    PublishItem,
    PublishRequest,
    PublishResponse,
    StatementsRequest,
    StatementsResponse,
)
from memmesh.embed import HashingEmbedder
from memmesh.net.client import Client
from memmesh.net.errors import Refused
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.server import free_port
from memmesh.net.signing import coordinator_audience
from memmesh.net.tls import ensure_certificate, pin_of, pinned_context
from memmesh.net.urls import serves_tls
from memmesh.registry import Identity, create_identity, roster_chain
from memmesh.registry.envelopes import open_envelope, seal
from tests._servers import CoordinatorProcess
from tests._signed import signed_client
from tests.cli._output import error_line
from tests.conftest import MemRunner
from tests.registry._helpers import publication

# Asking to listen on every interface is what these tests are about: each is refused before
# anything listens (tests never listen beyond loopback).
ALL_INTERFACES = "0.0.0.0"  # noqa: S104
REFUSAL = (
    "mem: error: refusing to listen on 0.0.0.0 over plain http without a team token: serve "
    "https (the default beyond loopback), set the token variable, or listen on 127.0.0.1"
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


def _refused(
    data: Path, port: int, *args: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`mem coordinator serve` that should refuse at once: what it printed, and its exit code."""
    with _serve(data, port, *args, env=env) as process:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"it kept running (listening: {_listening(port)})")
        stdout, stderr = process.communicate()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


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
def test_serve_over_plain_http_beyond_loopback_without_a_token_refuses_and_never_listens(
    tmp_path: Path, env: dict[str, str], args: tuple[str, ...]
) -> None:
    data = tmp_path / "data"
    port = free_port()

    result = _refused(data, port, "--host", ALL_INTERFACES, "--insecure-http", *args, env=env)
    assert result.returncode == 1
    assert error_line(result) == REFUSAL
    assert not _listening(port)
    # It refused before touching anything: not even the data folder was created.
    assert not data.exists()


FINGERPRINT = HashingEmbedder().fingerprint


def _wait_until_healthy(url: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, "the coordinator exited"
        try:
            # Whether it answers only: the tests' clients check the certificate.
            probe = httpx.get(f"{url}/healthz", timeout=0.5, verify=False)  # noqa: S501
            if probe.status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    pytest.fail("the coordinator did not answer within 30 s")


def _pin_in(output: str) -> str:
    (line,) = [line for line in output.splitlines() if line.startswith("TLS pin: ")]
    return line.removeprefix("TLS pin: ")


def _code_in(output: str) -> JoinCode:
    (line,) = [line for line in output.splitlines() if line.startswith(JOIN_PREFIX)]
    return JoinCode.decode(line)


def _pinned(url: str, pin: str, identity: Identity, *, token: str | None = None) -> Client:
    return Client(
        url, token=token, identity=identity, audience=coordinator_audience("acme"), pin=pin,
        tls=pinned_context(url, pin, 5), timeout=5,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("host", "tls", "insecure_http", "url", "https"),
    [
        ("127.0.0.1", False, False, None, False),
        ("::1", False, False, None, False),
        ("127.0.0.1", True, False, None, True),
        (ALL_INTERFACES, False, False, None, True),
        ("192.0.2.7", False, False, None, True),
        ("team-host.example", False, False, None, True),
        (ALL_INTERFACES, False, True, None, False),
        ("127.0.0.1", False, False, "https://127.0.0.1:8400", True),
        ("127.0.0.1", False, False, "http://127.0.0.1:8400", False),
        ("127.0.0.1", False, True, "https://memmesh.example.com", False),
    ],
)
def test_a_daemon_serves_https_beyond_loopback_unless_told_to_serve_plain_http(
    host: str, tls: bool, insecure_http: bool, url: str | None, https: bool
) -> None:
    # The one rule both daemons follow (the coordinator's --tls/--insecure-http/--url, the
    # peer's --tls); tests never listen beyond loopback, so the rule is checked as the function.
    assert serves_tls(host, tls=tls, insecure_http=insecure_http, url=url) is https


def test_serve_over_tls_demands_a_signed_key_and_the_token_when_one_is_set(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    port = free_port()
    url = f"https://127.0.0.1:{port}"
    ada = create_identity(tmp_path / "ada")
    env = {"MEM_TEAM_TOKEN": "s3cret"}

    with _serve(data, port, "--tls", env=env) as process:
        _wait_until_healthy(url, process)
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
        pin = pin_of((data / "tls" / "tls.crt").read_bytes())
        with _pinned(url, pin, ada) as unsigned_client:
            unsigned_client.identity = None
            with pytest.raises(Refused) as no_key:
                unsigned_client.get("/v1/info", Info)
        with _pinned(url, pin, ada) as no_token, pytest.raises(Refused) as without_token:
            no_token.get("/v1/info", Info)
        with _pinned(url, pin, ada, token="s3cret") as member:
            info = member.get("/v1/info", Info)
        process.terminate()
        _, stderr = process.communicate(timeout=30)

    assert _pin_in(stderr) == pin
    assert (no_key.value.http_status, without_token.value.http_status) == (401, 401)
    assert (info.service, info.published, info.roster) == ("memmesh-coordinator", 0, False)


def test_serve_with_tls_on_loopback_and_its_join_code_pin_the_certificate(
    tmp_path: Path,
) -> None:
    process = CoordinatorProcess(tmp_path / "data", team="acme", token=None, args=["--tls"])
    ada = create_identity(tmp_path / "ada")
    try:
        process.start()
        pin = _pin_in(process.output())
        code = _code_in(process.output())
        with _pinned(process.url, pin, ada) as client:
            joined = client.post("/v1/join", _first_admin(code, ada), JoinResponse)
    finally:
        process.stop()

    assert (code.url, code.pin) == (process.url, pin)
    assert (joined.member.name, joined.member.admin) == ("admin", True)


def test_serve_with_a_certificate_of_its_own_serves_it_and_its_code_holds_no_pin(
    tmp_path: Path,
) -> None:
    given = ensure_certificate(tmp_path / "issued", ["127.0.0.1"])
    process = CoordinatorProcess(
        tmp_path / "data", team="acme", token=None,
        args=["--tls-cert", given.cert_path, "--tls-key", given.key_path, "--url",
              "https://team-host.example:8400"],
    )  # fmt: skip
    try:
        process.start()
        output = process.output()
        code = _code_in(output)
        ada = create_identity(tmp_path / "ada")
        with _pinned(process.url, given.pin, ada) as client:
            client.post("/v1/join", _first_admin(code, ada), JoinResponse)
            info = client.get("/v1/info", Info)
    finally:
        process.stop()

    assert _pin_in(output) == given.pin
    assert (code.url, code.pin) == ("https://team-host.example:8400", None)
    assert info.roster is True
    assert not (tmp_path / "data" / "tls").exists()


def test_a_certificate_without_its_key_is_a_usage_error(tmp_path: Path) -> None:
    given = ensure_certificate(tmp_path / "issued", ["127.0.0.1"])
    result = subprocess.run(
        [sys.executable, "-m", "memmesh", "coordinator", "serve", "--data", str(tmp_path / "d"),
         "--team", "acme", "--tls-cert", given.cert_path],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    assert result.returncode == 2
    assert "--tls-cert and --tls-key go together" in error_line(result)


def _first_admin(code: JoinCode, identity: Identity) -> JoinRequest:
    """The first admin's join with ``code``: its secret and the signed roster's genesis."""
    genesis = roster_chain.genesis(identity, code.team, name=code.name)
    return JoinRequest(secret=code.secret, genesis=genesis)


def test_serve_prints_a_join_code_that_makes_the_first_admin_once(tmp_path: Path) -> None:
    process = CoordinatorProcess(tmp_path / "data", team="acme", token=None)
    ada, mallory = create_identity(tmp_path / "ada"), create_identity(tmp_path / "mallory")
    try:
        process.start()
        printed = process.output()
        code = _code_in(printed)
        with signed_client(process.url, ada, team="acme") as client:
            joined = client.post("/v1/join", _first_admin(code, ada), JoinResponse)
            info = client.get("/v1/info", Info)
        with (
            signed_client(process.url, mallory, team="acme") as client,
            pytest.raises(Refused) as again,
        ):
            client.post("/v1/join", _first_admin(code, mallory), JoinResponse)
        process.stop()
        process.start()
    finally:
        process.stop()

    assert (code.url, code.team, code.name, code.pin) == (process.url, "acme", "admin", None)
    assert (joined.member.name, joined.member.admin) == ("admin", True)
    assert joined.coordinator_key == info.coordinator_key
    assert info.roster is True
    assert again.value.http_status == 403
    # Once someone has joined, the next start neither prints a code nor keeps the file.
    assert process.output().count(JOIN_PREFIX) == 1
    assert not (tmp_path / "data" / "admin-join-code").exists()


def test_serve_on_loopback_without_a_token_needs_none(tmp_path: Path) -> None:
    process = CoordinatorProcess(tmp_path / "data", team="acme", token=None)
    try:
        process.start()
        with signed_client(process.url, create_identity(tmp_path / "ada"), team="acme") as client:
            info = client.get("/v1/info", Info)
    finally:
        process.stop()

    assert info.published == 0


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


def _publication(identity: Identity, text: str) -> PublishRequest:
    body = publication(identity, text=text, embedder=FINGERPRINT, project="global", team="acme")
    return PublishRequest(items=[PublishItem(envelope=seal(body, identity))])


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process tree from /proc")
def test_several_workers_share_one_port_see_each_others_writes_and_revokes_and_stop_together(
    tmp_path: Path,
) -> None:
    token = "s3cret"
    process = CoordinatorProcess(tmp_path / "data", team="acme", token=token, workers=3)
    ada, bob = create_identity(tmp_path / "ada"), create_identity(tmp_path / "bob")
    text = "Deploys go through the blue-green script in ops/deploy.sh"
    try:
        process.start()
        assert process.process is not None
        workers = _children(process.process.pid)
        assert len(workers) == 3
        code = JoinCode.decode(process.join_code())
        genesis = roster_chain.genesis(ada, "acme", name=code.name)
        started = roster_chain.verify_chain([genesis], root_key_id=ada.key_id, team="acme")
        adding = roster_chain.add(started, ada, key=bob.public_key_text, name="bob")
        revoking = roster_chain.revoke(roster_chain.extend(started, adding), ada,
                                       key=bob.public_key_text)  # fmt: skip
        # Each change on a new connection: another worker holds the head the last one moved.
        with signed_client(process.url, ada, team="acme", token=token) as admin:
            admin.post("/v1/join", JoinRequest(secret=code.secret, genesis=genesis), JoinResponse)
        with signed_client(process.url, ada, team="acme", token=token) as admin:
            admin.post("/v1/roster/statements", StatementsRequest(statements=[adding]),
                       StatementsResponse)  # fmt: skip
        with signed_client(process.url, ada, team="acme", token=token) as admin:
            admin.post("/v1/publish", _publication(ada, text), PublishResponse)
        # Each client opens a new connection, which the kernel hands to any of the workers.
        answers = []
        for _ in range(12):
            with signed_client(process.url, bob, team="acme", token=token) as client:
                found = client.post(
                    "/v1/search", SearchRequest(query="how do deploys work"), SearchResponse
                )
            answers.append([open_envelope(hit.envelope).item_id for hit in found.hits])
        with signed_client(process.url, ada, team="acme", token=token) as admin:
            admin.post("/v1/roster/statements", StatementsRequest(statements=[revoking]),
                       StatementsResponse)  # fmt: skip
        refused = []
        for _ in range(12):
            with (
                signed_client(process.url, bob, team="acme", token=token) as client,
                pytest.raises(Refused) as caught,
            ):
                client.get("/v1/info", Info)
            refused.append(caught.value.http_status)
    finally:
        process.stop()
    assert answers == [["01JABCDEFGHJKMNPQRSTVWXYZ0"]] * 12
    assert refused == [403] * 12
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


@pytest.mark.parametrize("host", [ALL_INTERFACES, "::"])
@pytest.mark.parametrize("opened_before", [False, True], ids=["new-data", "empty-roster"])
def test_serve_on_every_interface_without_url_while_the_roster_is_empty_is_a_usage_error(
    tmp_path: Path, host: str, opened_before: bool
) -> None:
    # Its join code would hold https://0.0.0.0:PORT, which no member's laptop can reach.
    data = tmp_path / "data"
    if opened_before:
        from memmesh.coordinator import Coordinator

        Coordinator(data, team="acme").close()
    port = free_port()

    result = _refused(data, port, "--host", host, env={})
    assert result.returncode == 2
    assert error_line(result) == (
        f"mem: error: listening on {host}, give --url: the first admin's join code must hold "
        "an address members reach, as in --url https://team-host:8400 "
        "(see `mem coordinator serve --help`)"
    )
    assert not _listening(port)
    assert not (data / "admin-join-code").exists()


def test_serve_on_loopback_with_an_https_url_serves_https_and_its_join_code_makes_a_member(
    tmp_path: Path, mem: MemRunner
) -> None:
    # The README's one-machine team: no --tls, the https in --url is what it must serve.
    data = tmp_path / "data"
    port = free_port()
    url = f"https://127.0.0.1:{port}"

    with _serve(data, port, "--url", url, "--admin-name", "alice", env={}) as process:
        _wait_until_healthy(url, process)
        code = (data / "admin-join-code").read_text(encoding="utf-8").strip()
        joined = mem("team", "join", code)
        process.terminate()
        _, stderr = process.communicate(timeout=30)

    assert joined.returncode == 0, joined.stderr
    assert (_code_in(stderr).url, _code_in(stderr).pin) == (url, _pin_in(stderr))
    assert _pin_in(stderr) == pin_of((data / "tls" / "tls.crt").read_bytes())
    assert f"memmesh coordinator on {url} " in stderr


@pytest.mark.parametrize(
    ("args", "why"),
    [
        pytest.param(
            ("--url", "https://127.0.0.1:{port}", "--insecure-http"),
            "--url https://127.0.0.1:{port} is this coordinator itself, which --insecure-http "
            "serves over plain http: drop --insecure-http to serve https, or give the https "
            "address of the reverse proxy in front of it",
            id="https-url-of-itself-over-http",
        ),
        pytest.param(
            ("--url", "https://localhost:{port}", "--insecure-http"),
            "--url https://localhost:{port} is this coordinator itself, which --insecure-http "
            "serves over plain http: drop --insecure-http to serve https, or give the https "
            "address of the reverse proxy in front of it",
            id="https-url-of-itself-by-name",
        ),
        pytest.param(
            ("--url", "http://127.0.0.1:{port}", "--tls"),
            "--url http://127.0.0.1:{port} says plain http, but it serves https (--tls): give "
            "--url https://…",
            id="http-url-with-tls",
        ),
        pytest.param(
            ("--url", "http://team-host:8400", "--host", ALL_INTERFACES),
            "--url http://team-host:8400 says plain http, but it serves https (the default "
            "beyond loopback): give --url https://…, or serve plain http with --insecure-http",
            id="http-url-beyond-loopback",
        ),
        pytest.param(
            ("--url", "http://team-host:{port}"),
            "--url http://team-host:{port} sends members over plain http beyond loopback, "
            "which they refuse: give --url https://… (the coordinator serves https on loopback "
            "too then), or --insecure-http for a network you trust",
            id="http-url-elsewhere-while-on-loopback",
        ),
    ],
)
def test_serve_with_a_url_whose_scheme_contradicts_what_it_serves_is_a_usage_error(
    tmp_path: Path, args: tuple[str, ...], why: str
) -> None:
    data = tmp_path / "data"
    port = free_port()

    result = _refused(data, port, *(a.format(port=port) for a in args), env={})

    assert result.returncode == 2
    assert error_line(result) == (
        f"mem coordinator serve: error: {why.format(port=port)} "
        "(see `mem coordinator serve --help`)"
    )
    assert not _listening(port)
    assert not data.exists()


def test_behind_a_reverse_proxy_the_join_code_pins_nothing_and_no_stranger_gets_in(
    tmp_path: Path,
) -> None:
    # --insecure-http with the https URL of a proxy in front: the proxy's certificate is one
    # the members' systems trust, so the code pins nothing. It listens on loopback, but anyone
    # reaches it through the proxy: before the first admin joins, only the admin code gets in.
    process = CoordinatorProcess(
        tmp_path / "data", team="acme", token=None,
        args=["--insecure-http", "--url", "https://memmesh.example.com"],
    )  # fmt: skip
    stranger = create_identity(tmp_path / "mallory")
    try:
        process.start()
        output = process.output()
        with (
            signed_client(
                process.url, stranger, team="acme", known_as="https://memmesh.example.com"
            ) as client,
            pytest.raises(Refused) as refused,
        ):
            client.get("/v1/info", Info)
    finally:
        process.stop()

    code = _code_in(output)
    assert (code.url, code.pin) == ("https://memmesh.example.com", None)
    assert process.url.startswith("http://")
    assert "TLS pin" not in output
    assert not (tmp_path / "data" / "tls").exists()
    assert refused.value.http_status == 403
    assert "admin code" in str(refused.value)


def test_an_admin_name_that_is_no_member_name_is_a_usage_error_with_the_rule(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    port = free_port()

    result = _refused(data, port, "--admin-name", "Alice Smith", env={})

    # The rule of every command that takes a member's name, word for word.
    with pytest.raises(argparse.ArgumentTypeError) as rule:
        member_name("Alice Smith")
    assert result.returncode == 2
    assert error_line(result) == (
        f"mem coordinator serve: error: argument --admin-name: {rule.value} "
        "(see `mem coordinator serve --help`)"
    )
    assert "no spaces" in str(rule.value)
    assert not _listening(port)
    assert not data.exists()


def test_serve_without_a_token_says_so_and_never_that_it_is_held_to_loopback(
    tmp_path: Path,
) -> None:
    process = CoordinatorProcess(tmp_path / "data", team="acme", token=None)
    try:
        process.start()
        banner = process.output().splitlines()[0]
    finally:
        process.stop()
    help_text = subprocess.run(
        [sys.executable, "-m", "memmesh", "coordinator", "serve", "--help"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip

    assert banner.endswith(", no team token: every request is signed)")
    assert "loopback only" not in banner
    assert "refuses to listen beyond loopback without a team token" not in help_text
    assert "--insecure-http" in help_text.split("options:")[0]


def test_serve_over_plain_http_beyond_loopback_takes_an_http_url(tmp_path: Path) -> None:
    # 192.0.2.7 is not this machine's: past the checks of its flags, it cannot listen (exit 1),
    # so nothing here listens beyond loopback.
    data = tmp_path / "data"
    port = free_port()
    result = _refused(
        data, port, "--host", "192.0.2.7", "--insecure-http", "--url",
        f"http://192.0.2.7:{port}", env={"MEM_TEAM_TOKEN": "s3cret"},
    )  # fmt: skip

    assert result.returncode == 1
    assert error_line(result).startswith(f"mem: error: cannot listen on 192.0.2.7:{port}: ")
