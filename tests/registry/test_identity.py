"""A member's identity: creating, protecting and loading the Ed25519 key pair."""

import re
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, x25519

from memmesh.registry import (
    BadSignature,
    IdentityExists,
    IdentityMissing,
    RegistryError,
    create_identity,
    load_identity,
)
from memmesh.registry.errors import IdentityInvalid
from memmesh.registry.identity import (
    KEY_FILENAME,
    Identity,
    key_id,
    public_key_from_text,
    verify_signature,
)

MESSAGE = b"publish item 01JABCDEFGHJKMNPQRSTVWXYZ0 version 1"


def test_create_identity_writes_a_private_pem_key_with_mode_0600(home: Path) -> None:
    create_identity(home)
    path = home / KEY_FILENAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    pem = path.read_bytes()
    assert pem.startswith(b"-----BEGIN PRIVATE KEY-----\n")
    assert pem.rstrip().endswith(b"-----END PRIVATE KEY-----")


def test_create_identity_returns_a_16_character_lower_case_base32_key_id(home: Path) -> None:
    identity = create_identity(home)
    assert re.fullmatch(r"[a-z2-7]{16}", identity.key_id)
    assert identity.key_id == key_id(identity.public_key)
    assert len(identity.public_key) == 32


def test_two_identities_have_different_key_ids(tmp_path: Path) -> None:
    first = create_identity(tmp_path / "a")
    second = create_identity(tmp_path / "b")
    assert first.key_id != second.key_id
    assert first.public_key != second.public_key


def test_public_key_text_round_trips_to_the_raw_key(home: Path) -> None:
    identity = create_identity(home)
    assert "=" not in identity.public_key_text
    assert public_key_from_text(identity.public_key_text) == identity.public_key


def test_create_identity_refuses_to_overwrite_an_existing_key(home: Path) -> None:
    create_identity(home)
    path = home / KEY_FILENAME
    before = path.read_bytes()
    with pytest.raises(IdentityExists) as caught:
        create_identity(home)
    assert caught.value.path == str(path)
    assert "refusing to overwrite" in str(caught.value)
    assert path.read_bytes() == before


def test_create_identity_refuses_a_foreign_file_in_the_key_path(home: Path) -> None:
    home.mkdir()
    path = home / KEY_FILENAME
    path.write_bytes(b"someone else's file")
    with pytest.raises(IdentityExists):
        create_identity(home)
    assert path.read_bytes() == b"someone else's file"


def test_load_identity_returns_the_same_key(home: Path) -> None:
    created = create_identity(home)
    loaded = load_identity(home)
    assert loaded.key_id == created.key_id
    assert loaded.public_key == created.public_key
    assert loaded.public_key_text == created.public_key_text


def test_a_loaded_identity_signs_what_the_created_one_verifies(home: Path) -> None:
    created = create_identity(home)
    signature = load_identity(home).sign(MESSAGE)
    verify_signature(created.public_key, signature, MESSAGE)


def test_load_identity_without_a_key_raises_identity_missing(home: Path) -> None:
    with pytest.raises(IdentityMissing) as caught:
        load_identity(home)
    assert caught.value.path == str(home / KEY_FILENAME)
    assert "mem team init" in str(caught.value)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not a key at all\n",
        b"\x00\xff\xfe garbage \x80",
        b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    ],
    ids=["empty", "text", "binary", "truncated-pem"],
)
def test_load_identity_rejects_a_garbage_key_file(home: Path, content: bytes) -> None:
    home.mkdir()
    (home / KEY_FILENAME).write_bytes(content)
    with pytest.raises(RegistryError) as caught:
        load_identity(home)
    assert type(caught.value) is IdentityInvalid
    assert "is not a usable private key" in str(caught.value)


def test_load_identity_rejects_a_private_key_of_another_algorithm(home: Path) -> None:
    home.mkdir()
    pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (home / KEY_FILENAME).write_bytes(pem)
    with pytest.raises(RegistryError, match="is not an Ed25519 private key"):
        load_identity(home)


