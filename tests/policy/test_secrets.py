"""The built-in secret detectors on a corpus of developer memories.

The corpus (``tests/policy/_corpus_*.py``) holds secrets of many kinds, each in sentences a
developer might save, and hard negatives: hashes, UUIDs, public keys, digests, placeholders,
redacted values, base64 of ordinary text, versions, and prose about passwords without one.
Every secret must be found, by the detector that names it best; at most 1% of the negatives
may be blocked.
"""

import msgspec
import pytest

from memmesh.policy.secrets import DETECTORS, Finding, find_secrets
from tests.policy._corpus import Secret
from tests.policy._corpus_cloud import CLOUD, KEYS
from tests.policy._corpus_code import CODE
from tests.policy._corpus_generic import GENERIC
from tests.policy._corpus_harmless import HARMLESS_MORE
from tests.policy._corpus_notes import GITHUB_TOKEN, JWT_HS256, PYPI_TOKEN
from tests.policy._corpus_notes import HARMLESS as NOTES_HARMLESS
from tests.policy._corpus_notes import SECRETS as NOTES
from tests.policy._corpus_saas import SAAS
from tests.policy._corpus_words import HARMLESS as WORDS_HARMLESS
from tests.policy._corpus_words import SECRETS as WORDS

DETECTOR_NAMES = {detector.name for detector in DETECTORS}
SECRETS: list[Secret] = NOTES + KEYS + CLOUD + CODE + SAAS + GENERIC + WORDS
HARMLESS: list[str] = NOTES_HARMLESS + HARMLESS_MORE + WORDS_HARMLESS


def _found(secret: Secret) -> list[Finding]:
    start = secret.text.index(secret.value)
    end = start + len(secret.value)
    return [f for f in find_secrets(secret.text) if f.start < end and start < f.end]


def _ids() -> list[str]:
    seen: dict[str, int] = {}
    ids = []
    for secret in SECRETS:
        seen[secret.detector] = seen.get(secret.detector, 0) + 1
        ids.append(f"{secret.detector}-{seen[secret.detector]}")
    return ids


def test_the_corpus_is_large_and_covers_every_detector() -> None:
    assert len(SECRETS) >= 300
    assert len({secret.kind for secret in SECRETS}) >= 80
    assert len(HARMLESS) >= 300
    assert len(set(HARMLESS)) == len(HARMLESS)
    assert {secret.detector for secret in SECRETS} == DETECTOR_NAMES
    for name in DETECTOR_NAMES:
        assert sum(secret.detector == name for secret in SECRETS) >= 2, name


@pytest.mark.parametrize("secret", SECRETS, ids=_ids())
def test_every_secret_is_found_by_its_detector(secret: Secret) -> None:
    found = _found(secret)
    assert secret.detector in {f.detector for f in found}, [f.detector for f in found]


def test_every_secret_is_blocked_and_at_most_one_percent_of_look_alikes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    caught = sum(bool(_found(secret)) for secret in SECRETS)
    blocked = [(text, find_secrets(text)) for text in HARMLESS]
    blocked = [(text, findings) for text, findings in blocked if findings]
    kinds = len({secret.kind for secret in SECRETS})
    with capsys.disabled():
        print(
            f"\nsecrets blocked {caught}/{len(SECRETS)} over {kinds} kinds "
            f"({len(DETECTORS)} detectors); look-alikes blocked {len(blocked)}/{len(HARMLESS)}"
        )
    assert caught == len(SECRETS)
    assert len(blocked) <= 0.01 * len(HARMLESS), blocked


def test_every_finding_names_a_detector() -> None:
    texts = [secret.text for secret in SECRETS] + HARMLESS + ["\n".join(HARMLESS)]
    for text in texts:
        for finding in find_secrets(text):
            assert finding.detector in DETECTOR_NAMES
            assert 0 <= finding.start < finding.end <= len(text)


def test_detector_names_are_unique() -> None:
    assert len(DETECTOR_NAMES) == len(DETECTORS)


def test_a_finding_holds_only_the_detector_and_where() -> None:
    assert [field.name for field in msgspec.structs.fields(Finding)] == ["detector", "start", "end"]


@pytest.mark.parametrize("secret", SECRETS, ids=_ids())
def test_a_finding_never_contains_the_secret(secret: Secret) -> None:
    findings = find_secrets(secret.text)
    assert findings
    # Without the detectors' names: ``rubygems-token`` names the token's prefix.
    shown = " ".join(
        (repr(f) + str(f) + msgspec.json.encode(f).decode()).replace(f.detector, "")
        for f in findings
    )
    value = secret.value
    pieces = {value[i : i + 8] for i in range(len(value) - 7)}
    assert not [piece for piece in pieces if piece in shown]


def test_findings_are_in_order_of_position() -> None:
    text = "\n".join(secret.text for secret in SECRETS)
    findings = find_secrets(text)
    assert findings == sorted(findings, key=lambda f: (f.start, f.detector))
    assert len({f.detector for f in findings}) == len(DETECTOR_NAMES)


@pytest.mark.parametrize(
    ("text", "detector"),
    [
        ("GITHUB_TOKEN=" + GITHUB_TOKEN, "github-token"),
        ('{"password": "' + PYPI_TOKEN + '"}', "pypi-token"),
        ("Authorization: Bearer " + JWT_HS256, "jwt"),
    ],
)
def test_a_provider_detector_is_named_rather_than_a_generic_one(text: str, detector: str) -> None:
    assert [f.detector for f in find_secrets(text)] == [detector]
