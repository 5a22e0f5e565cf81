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
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable
from urllib.parse import unquote

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
    # Decides on the match; ``None`` accepts every match.
    accept: Callable[[re.Match[str]], bool] | None = None


# --- what a value looks like ---------------------------------------------------------------

# Words that mark a documentation value. They count in lower, UPPER or Capitalized form only,
# so that random mixed-case text (``…fQfDuMMYw…``) does not spell them by chance.
_PLACEHOLDER_WORDS = (
    "changeit",
    "changeme",
    "dummy",
    "example",
    "insert_",
    "insert-",
    "not_a_real",
    "not-a-real",
    "placeholder",
    "redacted",
    "replace_me",
    "replace-me",
    "replaceme",
    "replace_with",
    "sample",
    "your_",
    "your-",
)


def _forms(*words: str) -> str:
    return "|".join(
        re.escape(form) for word in words for form in (word, word.upper(), word.capitalize())
    )


_PLACEHOLDER = re.compile(
    r"""^(?:
        <[^<>]*> | \[[^\[\]]*\] | \$\{[^}]*\} | \$\(.*\) | `.*` | \$[A-Za-z_][A-Za-z0-9_]*
      | \{\{.*\}\} | \{[A-Za-z_][A-Za-z0-9_.]*\} | %[sd] | %\([a-z_]+\)s | %[A-Z_]+%
      | .*(?:"""
    + _forms(*_PLACEHOLDER_WORDS)
    + r""").*
      | .*(?<![A-Za-z])(?:"""
    + _forms("fake")
    + r""")(?![A-Za-z]).*
      | .*[_-](?:"""
    + _forms("here")
    + r""")
      | .*(?:\.\.\.|…|x{4}|X{4}|\*\*\*|•••).*
      | (.)\1{3,}
      | [*xX•.]+
    )$""",
    re.VERBOSE,
)

# Documentation defaults: never a real credential worth refusing.
_DEFAULT_PASSWORDS = frozenset(
    {
        "admin",
        "changeit",
        "changeme",
        "default",
        "guest",
        "mypassword",
        "mysql",
        "pass",
        "passwd",
        "password",
        "postgres",
        "pw",
        "pwd",
        "redis",
        "root",
        "secret",
        "test",
        "user",
        "yourpassword",
    }
)
_NOT_PASSWORDS = _DEFAULT_PASSWORDS | {
    "disabled",
    "empty",
    "false",
    "nil",
    "none",
    "null",
    "optional",
    "prompt",
    "required",
    "true",
    "undefined",
}

_WORD_RUN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
# Words of a name or identifier: ``HTTPBasicAuth2`` -> ``HTTP``, ``Basic``, ``Auth``, ``2``.
_NAME_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# The letter pairs most frequent in English text, in order.
_COMMON_PAIRS = frozenset(
    """th he in er an re on at en nd ti es or te of ed is it al ar st to nt ng se ha as ou io le
    ve co me de hi ri ro ic ne ea ra ce li ch ll be ma si om ur ca el ta la ns di fo ho pe ec pr
    no ct us ac ot il tr ly nc et ut ss so rs un lo wa ge ie wh ee wi em ad ol rt po we na ul ni
    ts mo ow pa im mi ai sh ir su id os iv ia am fi ci vi pl ig tu ev ld ry mp fe bl ab gh ty op
    wo sa ay ex ke fr oo av ag if ap gr od bo sp rd do uc bu ei ov by rm ep tt oc fa ef cu rn sc
    gi da yo cr cl du ga qu ue ff ba ey ls va um pp ua up lu go ht ru ug ds lt pi rc rr eg au ck
    ew mu br bi pt ak pu ui rg ib tl ny ki rk ys ob mm fu ph og ms ye ud mb ip ub oi rl gu dr
    """.split()
)
# Code that reads a value rather than spelling it: calls, indexing, expressions, f-string
# fields, dotted attributes (``settings.DB_PASSWORD``, ``ed25519.Ed25519PrivateKey``).
_EXPRESSION = re.compile(r"[A-Za-z_$][A-Za-z0-9_$.]*[(\[].*|[()\[\]{}|\\].*")
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_IDENTIFIER = re.compile(r"[A-Za-z_]+")
# YAML tags and aliases (``!vault``, ``*db_password``), file paths (``pwd: /srv/app``).
_YAML_TAG = re.compile(r"[!*][A-Za-z_][A-Za-z0-9_]*")
_PATH = re.compile(r"(?:~|\.{1,2})?/[\w.@~+-]+(?:/[\w.@~+-]*)*")