def test_load_identity_rejects_an_x25519_key(home: Path) -> None:
    home.mkdir()
    pem = x25519.X25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (home / KEY_FILENAME).write_bytes(pem)
    with pytest.raises(RegistryError, match="is not an Ed25519 private key"):
        load_identity(home)


def test_load_identity_rejects_a_password_protected_key(home: Path) -> None:
    home.mkdir()
    encrypted = ed25519.Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"hunter2-passphrase"),
    )
    (home / KEY_FILENAME).write_bytes(encrypted)
    with pytest.raises(RegistryError, match="is not a usable private key"):
        load_identity(home)


def test_load_identity_reports_a_directory_in_the_key_path_as_a_registry_error(
    home: Path,
) -> None:
    (home / KEY_FILENAME).mkdir(parents=True)
    try:
        load_identity(home)
    except RegistryError:
        return
    except OSError as exc:
        raise AssertionError(f"raw {type(exc).__name__} escaped: {exc}") from None
    raise AssertionError("a directory was loaded as an identity")


def test_verify_signature_accepts_the_key_s_own_signature(home: Path) -> None:
    identity = create_identity(home)
    verify_signature(identity.public_key, identity.sign(MESSAGE), MESSAGE)


@pytest.mark.parametrize("bit", [0, 3, 7])
@pytest.mark.parametrize("index", [0, 31, 63])
def test_verify_signature_rejects_a_flipped_signature_bit(home: Path, index: int, bit: int) -> None:
    identity = create_identity(home)
    signature = bytearray(identity.sign(MESSAGE))
    signature[index] ^= 1 << bit
    with pytest.raises(BadSignature) as caught:
        verify_signature(identity.public_key, bytes(signature), MESSAGE)
    assert caught.value.reason == "the signature does not verify"


def test_verify_signature_rejects_a_flipped_message_bit(home: Path) -> None:
    identity = create_identity(home)
    signature = identity.sign(MESSAGE)
    tampered = bytes([MESSAGE[0] ^ 1]) + MESSAGE[1:]
    with pytest.raises(BadSignature, match="the signature does not verify"):
        verify_signature(identity.public_key, signature, tampered)


def test_verify_signature_rejects_another_key_s_signature(tmp_path: Path) -> None:
    mine = create_identity(tmp_path / "mine")
    theirs = create_identity(tmp_path / "theirs")
    with pytest.raises(BadSignature, match="the signature does not verify"):
        verify_signature(mine.public_key, theirs.sign(MESSAGE), MESSAGE)


@pytest.mark.parametrize("signature", [b"", b"\x00" * 63, b"\x00" * 65])
def test_verify_signature_rejects_a_signature_of_the_wrong_length(
    home: Path, signature: bytes
) -> None:
    identity = create_identity(home)
    with pytest.raises(BadSignature):
        verify_signature(identity.public_key, signature, MESSAGE)


@pytest.mark.parametrize(
    "text", ["", "AAAA", "A" * 44, "not base64 at all!"], ids=["empty", "short", "long", "junk"]
)
def test_public_key_from_text_rejects_a_malformed_key(text: str) -> None:
    with pytest.raises(BadSignature):
        public_key_from_text(text)


@pytest.mark.parametrize("suffix", ["\n!", "==", "!"])
def test_a_public_key_written_another_way_is_refused(identity: Identity, suffix: str) -> None:
    # base64 decoding ignores stray characters: the same key written twice would be two keys
    # wherever keys are compared as text.
    with pytest.raises(BadSignature):
        public_key_from_text(identity.public_key_text + suffix)


def test_a_public_key_with_a_spare_bit_set_is_refused(identity: Identity) -> None:
    text = identity.public_key_text
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    flipped = text[:-1] + alphabet[alphabet.index(text[-1]) ^ 1]
    with pytest.raises(BadSignature, match="canonical"):
        public_key_from_text(flipped)
