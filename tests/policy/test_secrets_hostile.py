"""The built-in secret detectors on hostile input: 100 KB built to make a pattern backtrack is
checked in time proportional to 100 KB of plain text, never quadratic or worse.

The measure is a ratio of two timings taken the same way on the same machine, not a
wall-clock limit; each is the best of a few runs, so that a busy machine does not decide.
"""

import time

import pytest

from memmesh.policy.secrets import DETECTORS, find_secrets
from tests.policy._corpus_harmless import HARMLESS_MORE
from tests.policy._corpus_notes import HARMLESS

SIZE = 100_000
# Far above what a linear check shows (up to ~10x, where every few characters a detector
# has a value to judge), far below what backtracking does on 100 KB (1000x and more).
MAX_RATIO = 25
NAMES = {detector.name for detector in DETECTORS}

# Each repeated up to SIZE: runs a pattern scans, prefixes it starts from, and separators
# after which a value is looked at.
HOSTILE = {
    "letters": "a",
    "dotted": "a.",
    "password-assignments": "password=",
    "json-names": '"password": "',
    "names": "token: ",
    "dotenv-lines": "SECRET_KEY=abc\n",
    "pem-headers": "-----BEGIN ",
    "pem-private-headers": "-----BEGIN RSA PRIVATE KEY-----",
    "pem-lines": "-----BEGIN PRIVATE KEY-----\nA-",
    "key-bodies": "MII",
    "openssh-bodies": "b3BlbnNzaC1rZXktdjE",
    "putty-headers": "PuTTY-User-Key-File-3: ssh-rsa\n",
    "jwt-prefixes": "eyJ-",
    "schemes": "x://",
    "url-users": "https://u:",
    "bearer": "Bearer ",
    "mysql": "mysql -p",
    "tools": "docker login ",
    "curl": "curl -u a:",
    "flags": "--password ",
    "token-flags": "--a-b-c-token=",
    "prose": "the password is ",
    "prose-words": "password ",
    "secret-prose": "the api key for ",
    "twilio-sids": "AC0123456789abcdef0123456789abcdef ",
    "hex": "0123456789abcdef",
    "digits-colon": "1234567890:",
    "base64": "QUJD+/",
    "base64-lines": "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=\n",
    "quotes": "\"'`",
    "colons": ":",
    "equals": "=",
    "dashes": "-",
    "xml-key-values": 'key="',
    "netrc": "machine a login b ",
    "aiza": "AIza",
    "ghp": "ghp_",
    "sig": "&sig=",
    "mixed": "token=" + "Ab1" * 20 + " ",
    "aws-key-ids": "AKIAIOSFODNN7QZXWVYT ",
    "secret-key-words": "secret key ",
    "account-key-words": "storage account key ",
    "handed-passwords": "with the admin password ",
    "handed-tokens": ", token ",
    "login-pairs": "login as a/",
    "redis-auth": "redis AUTH a ",
    "prompt-auth": "> AUTH ",
    "key-body-lines": "QUJD" * 16 + "\n",
    "quoted-key-body-lines": '  "' + "QUJD" * 16 + '\\n"\n',
}


def _best_of(runs: int, text: str) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        find_secrets(text)
        best = min(best, time.perf_counter() - start)
    return best


@pytest.fixture(scope="module")
def plain_time() -> float:
    """Checking 100 KB of ordinary developer notes."""
    plain = ("\n".join(HARMLESS + HARMLESS_MORE) * 20)[:SIZE]
    return _best_of(3, plain)


@pytest.mark.parametrize("unit", HOSTILE.values(), ids=HOSTILE.keys())
def test_100_kb_of_hostile_input_is_checked_in_time_proportional_to_plain_text(
    unit: str, plain_time: float
) -> None:
    text = (unit * (SIZE // len(unit) + 1))[:SIZE]
    ratio = _best_of(1, text) / plain_time
    if ratio > MAX_RATIO:  # a second look before blaming the pattern
        ratio = _best_of(2, text) / plain_time
    assert ratio <= MAX_RATIO, f"{ratio:.1f}x plain text"


def test_hostile_input_yields_only_named_findings() -> None:
    text = "".join(HOSTILE.values()) * 4
    for finding in find_secrets(text):
        assert finding.detector in NAMES
        assert 0 <= finding.start < finding.end <= len(text)