def _is_placeholder(value: str) -> bool:
    return bool(_PLACEHOLDER.match(value.strip("\"'")))


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


def _word_score(value: str) -> float:
    """Common English letter pairs per letter or digit: 0.6+ for words, ~0.15 for random."""
    pairs = sum(
        run[i : i + 2].lower() in _COMMON_PAIRS
        for run in _WORD_RUN.findall(value)
        for i in range(len(run) - 1)
    )
    return pairs / max(sum(c.isalnum() for c in value) - 1, 1)


def _case_changes(value: str) -> float:
    """How often consecutive letters and digits switch between lower, upper and digit."""
    chars = [0 if c.islower() else 1 if c.isupper() else 2 for c in value if c.isalnum()]
    return sum(a != b for a, b in itertools.pairwise(chars)) / max(len(chars) - 1, 1)


def _looks_like_words(value: str) -> bool:
    """Identifiers, paths and prose (``payments-tls-2024``, ``settings.SECRET_KEY``).

    Random base62, base64 or hex of 16+ characters looks like words well under 0.1% of the time.
    """
    score = _word_score(value)
    return (
        score >= 0.65
        or (score >= 0.45 and _case_changes(value) < 0.25)
        or (score >= 0.4 and _is_type_name(value))
    )


def _is_type_name(value: str) -> bool:
    """A CamelCase name (``Ed25519PrivateKey``, ``HTTPBasicCredentials``): no one-letter words."""
    if not value[:1].isalpha() or value.islower() or value.isupper():
        return False
    return all(len(word) >= 2 or word.isdigit() for word in _NAME_WORD.findall(value))


def _is_code(value: str) -> bool:
    """An expression or a dotted name, whose parts are short, words or digit-free."""
    if _EXPRESSION.fullmatch(value):
        return True
    return bool(_DOTTED.fullmatch(value)) and all(
        len(part) <= 8
        or not any(c.isdigit() for c in part)
        or _looks_like_words(part)
        or _is_type_name(part)
        for part in value.split(".")
    )


def _is_reference(value: str) -> bool:
    """A URL or an ARN: where a secret is kept, not the secret."""
    return "://" in value or value.startswith("arn:")


def _random_looking(value: str) -> bool:
    """A token-like value: long, mixed, high entropy, not words, code, a placeholder or URL."""
    if not 16 <= len(value) <= 1024 or any(c.isspace() for c in value):
        return False
    if _is_placeholder(value) or _is_reference(value) or _is_code(value):
        return False
    return (
        sum(c.isalnum() for c in value) >= 12
        and _classes(value) >= 2
        and _entropy(value) >= 2.5
        and not _looks_like_words(value)
    )


def _token_body(value: str) -> bool:
    """The random part after a provider's prefix: not a placeholder, not words, not a pattern."""
    if _is_placeholder(value) or _entropy(value) < 3.0:
        return False
    return _word_score(value) < 0.6 or _case_changes(value) >= 0.15


def _password_value(value: str, *, literal: bool) -> bool:
    """A value given to a password: anything but a placeholder, a default, code or a word.

    ``literal`` is false where an unquoted identifier is more likely a variable (``password=pw``
    in code) than the password itself.
    """
    if not value or any(c.isspace() for c in value) or _is_placeholder(value):
        return False
    lower = value.lower()
    # Documentation values and enum members spell the word out: ``mynewpassword``,
    # ``FORCE_CHANGE_PASSWORD``, ``no-password-required``.
    if lower in _NOT_PASSWORDS or "password" in lower or "passwd" in lower:
        return False
    if _YAML_TAG.fullmatch(value) or _PATH.fullmatch(value) or _is_reference(value):
        return False
    if _is_code(value) or (not literal and _IDENTIFIER.fullmatch(value)):
        return False
    if len(value) < 6:
        return False
    return _classes(value) >= 2 or len(value) >= 12


def _url_password(value: str) -> bool:
    """The password part of ``scheme://user:password@host``."""
    value = unquote(value)
    return bool(value) and not _is_placeholder(value) and value.lower() not in _NOT_PASSWORDS


# --- what a name looks like ----------------------------------------------------------------

_PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase", "pass", "pwd", "pw"})
_SECRET_WORDS = frozenset({"secret", "token", "credential", "credentials", "apikey", "bearer"})
_SECRET_ENDINGS = ("token", "secret", "apikey", "secretkey", "privatekey", "accesskey")
_KEY_QUALIFIERS = frozenset(
    {
        "access",
        "account",
        "admin",
        "api",
        "app",
        "auth",
        "client",
        "encryption",
        "hmac",
        "jwt",
        "license",
        "master",
        "private",
        "secret",
        "service",
        "session",
        "shared",
        "signing",
        "storage",
        "subscription",
        "webhook",
    }
)
# A name ending in one of these describes a secret (where it is, how long it lives), it is
# not the secret: ``token_url``, ``secret_name``, ``max_tokens``, ``private_key_path``.
_DESCRIBING = frozenset(
    {
        "age",
        "algorithm",
        "arn",
        "at",
        "backend",
        "callback",
        "class",
        "count",
        "date",
        "dir",
        "duration",
        "enabled",
        "endpoint",
        "env",
        "expiration",
        "expires",
        "expiry",
        "factory",
        "field",
        "file",
        "format",
        "handler",
        "hash",
        "header",
        "id",
        "index",
        "interval",
        "kind",
        "label",
        "len",
        "length",
        "lifetime",
        "limit",
        "location",
        "max",
        "method",
        "min",
        "mode",
        "mount",
        "name",
        "offset",
        "param",
        "path",
        "pattern",
        "policy",
        "prefix",
        "provider",
        "ref",
        "regex",
        "region",
        "required",
        "rotation",
        "scope",
        "scopes",
        "size",
        "source",
        "state",
        "status",
        "store",
        "time",
        "timeout",
        "timestamp",
        "ttl",
        "type",
        "uri",
        "url",
        "usage",
        "validator",
        "var",
        "version",
    }
)


# Tokens that page, deduplicate or verify, and are not credentials: ``NextToken``,
# ``ClientToken`` (AWS idempotency), ``publicKeyToken``, ``--starting-token``.
_NOT_SECRET_TOKENS = frozenset(
    {
        "action",
        "backward",
        "cancel",
        "cancellation",
        "change",
        "client",
        "continuation",
        "csrf",
        "cursor",
        "export",
        "forward",
        "idempotency",
        "import",
        "key",
        "lock",
        "marker",
        "next",
        "page",
        "pagination",
        "prev",
        "previous",
        "request",
        "resume",
        "start",
        "starting",
        "sync",
        "update",
        "verification",
        "xsrf",
    }
)


def _name_words(name: str) -> list[str]:
    """``dbPassword`` -> ``["db", "password"]``, without trailing numbers (``api_key2``)."""
    words = [w.lower() for w in _NAME_WORD.findall(name)]
    while words and words[-1].isdigit():
        words.pop()
    return words


def _is_password_name(name: str) -> bool:
    words = _name_words(name)
    return bool(words) and (
        words[-1] in _PASSWORD_WORDS or words[-1].endswith(("password", "passwd"))
    )


def _is_secret_name(name: str) -> bool:
    words = _name_words(name)
    if not words or words[-1] in _DESCRIBING:
        return False
    for i, word in enumerate(words):
        if word in _SECRET_WORDS or word.endswith(_SECRET_ENDINGS):
            if word.endswith("token") and i > 0 and words[i - 1] in _NOT_SECRET_TOKENS:
                continue
            return True
    if words[-1] == "auth":
        return True
    return words[-1] == "key" and (
        (len(words) >= 2 and words[-2] in _KEY_QUALIFIERS) or name.isupper()
    )


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
    if not _is_password_name(name) or _in_colon_chain(match):
        return False
    # ``password=pw`` in code names a variable; in ``.env`` (upper-case names), YAML or JSON
    # (``:``) and XML the value is spelled out.
    quoted = _quoted(match)
    value = _unquoted_value(match)
    # ``password: SecretStr`` is a type annotation.
    if not quoted and match["op"] == ":" and value.isalpha() and _is_type_name(value):
        return False
    literal = quoted or match["op"] != "=" or name.isupper() or match["n_x"] is not None
    return _password_value(value, literal=literal)


def _secret_assignment(match: re.Match[str]) -> bool:
    name = match["n"] or match["n_x"] or ""
    if not _is_secret_name(name) or _in_colon_chain(match):
        return False
    return _random_looking(_unquoted_value(match))


def _cli_flag(match: re.Match[str]) -> bool:
    value = _unquoted_value(match)
    if match["kind"] is not None:  # --token, --api-key, --secret ...
        return _is_secret_name(match["kind"]) and _random_looking(value)
    return _password_value(value, literal=True)


