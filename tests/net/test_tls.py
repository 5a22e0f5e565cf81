"""TLS with pinning against a real uvicorn serving a real certificate: the pinned client gets
through; a man in the middle with another certificate receives nothing at all."""

import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import uvicorn

from memmesh.net.app import Endpoint, create_app
from memmesh.net.client import Client
from memmesh.net.errors import CertificateUnusable, InsecureUrl, PinMismatch, Unreachable
from memmesh.net.server import free_port
from memmesh.net.tls import ensure_certificate, load_certificate, pinned_context
from memmesh.net.urls import check_transport, peer_url


class Ok(msgspec.Struct, frozen=True, kw_only=True):
    status: str = "ok"


def _serve_tls(cert: Path, key: Path) -> Iterator[str]:
    port = free_port()
    app = create_app([Endpoint(path="/ok", handler=Ok, response=Ok)], token=None)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="error", lifespan="off",
        ssl_certfile=str(cert), ssl_keyfile=str(key),
    )  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive()
        threading.Event().wait(0.01)
    try:
        yield f"https://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    folder = tmp_path_factory.mktemp("daemon")
    cert = ensure_certificate(folder, ["127.0.0.1"])
    for url in _serve_tls(Path(cert.cert_path), Path(cert.key_path)):
        yield url, cert.pin


def test_a_certificate_is_made_once_with_a_private_key_only_its_owner_reads(
    tmp_path: Path,
) -> None:
    first = ensure_certificate(tmp_path, ["example.test"])
    again = ensure_certificate(tmp_path, ["other.test"])
    assert first == again  # kept, so the pin members hold stays valid
    assert first.pin.startswith("sha256:")
    assert len(first.pin) == 71
    assert (Path(first.key_path).stat().st_mode & 0o777) == 0o600


def test_the_certificate_folder_memmesh_makes_is_private(tmp_path: Path) -> None:
    folder = tmp_path / "home" / "tls"
    ensure_certificate(folder, [])
    assert (folder.stat().st_mode & 0o777) == 0o700


def test_a_client_pinning_the_certificate_is_answered(served: tuple[str, str]) -> None:
    url, pin = served
    with Client(url, token=None, tls=pinned_context(url, pin, 5)) as client:
        assert client.get("/ok", Ok) == Ok()


def test_another_certificate_is_refused_before_anything_is_sent(
    served: tuple[str, str], tmp_path: Path
) -> None:
    url, _ = served
    other = ensure_certificate(tmp_path, ["127.0.0.1"])
    with pytest.raises(PinMismatch) as refused:
        pinned_context(url, other.pin, 5)
    assert "nothing was sent" in refused.value.message


def test_a_man_in_the_middle_with_his_own_certificate_receives_no_request(
    served: tuple[str, str], tmp_path: Path
) -> None:
    # A listener with its own certificate, recording every byte it is sent after the handshake.
    url, pin = served
    mitm = ensure_certificate(tmp_path, ["127.0.0.1"])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(mitm.cert_path, mitm.key_path)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    received: list[bytes] = []

    def accept() -> None:
        listener.settimeout(5)
        for _ in range(2):
            try:
                raw, _ = listener.accept()
            except OSError:
                return
            try:
                with context.wrap_socket(raw, server_side=True) as tls:
                    tls.settimeout(2)
                    received.append(tls.recv(65536))
            except (OSError, ssl.SSLError):
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    fake = f"https://127.0.0.1:{port}"
    with pytest.raises(PinMismatch):
        pinned_context(fake, pin, 2)
    # Even a client whose context was made for the real service refuses the impostor.
    real = pinned_context(url, pin, 5)
    with (
        Client(fake, token="team-secret", tls=real, timeout=2) as client,
        pytest.raises(Unreachable),
    ):
        client.get("/ok", Ok)
    listener.close()
    thread.join(timeout=10)
    assert not any(b"team-secret" in chunk or b"GET" in chunk for chunk in received)


def test_plain_http_beyond_loopback_is_refused_unless_allowed() -> None:
    with pytest.raises(InsecureUrl) as refused:
        check_transport(peer_url("http://10.0.0.5:8400"), insecure_http=False)
    assert "insecure_http: true" in refused.value.message
    check_transport(peer_url("http://10.0.0.5:8400"), insecure_http=True)
    check_transport(peer_url("http://127.0.0.1:8400"), insecure_http=False)
    check_transport(peer_url("https://10.0.0.5:8400"), insecure_http=False)


def test_a_certificate_and_key_that_do_not_belong_together_are_refused(tmp_path: Path) -> None:
    one = ensure_certificate(tmp_path / "one", [])
    two = ensure_certificate(tmp_path / "two", [])
    with pytest.raises(CertificateUnusable):
        load_certificate(Path(one.cert_path), Path(two.key_path))
