"""A member's identity: an Ed25519 key pair in the memmesh home.

The member id is a short base32 fingerprint of the public key. Names are labels; keys are
identity. The private key file is created with mode 0600 (in a home made 0700) and never
overwritten.
"""

import base64
import hashlib
import os
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from memmesh._files import FILE_MODE, private_folder, reason
from memmesh.registry.errors import (
    BadSignature,
    IdentityExists,
    IdentityInvalid,
    IdentityMissing,
    IdentityNotCreated,
    IdentityUnreadable,
)

__all__ = [
    "KEY_FILENAME",
    "Identity",
    "create_identity",
    "key_id",
    "load_identity",
    "public_key_from_text",
    "public_key_text",
    "verify_signature",
]

KEY_FILENAME = "identity.key"


def key_id(public_key: bytes) -> str:
    """The member id: 16 lower-case base32 characters of the public key's SHA-256."""
    digest = hashlib.sha256(public_key).digest()
    return base64.b32encode(digest[:10]).decode("ascii").lower()


def public_key_text(public_key: bytes) -> str:
    """A raw 32-byte public key as URL-safe base64 without padding (for team.yaml and envelopes)."""
    return base64.urlsafe_b64encode(public_key).decode("ascii").rstrip("=")


def public_key_from_text(text: str) -> bytes:
    """The raw key from :func:`public_key_text`; raises :class:`BadSignature` if malformed."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        raise BadSignature("the public key is not base64") from None
    if len(raw) != 32:
        raise BadSignature("the public key is not 32 bytes")
    # One key, one text: decoding ignores stray characters and spare bits, and a key written
    # two ways would be two authors wherever keys are compared as text (the coordinator).
    if public_key_text(raw) != text:
        raise BadSignature("the public key is not written in its one canonical form")
    return raw


def verify_signature(public_key: bytes, signature: bytes, message: bytes) -> None:
    """Raise :class:`BadSignature` unless ``signature`` is the key's signature of ``message``."""
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
    except (InvalidSignature, ValueError):
        raise BadSignature("the signature does not verify") from None


class Identity:
    """This member's key pair."""

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self._private = private_key
        self.public_key = private_key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        self.key_id = key_id(self.public_key)
        self.public_key_text = public_key_text(self.public_key)

    def sign(self, message: bytes) -> bytes:
        """The Ed25519 signature of ``message``."""
        return self._private.sign(message)

    def __repr__(self) -> str:
        return f"Identity(key_id={self.key_id!r})"


def create_identity(home: Path) -> Identity:
    """Create and store a new key pair; refuses if one exists (:class:`IdentityExists`), and
    raises :class:`IdentityNotCreated` when it cannot be written."""
    path = home / KEY_FILENAME
    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    try:
        private_folder(home)
        # O_EXCL: never overwrite, even if two inits race; 0600 from the first byte.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        raise IdentityExists(str(path)) from None
    except OSError as exc:
        raise IdentityNotCreated(str(path), reason(exc)) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(pem)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        path.unlink(missing_ok=True)  # half a key is no key
        raise IdentityNotCreated(str(path), reason(exc)) from None
    return Identity(private)


def load_identity(home: Path) -> Identity:
    """This member's key pair from ``home``."""
    path = home / KEY_FILENAME
    try:
        pem = path.read_bytes()
    except FileNotFoundError:
        raise IdentityMissing(str(path)) from None
    except OSError as exc:
        raise IdentityUnreadable(str(path), str(exc.strerror)) from None
    try:
        private = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise IdentityInvalid(str(path), f"a usable private key: {exc}") from None
    if not isinstance(private, Ed25519PrivateKey):
        raise IdentityInvalid(str(path), "an Ed25519 private key")
    return Identity(private)