def _authorization(match: re.Match[str]) -> bool:
    value = _value(match)
    if match["scheme"].lower() == "bearer":
        return _random_looking(value)
    if len(value) % 4:
        return False
    try:
        decoded = base64.b64decode(value, validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        return False
    user, colon, password = decoded.partition(":")
    return bool(colon and user and decoded.isprintable() and _url_password(password))


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
        lambda m: not _is_placeholder(m.group()),
    ),
    _d(
        "aws-secret-access-key",
        r"(?i:(?<![A-Za-z0-9])(?:aws_?)?secret_?(?:access_?)?key)[\"']?[ \t]{0,8}+(?:=|:|=>)"
        r"[ \t]{0,8}+[\"']?(?P<v>[A-Za-z0-9/+=]{40}+)(?![A-Za-z0-9/+=])",
        _body(_token_body),
    ),
    _d(
        "google-api-key",
        _NO_RUN_BEFORE + r"AIza(?P<v>[0-9A-Za-z_-]{35}+)(?![0-9A-Za-z_-])",
        _body(_token_body),
    ),
    _d(
        "google-oauth-secret",
        _NO_RUN_BEFORE + r"(?:GOCSPX-(?P<v>[A-Za-z0-9_-]{24,64}+)"
        r"|ya29\.(?P<v_t>[A-Za-z0-9_-]{30,4096}+)|1//0(?P<v_r>[A-Za-z0-9_-]{40,1024}+))",
        _body(_token_body),
    ),
    _d(
        "azure-connection-string",
        r"(?i:AccountKey|SharedAccessKey)[ \t]{0,8}+=[ \t]{0,8}+"
        r"(?P<v>[A-Za-z0-9+/]{20,512}+={0,2})",
        _body(_token_body),
    ),
    _d(
        "azure-sas-signature",
        r"[?&;]sig=(?P<v>[A-Za-z0-9%+/=]{30,512}+)",
        _body(_token_body),
    ),
    _d(
        "github-token",
        _NO_RUN_BEFORE + r"gh[pousr]_(?P<v>[A-Za-z0-9]{36,251}+)(?![A-Za-z0-9_])",
        _body(_token_body),
    ),
    _d(
        "github-fine-grained-token",
        _NO_RUN_BEFORE + r"github_pat_(?P<v>[A-Za-z0-9_]{50,255}+)",
        _body(_token_body),
    ),
    _d(
        "gitlab-token",
        _NO_RUN_BEFORE + r"(?:gl(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt|agent)-"
        r"(?P<v>[A-Za-z0-9_.-]{20,255}+)|GR1348941(?P<v_r>[A-Za-z0-9_-]{20,255}+))",
        _body(_token_body),
    ),
    _d(
        "slack-token",
        _NO_RUN_BEFORE + r"(?:xox[abposre]|xoxe\.xox[bp]|xapp)-(?P<v>[A-Za-z0-9-]{10,255}+)",
        lambda m: any(c.isdigit() for c in m["v"]) and _token_body(m["v"]),
    ),
    _d(
        "slack-webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/T[A-Z0-9]{6,16}+/[AB][A-Z0-9]{6,16}+/"
        r"(?:[0-9]{6,24}+/)?(?P<v>[A-Za-z0-9]{20,64}+)",
        _body(_token_body),
    ),
    _d(
        "stripe-key",
        _NO_RUN_BEFORE
        + r"(?:(?:sk|rk|pk)_(?:live|test)|whsec)_(?P<v>[A-Za-z0-9]{16,255}+)(?![A-Za-z0-9])",
        _body(_token_body),
    ),
    _d(
        "npm-token",
        _NO_RUN_BEFORE + r"npm_(?P<v>[A-Za-z0-9]{36}+)(?![A-Za-z0-9])",
        _body(_token_body),
    ),
    _d(
        "pypi-token",
        _NO_RUN_BEFORE + r"pypi-AgE(?P<v>[A-Za-z0-9_-]{50,1024}+)",
        _body(_token_body),
    ),
    _d(
        "anthropic-api-key",
        _NO_RUN_BEFORE + r"sk-ant-[a-z]{2,10}+[0-9]{0,4}+-(?P<v>[A-Za-z0-9_-]{20,255}+)",
        _body(_token_body),
    ),
    _d(
        "openai-api-key",
        _NO_RUN_BEFORE
        + r"sk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?(?P<v>[A-Za-z0-9_-]{20,255}+)",
        _body(_random_looking),
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
        _body(_url_password),
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
