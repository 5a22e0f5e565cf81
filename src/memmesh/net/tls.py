"""TLS for both daemons: a self-signed certificate made on first start, and pinning clients.

A daemon that has no certificate of its own makes one (:func:`ensure_certificate`): an ECDSA
P-256 key (file mode 0600) and a self-signed certificate for the names and addresses it is
reached at, kept in its folder and reused on every start. Its *pin* is the SHA-256 of the
certificate's DER bytes, written ``sha256:`` and 64 hex digits (:func:`pin_of`).

A client that knows a pin (from team.yaml, a join code, or a peer's signed presence) trusts
exactly that certificate and nothing else (:func:`pinned_context`): it first fetches the
certificate the service presents, without sending anything, and refuses with
:class:`PinMismatch` unless its SHA-256 is the pin; the connection that then carries the request
trusts only that certificate, so a man in the middle who answers it instead fails the handshake
before a byte of the request leaves. Without a pin, an ``https`` service must have a certificate
that the system's authorities vouch for.
"""

import datetime
import functools
import hashlib
import ipaddress
import os
import re
import socket
import ssl
import threading
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

import msgspec
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from memmesh._files import private_folder
from memmesh.net.errors import CertificateUnusable, PinMismatch, Unreachable

__all__ = [
    "CERT_FILENAME",
    "KEY_FILENAME",
    "PIN_PATTERN",
    "Certificate",
    "ensure_certificate",
    "load_certificate",
    "pin_of",
    "pinned_context",
]

CERT_FILENAME = "tls.crt"
KEY_FILENAME = "tls.key"
PIN_PATTERN = re.compile(r"sha256:[0-9a-f]{64}")
_VALID_DAYS = 3650


class Certificate(msgspec.Struct, frozen=True, kw_only=True):
    """A daemon's certificate and key files, and the certificate's pin."""

    cert_path: str
    key_path: str
    pin: str


def pin_of(pem: bytes) -> str:
    """The pin of the (first) certificate in ``pem``: ``sha256:`` and the hex digest of its
    DER bytes."""
    der = x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)
    return "sha256:" + hashlib.sha256(der).hexdigest()


def load_certificate(cert_path: Path, key_path: Path) -> Certificate:
    """A certificate and key the operator gave (``--tls-cert``/``--tls-key``), checked to load
    and to belong together."""
    try:
        pem = cert_path.read_bytes()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_path, key_path)
        pin = pin_of(pem)
    except (OSError, ValueError, ssl.SSLError) as exc:
        raise CertificateUnusable(str(cert_path), str(exc)) from None
    return Certificate(cert_path=str(cert_path), key_path=str(key_path), pin=pin)


def ensure_certificate(folder: Path, hosts: Sequence[str]) -> Certificate:
    """The certificate in ``folder``, made (self-signed, for ``hosts`` and loopback) if there
    is none yet. An existing one is kept as it is, so its pin never changes by itself."""
    cert_path, key_path = folder / CERT_FILENAME, folder / KEY_FILENAME
    if cert_path.exists() or key_path.exists():
        return load_certificate(cert_path, key_path)
    private_folder(folder)
    key = ec.generate_private_key(ec.SECP256R1())
    names = dict.fromkeys(["localhost", "127.0.0.1", "::1", *hosts])
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "memmesh")])
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=_VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName([_general_name(n) for n in names]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    cert_pem = certificate.public_bytes(serialization.Encoding.PEM)
    _write_new(key_path, key_pem, 0o600)
    _write_new(cert_path, cert_pem, 0o644)
    return Certificate(cert_path=str(cert_path), key_path=str(key_path), pin=pin_of(cert_pem))


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name.strip("[]")))
    except ValueError:
        return x509.DNSName(name)


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Write a file that must not exist yet, with ``mode`` from its first byte."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


_fetch_lock = threading.Lock()


def pinned_context(url: str, pin: str, timeout: float) -> ssl.SSLContext:
    """A TLS context that trusts only the certificate whose pin is ``pin``, for ``url``.

    Raises :class:`PinMismatch` if the service presents another certificate, and
    :class:`Unreachable` if it cannot be reached.
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or 443
    return _context(host, port, pin, timeout)


def _context(host: str, port: int, pin: str, timeout: float) -> ssl.SSLContext:
    with _fetch_lock:
        cached = _trusted.get((host, port, pin))
    if cached is not None:
        return cached
    pem = _presented(host, port, timeout)
    got = pin_of(pem.encode("ascii"))
    if got != pin:
        raise PinMismatch(f"{host}:{port}", pin, got)
    context = _trusting(pem)
    with _fetch_lock:
        _trusted[(host, port, pin)] = context
    return context


# One context per (host, port, pin) for the process: building one, and the handshake that
# fetches the certificate, are paid once, and httpx keeps the connections.
_trusted: dict[tuple[str, int, str], ssl.SSLContext] = {}


def _presented(host: str, port: int, timeout: float) -> str:
    """The PEM certificate ``host:port`` presents; nothing is sent but the handshake."""
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    probe.check_hostname = False
    probe.verify_mode = ssl.CERT_NONE
    try:
        with (
            socket.create_connection((host, port), timeout=timeout) as raw,
            probe.wrap_socket(raw, server_hostname=host) as tls,
        ):
            der = tls.getpeercert(binary_form=True)
    except (OSError, ssl.SSLError) as exc:
        raise Unreachable(f"https://{host}:{port} is unreachable: {exc}") from None
    if der is None:
        raise Unreachable(f"https://{host}:{port} presented no certificate")
    return ssl.DER_cert_to_PEM_cert(der)


@functools.lru_cache(maxsize=64)
def _trusting(pem: str) -> ssl.SSLContext:
    """A client context whose only trust anchor is the certificate ``pem``."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    # The pin names the certificate: the name in it does not matter (a peer on a laptop is
    # reached at whatever address it has today).
    context.check_hostname = False
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(cadata=pem)
    return context
