"""Built-in secret detectors. They are always on; no setting or ``--force`` turns them off.

Each detector names what it found (``github-token``, ``password-in-url``) and where, never the
secret itself, so a refusal can be shown and logged without leaking what it refused.
Placeholders (``<YOUR_TOKEN>``, ``${API_KEY}``, ``xxxx``), commit SHAs, UUIDs and image digests
are not secrets, and prose about security is not either.

Every pattern is written to stay linear on hostile input: a match may only start where the
run of characters it scans begins (a negative lookbehind on the same class), repetitions are
bounded, and runs followed by a character outside their class are possessive.
"""

import base64
import binascii
import re
from collections.abc import Callable

import msgspec

from memmesh.policy._secret_values import (
    is_password_name,
    is_placeholder,
    is_secret_name,
    is_type_name,
    password_value,
    random_looking,
    token_body,
    url_password,
)

__all__ = ["DETECTORS", "Finding", "find_secrets"]


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    """A detected secret: which detector fired and where; the value itself is never kept."""

    detector: str
    start: int
    end: int


class _Detector(msgspec.Struct, frozen=True):
    name: str
    pattern: re.Pattern[str]
    # Decides on the match; ``None`` accepts every match.
    accept: Callable[[re.Match[str]], bool] | None = None


# --- matches -------------------------------------------------------------------------------


def _value(match: re.Match[str]) -> str:
    """The captured value: the first group named ``v…`` that took part, else the whole match."""
    for key, group in match.groupdict().items():
        if key.startswith("v") and group is not None:
            return group
    return match.group()


_QUOTED_GROUPS = ("v_d", "v_s", "v_b", "v_x")


def _quoted(match: re.Match[str]) -> bool:
    """Whether the value was spelled out in quotes (or as an XML element's text)."""
    groups = match.groupdict()
    return any(groups.get(key) is not None for key in _QUOTED_GROUPS)


def _unquoted_value(match: re.Match[str]) -> str:
    """The value, without the sentence punctuation an unquoted value may have picked up."""
    value = _value(match)
    return value if _quoted(match) else value.rstrip(".,:;)]}")


def _body(check: Callable[[str], bool]) -> Callable[[re.Match[str]], bool]:
    return lambda match: check(_value(match))


def _in_colon_chain(match: re.Match[str]) -> bool:
    """``a:b:c`` is an ARN, a resource type or a time, not ``name: value``."""
    start = match.start()
    return match["op"] == ":" and start > 0 and match.string[start - 1] == ":"


def _password_assignment(match: re.Match[str]) -> bool:
    name = match["n"] or match["n_x"] or ""
    if not is_password_name(name) or _in_colon_chain(match):
        return False
    # ``password=pw`` in code names a variable; in ``.env`` (upper-case names), YAML or JSON
    # (``:``) and XML the value is spelled out.
    quoted = _quoted(match)
    value = _unquoted_value(match)
    # ``password: SecretStr`` is a type annotation.
    if not quoted and match["op"] == ":" and value.isalpha() and is_type_name(value):
        return False
    literal = quoted or match["op"] != "=" or name.isupper() or match["n_x"] is not None
    return password_value(value, literal=literal)


def _secret_assignment(match: re.Match[str]) -> bool:
    name = match["n"] or match["n_x"] or ""
    if not is_secret_name(name) or _in_colon_chain(match):
        return False
    return random_looking(_unquoted_value(match))


def _cli_flag(match: re.Match[str]) -> bool:
    value = _unquoted_value(match)
    if match["kind"] is not None:  # --token, --api-key, --secret ...
        return is_secret_name(match["kind"]) and random_looking(value)
    return password_value(value, literal=True)


