"""Built-in secret detectors. They are always on; no setting or ``--force`` turns them off.

Each detector names what it found (``github-token``, ``password-in-url``) and where, never the
secret itself, so a refusal can be shown and logged without leaking what it refused.
Placeholders (``<YOUR_TOKEN>``, ``${API_KEY}``, ``xxxx``), commit SHAs, UUIDs and image digests
are not secrets, and prose about security is not either.
"""

import math
import re
from collections import Counter
from collections.abc import Callable

import msgspec

__all__ = ["DETECTORS", "Finding", "find_secrets"]


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    """A detected secret: which detector fired and where; the value itself is never kept."""

    detector: str
    start: int
    end: int


class _Detector(msgspec.Struct, frozen=True):
    name: str
    pattern: re.Pattern[str]
    # Decides on the captured value (group "v" if present, else the whole match).
    accept: Callable[[str], bool] | None = None


_PLACEHOLDER = re.compile(
    r"""^(?:
        <[^<>]*> | \$\{[^}]*\} | \$\(?[A-Za-z_][A-Za-z0-9_]*\)? | \{\{.*\}\} | %[sd] | %\([a-z_]+\)s
      | (?i:.*(?:example|placeholder|redacted|your[_-]|dummy|sample|changeme|replace[_-]?me).*)
      | .*\.\.\..*
      | (.)\1{3,}
      | [*xX•.]+
    )$""",
    re.VERBOSE,
)


def _is_placeholder(value: str) -> bool:
    return bool(_PLACEHOLDER.match(value.strip("\"'`")))


def _entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _classes(value: str) -> int:
    """How many of lower, upper, digit and other characters ``value`` mixes."""
    return sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() for c in value),
        )
    )


def _random_looking(value: str) -> bool:
    """A token-like value: long, mixed, high entropy, and not a placeholder."""
    if _is_placeholder(value) or len(value) < 16:
        return False
    return _entropy(value) >= 3.0 and _classes(value) >= 2


def _password_like(value: str) -> bool:
    """A value assigned to a password: anything but a placeholder, a variable or a plain word."""
    if _is_placeholder(value) or len(value) < 6:
        return False
    if value.lower() in {"none", "null", "true", "false", "required", "optional", "secret"}:
        return False
    return _classes(value) >= 2 or len(value) >= 12


def _not_placeholder(value: str) -> bool:
    return not _is_placeholder(value)


def _d(name: str, pattern: str, accept: Callable[[str], bool] | None = None) -> _Detector:
    return _Detector(name, re.compile(pattern), accept)


_SECRET_NAME = (
    r"(?:[A-Za-z0-9]+[_.-])*(?:secret|token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|"
    r"private[_-]?key|client[_-]?secret|credentials?|signing[_-]?key|session[_-]?key|"
    r"encryption[_-]?key|bearer)(?:[_.-][A-Za-z0-9]+)*"
)
_ASSIGN = r"""\s*(?:=|:=|:|=>)\s*["'`]?(?P<v>[^\s"'`,;]+)"""

DETECTORS: tuple[_Detector, ...] = (
    _d("private-key-block", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    _d("aws-access-key-id", r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
    _d(
        "aws-secret-access-key",
        r"(?i:aws_?secret_?(?:access_?)?key)" + _ASSIGN,
        lambda v: len(v) >= 30 and _not_placeholder(v),
    ),
    _d("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
    _d("google-oauth-secret", r"\bGOCSPX-[A-Za-z0-9_-]{20,}"),
    _d(
        "azure-connection-string",
        r"(?i:AccountKey|SharedAccessKey)\s*=\s*(?P<v>[A-Za-z0-9+/=]{20,})",
        _not_placeholder,
    ),
    _d("azure-sas-signature", r"[?&]sig=(?P<v>[A-Za-z0-9%+/=]{30,})", _not_placeholder),
    _d("github-token", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b"),
    _d("github-fine-grained-token", r"\bgithub_pat_[A-Za-z0-9_]{50,}\b"),
    _d("gitlab-token", r"\bgl(?:pat|dt|rt|ptt|cbt|oas)-[A-Za-z0-9_-]{20,}\b"),
    _d("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"),
    _d("slack-webhook", r"hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{16,}"),
    _d("stripe-key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b"),
    _d("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    _d("pypi-token", r"\bpypi-AgE[A-Za-z0-9_-]{50,}"),
    _d("anthropic-api-key", r"\bsk-ant-[a-z]+\d*-[A-Za-z0-9_-]{20,}"),
    _d(
        "openai-api-key",
        r"\bsk-(?:proj-|svcacct-|admin-|None-)?(?P<v>[A-Za-z0-9_-]{20,})",
        lambda v: _classes(v) >= 2 and _entropy(v) >= 3.0,
    ),
    _d("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    _d(
        "password-in-url",
        r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@'\"]+:(?P<v>[^\s/@'\"]+)@",
        _not_placeholder,
    ),
    _d(
        "password-assignment",
        r"(?i:\b(?:[A-Za-z0-9]+[_.-])*(?:password|passwd|passphrase|pwd|db_pass|pass))" + _ASSIGN,
        _password_like,
    ),
    _d("secret-assignment", r"(?i:\b" + _SECRET_NAME + ")" + _ASSIGN, _random_looking),
    _d(
        "cli-password-flag",
        r"(?:--password|--token|--api-key|--secret)[= ](?P<v>[^\s\"'`]+)",
        _password_like,
    ),
)


def find_secrets(text: str) -> list[Finding]:
    """Every secret the built-in detectors find in ``text``, in order of position."""
    findings: list[Finding] = []
    for detector in DETECTORS:
        for match in detector.pattern.finditer(text):
            value = match.groupdict().get("v") or match.group()
            if detector.accept is None or detector.accept(value):
                findings.append(
                    Finding(detector=detector.name, start=match.start(), end=match.end())
                )
    findings.sort(key=lambda f: (f.start, f.detector))
    return findings
