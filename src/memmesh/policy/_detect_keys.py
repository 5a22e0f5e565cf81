"""Detectors for private keys: PEM, OpenSSH, PGP and PuTTY files, headerless key bodies, age."""

import base64
import binascii
import re

from memmesh.policy._detector import BROAD, Detector, detector, form

__all__ = ["KEY_DETECTORS"]

_KEY_HEADER = r"(?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"

# The base64 with which each kind of private key body begins, whatever its header says:
# OpenSSH's ``openssh-key-v1``, PKCS#1 RSA, PKCS#8 (plain, EC, Ed25519 and encrypted), SEC1 EC,
# and a whole PEM file encoded once more (a kubeconfig's ``client-key-data``).
# A public key's body (``MIIBIjANBgkqhkiG9w0BAQEFAAOC…``, ``AAAAC3NzaC1lZDI1NTE5…``) begins
# otherwise.
_BODY_STARTS = (
    r"b3BlbnNzaC1rZXktdjE",
    r"MII[A-Za-z0-9+/]{3}IBAAK[BC]",
    r"MII[A-Za-z0-9+/]{3}IBADANBgkqhkiG9w0BAQEFAASC",
    r"MIG[A-Za-z0-9+/]AgEAMBMGByqGSM49AgEG",
    r"MC4CAQAwBQYDK2VwBCIEI",
    r"MHcCAQEEI",
    r"MIGkAgEBBDA",
    r"MII[A-Za-z0-9+/]{2}DBOBgkqhkiG9w0BBQ0w",
    r"LS0tLS1CRUdJTi",
)
_PEM_IN_BASE64 = "LS0tLS1CRUdJTi"


def _private_body(match: re.Match[str]) -> bool:
    """A body that is a base64'd PEM file counts only when that file holds a private key."""
    found = match.group()
    if not found.startswith(_PEM_IN_BASE64):
        return True
    head = re.sub(r"\\n|\s", "", found)[:96]
    try:
        decoded = base64.b64decode(head[: len(head) // 4 * 4])
    except binascii.Error:
        return False
    return b"PRIVATE KEY" in decoded.split(b"\n", 1)[0]


# A key's body lines, quoted without its BEGIN line and from anywhere in it: lines of exactly
# 64 (PEM) or 70 (OpenSSH) base64 characters, each perhaps indented, quoted or ``>``-quoted.
_BODY_LINE = r"[ \t>\"']{0,8}+[A-Za-z0-9+/]{64}(?:[A-Za-z0-9+/]{6})?(?![A-Za-z0-9+/=])[^\n]{0,8}+\n"
_BODY_LINES = (
    r"(?<![^\n])(?P<lines>" + _BODY_LINE + r"){2,400}+"
    r"(?:[ \t>\"']{0,8}+[A-Za-z0-9+/]{4,70}+={0,2})?"
)
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{4,70}={0,2}")
# Bodies of what is not a private key: certificates, public keys, images and archives.
_NOT_KEY_BODY = re.compile(
    r"MII[A-Za-z0-9+/]{3}CC|MII[A-Za-z0-9+/]{3}ANBgkqhkiG9w0BAQEFAAOC|MFkwEwYHKoZIzj0CAQY"
    r"|MCowBQYDK2VwAyEA|MHYwEAYHKoZIzj0CAQYFK4EEACID|AAAA|iVBORw0KGgo|/9j/|R0lGOD|JVBERi0"
    r"|UEsDB|H4sI"
)


def _headerless_lines(match: re.Match[str]) -> bool:
    """Lines of random bytes, not a public block's body nor base64 of text or of a file."""
    lines = _BASE64_RUN.findall(match.group())
    if len(lines) < 3:
        return False
    if _NOT_KEY_BODY.match(lines[0]):
        return False
    before = match.string[: match.start()]
    header = before.rfind("-----BEGIN ")
    inside = header >= 0 and "-----END" not in before[header:]
    if inside and "PRIVATE KEY" not in before[header : header + 60]:
        return False  # inside a certificate or a public key
    try:
        decoded = base64.b64decode("".join(lines[:3])[:192])
    except binascii.Error:
        return False
    printable = sum(32 <= byte < 127 for byte in decoded)
    return printable < 0.8 * len(decoded)


def _key_body(match: re.Match[str]) -> bool:
    return _headerless_lines(match) if match.groupdict().get("lines") else _private_body(match)


KEY_DETECTORS: tuple[Detector, ...] = (
    detector(
        "private-key-block",
        # A header and, before any END line, the base64 of a body; then the rest of the body
        # and its END line, so that the whole block is the secret.
        r"-----BEGIN " + _KEY_HEADER + r"(?s:(?:(?!-----END).){0,400}?)[A-Za-z0-9+/]{40}"
        r"[A-Za-z0-9+/=\s\\]{0,16384}+(?:-----END " + _KEY_HEADER + ")?",
        hints=("-----BEGIN ",),
    ),
    detector(
        "private-key-body",
        (
            # A key pasted without its BEGIN line: a known start, then a run of base64 lines.
            form(
                r"(?:(?<![A-Za-z0-9+/])|(?<=\\n))(?:" + "|".join(_BODY_STARTS) + r")"
                r"(?:[A-Za-z0-9+/=]|\r?\n|\\n){24,16384}+",
                *("b3BlbnNzaC1rZXktdjE", "MII", "MIG", "MC4CAQAw", "MHcCAQEEI", "LS0tLS1CRUdJTi"),
            ),
            form(_BODY_LINES, "\n"),
        ),
        _key_body,
        rank=BROAD,
    ),
    detector(
        "putty-private-key",
        r"PuTTY-User-Key-File-[23]:[ \t]{0,8}+[a-z0-9@.-]{3,64}+"
        r"(?s:.{0,1200}?)Private-Lines:[ \t]{0,8}+[0-9]{1,3}+\r?\n[A-Za-z0-9+/=\r\n]{40,8192}+",
        hints=("PuTTY-User-Key-File-",),
    ),
    detector(
        "age-secret-key",
        r"(?<![A-Z0-9-])AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}(?![A-Z0-9])",
        hints=("AGE-SECRET-KEY-1",),
    ),
)