def _authorization(match: re.Match[str]) -> bool:
    value = _value(match)
    if match["scheme"].lower() == "bearer":
        return random_looking(value)
    if len(value) % 4:
        return False
    try:
        decoded = base64.b64decode(value, validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        return False
    user, colon, password = decoded.partition(":")
    return bool(colon and user and decoded.isprintable() and url_password(password))


def _d(name: str, pattern: str, accept: Callable[[re.Match[str]], bool] | None = None) -> _Detector:
    return _Detector(name, re.compile(pattern), accept)


# A quoted value up to its closing quote, or an unquoted run.
_VALUE = (
    r"""(?:"(?P<v_d>[^"\n]{1,512}+)"|'(?P<v_s>[^'\n]{1,512}+)'|`(?P<v_b>[^`\n]{1,512}+)`"""
    r"""|(?P<v>[^\s"'`,;<>]{1,512}+))"""
)
# ``name = value``, ``name: value``, ``"name": "value"``, ``name := value``, ``<name>value</``.
_ASSIGNMENT = (
    r"(?<![A-Za-z0-9_.-])(?P<n>[A-Za-z_][A-Za-z0-9_.-]{0,63}+)[\"'\]]{0,2}+[ \t]{0,8}+"
    # The value is only looked at, so that it can be the next assignment's name: ``a: b: c``.
    r"(?P<op>:=|=>|=|:)(?!=|//)(?=[ \t]{0,8}+"
    + _VALUE
    + r")|<(?P<n_x>[A-Za-z_][A-Za-z0-9_.-]{0,63}+)>"
    r"(?P<v_x>[^<\s]{1,512}+)</"
)
_FLAG_VALUE = r"(?:[= ][ \t]{0,8}+)" + _VALUE
_NO_RUN_BEFORE = r"(?<![A-Za-z0-9_-])"

DETECTORS: tuple[_Detector, ...] = (
    _d(
        "private-key-block",
        # A header and, before any END line, the base64 of a body.
        r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
        r"(?s:(?:(?!-----END).){0,400}?)[A-Za-z0-9+/]{40}",
    ),
    _d(
        "aws-access-key-id",
        r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)(?P<v>[0-9A-Z]{16}+)(?![A-Za-z0-9])",
        lambda m: not is_placeholder(m.group()),
    ),
    _d(
        "aws-secret-access-key",
        r"(?i:(?<![A-Za-z0-9])(?:aws_?)?secret_?(?:access_?)?key)[\"']?[ \t]{0,8}+(?:=|:|=>)"
        r"[ \t]{0,8}+[\"']?(?P<v>[A-Za-z0-9/+=]{40}+)(?![A-Za-z0-9/+=])",
        _body(token_body),
    ),
    _d(
        "google-api-key",
        _NO_RUN_BEFORE + r"AIza(?P<v>[0-9A-Za-z_-]{35}+)(?![0-9A-Za-z_-])",
        _body(token_body),
    ),
    _d(
        "google-oauth-secret",
        _NO_RUN_BEFORE + r"(?:GOCSPX-(?P<v>[A-Za-z0-9_-]{24,64}+)"
        r"|ya29\.(?P<v_t>[A-Za-z0-9_-]{30,4096}+)|1//0(?P<v_r>[A-Za-z0-9_-]{40,1024}+))",
        _body(token_body),
    ),
    _d(
        "azure-connection-string",
        r"(?i:AccountKey|SharedAccessKey)[ \t]{0,8}+=[ \t]{0,8}+"
        r"(?P<v>[A-Za-z0-9+/]{20,512}+={0,2})",
        _body(token_body),
    ),
    _d(
        "azure-sas-signature",
        r"[?&;]sig=(?P<v>[A-Za-z0-9%+/=]{30,512}+)",
        _body(token_body),
    ),
    _d(
        "github-token",
        _NO_RUN_BEFORE + r"gh[pousr]_(?P<v>[A-Za-z0-9]{36,251}+)(?![A-Za-z0-9_])",
        _body(token_body),
    ),
    _d(
        "github-fine-grained-token",
        _NO_RUN_BEFORE + r"github_pat_(?P<v>[A-Za-z0-9_]{50,255}+)",
        _body(token_body),
    ),
    _d(
        "gitlab-token",
        _NO_RUN_BEFORE + r"(?:gl(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt|agent)-"
        r"(?P<v>[A-Za-z0-9_.-]{20,255}+)|GR1348941(?P<v_r>[A-Za-z0-9_-]{20,255}+))",
        _body(token_body),
    ),
    _d(
        "slack-token",
        _NO_RUN_BEFORE + r"(?:xox[abposre]|xoxe\.xox[bp]|xapp)-(?P<v>[A-Za-z0-9-]{10,255}+)",
        lambda m: any(c.isdigit() for c in m["v"]) and token_body(m["v"]),
    ),
    _d(
        "slack-webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/T[A-Z0-9]{6,16}+/[AB][A-Z0-9]{6,16}+/"
        r"(?:[0-9]{6,24}+/)?(?P<v>[A-Za-z0-9]{20,64}+)",
        _body(token_body),
    ),
    _d(
        "stripe-key",
        _NO_RUN_BEFORE
        + r"(?:(?:sk|rk|pk)_(?:live|test)|whsec)_(?P<v>[A-Za-z0-9]{16,255}+)(?![A-Za-z0-9])",
        _body(token_body),
    ),
    _d(
        "npm-token",
        _NO_RUN_BEFORE + r"npm_(?P<v>[A-Za-z0-9]{36}+)(?![A-Za-z0-9])",
        _body(token_body),
    ),
    _d(
        "pypi-token",
        _NO_RUN_BEFORE + r"pypi-AgE(?P<v>[A-Za-z0-9_-]{50,1024}+)",
        _body(token_body),
    ),
    _d(
        "anthropic-api-key",
        _NO_RUN_BEFORE + r"sk-ant-[a-z]{2,10}+[0-9]{0,4}+-(?P<v>[A-Za-z0-9_-]{20,255}+)",
        _body(token_body),
    ),
    _d(
        "openai-api-key",
        _NO_RUN_BEFORE
        + r"sk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?(?P<v>[A-Za-z0-9_-]{20,255}+)",
        _body(random_looking),
    ),
    _d(
        "jwt",
        _NO_RUN_BEFORE
        + r"eyJ[A-Za-z0-9_-]{8,2048}+\.eyJ[A-Za-z0-9_-]{8,8192}+\.[A-Za-z0-9_-]{8,2048}+",
    ),
    _d(
        "password-in-url",
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}+://[^\s:/@'\"]{0,128}+:"
        r"(?P<v>[^\s/@'\"]{1,256}+)@",
        _body(url_password),
    ),
    _d("password-assignment", _ASSIGNMENT, _password_assignment),
    _d("secret-assignment", _ASSIGNMENT, _secret_assignment),
    _d(
        "cli-password-flag",
        r"(?<![A-Za-z0-9_-])--(?:(?:[a-z0-9]+-){0,3}(?:password|passwd|pass)"
        r"|(?P<kind>(?:[a-z0-9]+-){0,3}(?:token|api-key|apikey|secret|access-key|secret-key)))"
        + _FLAG_VALUE
        + r"|(?<![A-Za-z0-9_-])-pass(?:in|out)?[ \t]{1,8}+pass:(?P<v_o>[^\s\"'`]{1,256}+)"
        r"|\bmysql(?:dump|admin|sh)?\b[^\n]{0,200}?[ \t]-p(?P<v_m>[^\s\"'`-][^\s\"'`]{0,255}+)"
        r"|\bcurl\b[^\n]{0,200}?[ \t](?:-u|--user)[ \t]{1,8}+[\"']?[^\s:\"'@]{1,64}+:"
        r"(?P<v_c>[^\s\"'`@]{1,256}+)",
        _cli_flag,
    ),
    _d(
        "authorization-header",
        r"(?<![A-Za-z0-9_-])(?P<scheme>(?i:bearer)|Basic)[ \t]{1,8}+"
        r"(?P<v>[A-Za-z0-9._~+/-]{8,4096}+=*)",
        _authorization,
    ),
)


_GENERIC = frozenset(
    {"authorization-header", "cli-password-flag", "password-assignment", "secret-assignment"}
)


def _end(match: re.Match[str]) -> int:
    """Where the finding ends: the match, or its value if the value was only looked ahead at."""
    ends = [match.end(key) for key, group in match.groupdict().items() if group is not None]
    return max([match.end(), *ends])


def find_secrets(text: str) -> list[Finding]:
    """Every secret the built-in detectors find in ``text``, in order of position."""
    findings: list[Finding] = []
    for detector in DETECTORS:
        for match in detector.pattern.finditer(text):
            if detector.accept is None or detector.accept(match):
                findings.append(
                    Finding(detector=detector.name, start=match.start(), end=_end(match))
                )
    # ``GITHUB_TOKEN=ghp_…`` is a GitHub token: a provider's detector names it better than the
    # generic one that saw a secret-looking assignment around it.
    specific = [f for f in findings if f.detector not in _GENERIC]
    findings = [
        f
        for f in findings
        if f.detector not in _GENERIC
        or not any(s.start < f.end and f.start < s.end for s in specific)
    ]
    findings.sort(key=lambda f: (f.start, f.detector))
    return findings
