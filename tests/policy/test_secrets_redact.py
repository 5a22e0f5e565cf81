"""Redacting detected secrets (what ``remember`` stores instead of the secret)."""

import pytest

from memmesh.policy.redaction import redact, redact_text
from memmesh.policy.secrets import find_secrets
from tests.policy._corpus import Secret
from tests.policy.test_secrets import HARMLESS, SECRETS, _ids

GITHUB_TOKEN = "ghp" + "_R8kq2ZvX4mN7pL1sT9wY3bC6dF0gH5jK8aQe"


@pytest.mark.parametrize("secret", SECRETS, ids=_ids())
def test_redacting_removes_the_secret_and_leaves_nothing_to_find(secret: Secret) -> None:
    text, removed = redact_text(secret.text)
    assert secret.value not in text
    assert f"[redacted: {secret.detector}]" in text
    assert secret.detector in removed
    assert find_secrets(text) == []


def test_redacting_leaves_every_look_alike_as_it_was() -> None:
    changed = [text for text in HARMLESS if redact_text(text) != (text, ())]
    assert changed == []


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (
            "Staging .env has DB_PASSWORD=Summer2024! and nothing else",
            "Staging .env has DB_PASSWORD=[redacted: password-assignment] and nothing else",
        ),
        (
            f"release with GITHUB_TOKEN={GITHUB_TOKEN} then tag",
            "release with GITHUB_TOKEN=[redacted: github-token] then tag",
        ),
        (
            "the staging password is hunter2-Xq9! (ask Bob before rotating)",
            "the staging password is [redacted: password-in-prose] (ask Bob before rotating)",
        ),
        (
            "mysql -u root -p'Xq9!hunter' shop",
            "mysql -u root -p'[redacted: cli-password-flag]' shop",
        ),
        (
            "postgres://app:Tr0ub4dor&3x@db:5432/app",
            "postgres://app:[redacted: password-in-url]@db:5432/app",
        ),
    ],
)
def test_only_the_secret_is_replaced_and_the_words_around_it_stay(text: str, redacted: str) -> None:
    assert redact_text(text)[0] == redacted


def test_a_whole_private_key_block_goes_including_its_end_line() -> None:
    block = next(s for s in SECRETS if s.kind == "openssh-private-key").value
    text, removed = redact_text(f"key:\n{block}\nthanks")
    assert text == "key:\n[redacted: private-key-block]\nthanks"
    assert removed == ("private-key-block",)


def test_several_secrets_are_each_named_in_order() -> None:
    text = f"token {GITHUB_TOKEN}; DB_PASSWORD=Summer2024!; token again {GITHUB_TOKEN}"
    clean, removed = redact_text(text)
    assert removed == ("github-token", "password-assignment", "github-token")
    assert GITHUB_TOKEN not in clean


def test_a_tag_holding_a_secret_is_dropped_and_named() -> None:
    result = redact("CI publishes on tags", ["ci", GITHUB_TOKEN, "release"])
    assert result.text == "CI publishes on tags"
    assert result.tags == ("ci", "release")
    assert result.detectors == ("github-token",)


def test_text_without_a_secret_is_kept_as_it_is() -> None:
    result = redact("The billing service retries webhooks 5 times", ["billing"])
    assert (result.text, result.tags, result.detectors) == (
        "The billing service retries webhooks 5 times",
        ("billing",),
        (),
    )


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("DB_PASSWORD=Summer2024!", "Summer2024!"),
        ('{"password": "jgrxENi7S11Iwcj^W9iW"}', "jgrxENi7S11Iwcj^W9iW"),
        (f"export GITHUB_TOKEN={GITHUB_TOKEN}.", GITHUB_TOKEN),
        ("the wifi password is Acme-Guest-2024.", "Acme-Guest-2024"),
    ],
)
def test_a_finding_spans_exactly_the_secret(text: str, secret: str) -> None:
    [finding] = find_secrets(text)
    assert text[finding.start : finding.end] == secret
