"""Secrets named in words, two secrets in one text, and the prose around credentials that
states none (``tests/policy/_corpus_words.py``): every listed secret is found and redacted,
and at most 1% of the hard negatives is blocked."""

import itertools

import pytest

from memmesh.policy.redaction import redact_text
from memmesh.policy.secrets import find_secrets
from tests.policy._corpus import Secret
from tests.policy._corpus_words import HARMLESS, SECRETS

GITHUB_TOKEN = "ghp" + "_R8kq2ZvX4mN7pL1sT9wY3bC6dF0gH5jK8aQe"
AWS_KEY_ID = "AKIA" + "Q7XK2M9PLR4TZW8N"
AWS_SECRET = "Hq3mZ8xLp2/Wv9Rt4Kc7+Bn1Yd6Fs0Gj5Ua8Ie3o"


def _caught(secret: Secret) -> bool:
    start = secret.text.index(secret.value)
    end = start + len(secret.value)
    found = [f for f in find_secrets(secret.text) if f.start < end and start < f.end]
    return secret.detector in {f.detector for f in found}


def test_secrets_in_words_are_all_found_and_look_alikes_rarely(
    capsys: pytest.CaptureFixture[str],
) -> None:
    missed = [secret.text for secret in SECRETS if not _caught(secret)]
    blocked = [text for text in HARMLESS if find_secrets(text)]
    with capsys.disabled():
        print(
            f"\nsecrets in words found {len(SECRETS) - len(missed)}/{len(SECRETS)} "
            f"({100 * (len(SECRETS) - len(missed)) / len(SECRETS):.1f}%); hard negatives "
            f"blocked {len(blocked)}/{len(HARMLESS)} ({100 * len(blocked) / len(HARMLESS):.1f}%)"
        )
    assert len(SECRETS) >= 60
    assert len(HARMLESS) >= 100
    assert missed == []
    assert len(blocked) <= 0.01 * len(HARMLESS), blocked


@pytest.mark.parametrize(
    ("text", "secrets"),
    [
        (f"the AWS key {AWS_KEY_ID} with secret {AWS_SECRET}", [AWS_KEY_ID, AWS_SECRET]),
        (f"aws creds: {AWS_KEY_ID}:{AWS_SECRET}", [AWS_KEY_ID, AWS_SECRET]),
        (f"AWS_CREDS={AWS_KEY_ID}/{AWS_SECRET}", [AWS_KEY_ID, AWS_SECRET]),
        (f"token: {GITHUB_TOKEN}:Zq8vLm2Xp9Rt4Wn7Kx", [GITHUB_TOKEN, "Zq8vLm2Xp9Rt4Wn7Kx"]),
        (f"the password is Kx7!mQ2pLz-{GITHUB_TOKEN}", ["Kx7!mQ2pLz", GITHUB_TOKEN]),
    ],
)
def test_one_detectors_match_never_hides_a_second_secret(text: str, secrets: list[str]) -> None:
    findings = find_secrets(text)
    for secret in secrets:
        start = text.index(secret)
        assert any(f.start <= start and start + len(secret) <= f.end for f in findings), secret
    clean, _ = redact_text(text)
    assert not [secret for secret in secrets if secret in clean]


def test_findings_never_overlap() -> None:
    texts = [secret.text for secret in SECRETS] + [f"token: {GITHUB_TOKEN}:Zq8vLm2Xp9Rt4Wn7Kx"]
    for text in texts:
        findings = find_secrets(text)
        for before, after in itertools.pairwise(findings):
            assert before.end <= after.start, (text, findings)


@pytest.mark.parametrize("secret", SECRETS, ids=[s.kind for s in SECRETS])
def test_one_pass_of_the_detectors_finds_what_redaction_removes(secret: Secret) -> None:
    """The publish check (one pass of :func:`find_secrets`) blocks whatever the write-time
    redaction removes: after replacing the first pass's findings, nothing is left to find."""
    text = secret.text
    pieces, done = [], 0
    for finding in find_secrets(text):
        pieces += [text[done : finding.start], f"[redacted: {finding.detector}]"]
        done = finding.end
    once = "".join(pieces) + text[done:]
    assert find_secrets(once) == []
    assert once == redact_text(text)[0]
