"""What a secret value looks like: placeholders, random-looking tokens, passwords.

The built-in detectors (:mod:`memmesh.policy.secrets`) match where a secret may stand; these
judge what they matched, so that documentation values, code and prose are not taken for
secrets.
"""

import base64
import binascii
import itertools
import math
import re
from collections import Counter
from urllib.parse import unquote

__all__ = [
    "NAME_WORD",
    "base64_of_text",
    "is_path",
    "is_placeholder",
    "is_type_name",
    "is_words",
    "looks_like_words",
    "password_value",
    "punctuated_secret",
    "random_looking",
    "stands_alone",
    "token_body",
    "url_password",
]

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
    "replace",
    "todo",
    "fixme",
    "replace_me",
    "change-me",
    "change_me",
    "changethis",
    "change-this",
    "replace-me",
    "replaceme",
    "replace_with",
    "sample",
    "your_",
    "your-",
)


# A value that is a placeholder as a whole: a template field, a variable, a mask.
_PLACEHOLDER = re.compile(
    r"""<[^<>]*> | \[[^\[\]]*\] | \$\{[^}]*\} | \$\(.*\) | `.*` | \$[A-Za-z_][A-Za-z0-9_]*
      | \{\{.*\}\} | \{[A-Za-z_][A-Za-z0-9_.]*\} | %[sd] | %\([a-z_]+\)s | %[A-Z_]+%
      | (.)\1{3,} | [*xX•.]+""",
    re.VERBOSE,
)
# A value that holds one of these words (lower, UPPER or Capitalized) or marks anywhere is a
# placeholder. Plain substring tests: fast on a long value, where a regex alternation would
# be tried at every position.
_PLACEHOLDER_FORMS = {word: (word, word.upper(), word.capitalize()) for word in _PLACEHOLDER_WORDS}
_PLACEHOLDER_MARKS = ("...", "…", "xxxx", "XXXX", "***", "•••")
_FAKE = re.compile(r"(?<![A-Za-z])(?:fake|FAKE|Fake)(?![A-Za-z])")
_HERE = ("_here", "-here", "_HERE", "-HERE", "_Here", "-Here")

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

_SPACE = re.compile(r"\s")
_WORD_RUN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
# Words of a name or identifier: ``HTTPBasicAuth2`` -> ``HTTP``, ``Basic``, ``Auth``, ``2``.
NAME_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
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


def is_placeholder(value: str) -> bool:
    value = value.strip("\"'")
    lowered = value.lower()
    return (
        any(mark in value for mark in _PLACEHOLDER_MARKS)
        or any(
            word in lowered and any(form in value for form in _PLACEHOLDER_FORMS[word])
            for word in _PLACEHOLDER_WORDS
        )
        or value.endswith(_HERE)
        or _PLACEHOLDER.fullmatch(value) is not None
        or _FAKE.search(value) is not None
    )


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


def looks_like_words(value: str) -> bool:
    """Identifiers, paths and prose (``payments-tls-2024``, ``settings.SECRET_KEY``).

    Random base62, base64 or hex of 16+ characters looks like words well under 0.1% of the time.
    """
    score = _word_score(value)
    return (
        score >= 0.65
        or (score >= 0.45 and _case_changes(value) < 0.25)
        or (score >= 0.4 and is_type_name(value))
    )


def is_type_name(value: str) -> bool:
    """A CamelCase name (``Ed25519PrivateKey``, ``HTTPBasicCredentials``): no one-letter words."""
    if not value[:1].isalpha() or value.islower() or value.isupper():
        return False
    return all(len(word) >= 2 or word.isdigit() for word in NAME_WORD.findall(value))


def _is_code(value: str) -> bool:
    """An expression or a dotted name, whose parts are short, words or digit-free."""
    if _EXPRESSION.fullmatch(value):
        return True
    return bool(_DOTTED.fullmatch(value)) and all(
        len(part) <= 8
        or not any(c.isdigit() for c in part)
        or looks_like_words(part)
        or is_type_name(part)
        for part in value.split(".")
    )


def _is_reference(value: str) -> bool:
    """A URL or an ARN: where a secret is kept, not the secret."""
    return "://" in value or value.startswith("arn:")


def random_looking(value: str) -> bool:
    """A token-like value: long, mixed, high entropy, not words, code, a placeholder or URL."""
    if not 16 <= len(value) <= 1024 or _SPACE.search(value):
        return False
    if is_placeholder(value) or _is_reference(value) or _is_code(value):
        return False
    return (
        sum(c.isalnum() for c in value) >= 12
        and _classes(value) >= 2
        and _entropy(value) >= 2.5
        and not looks_like_words(value)
    )


def token_body(value: str) -> bool:
    """The random part after a provider's prefix: not a placeholder, not words, not a pattern."""
    if is_placeholder(value) or _entropy(value) < 3.0:
        return False
    return _word_score(value) < 0.6 or _case_changes(value) >= 0.15


def password_value(value: str, *, literal: bool) -> bool:
    """A value given to a password: anything but a placeholder, a default, code or a word.

    ``literal`` is false where an unquoted identifier is more likely a variable (``password=pw``
    in code) than the password itself.
    """
    if not value or _SPACE.search(value) or is_placeholder(value):
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


def url_password(value: str) -> bool:
    """The password part of ``scheme://user:password@host``."""
    value = unquote(value)
    return bool(value) and not is_placeholder(value) and value.lower() not in _NOT_PASSWORDS


def base64_of_text(value: str) -> bool:
    """Base64 that decodes to words (``bG9nTGV2ZWw6IGRlYnVn`` is ``logLevel: debug``)."""
    padded = value + "=" * (-len(value) % 4)
    try:
        decoded = base64.b64decode(padded, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return any(c.isspace() for c in decoded) and all(
        c.isprintable() or c in "\n\t" for c in decoded
    )


_WORDS = re.compile(r"[A-Za-z]+(?:['’-][A-Za-z]+)*")


def is_words(value: str) -> bool:
    """Letters, or words joined by hyphens (``case-sensitive``, ``see-vault``)."""
    return _WORDS.fullmatch(value) is not None


def stands_alone(value: str) -> bool:
    """A value that is a secret without the words around it: random-looking, or a password
    that is neither words nor a path (what a detector matched beyond another's secret)."""
    if random_looking(value):
        return True
    return (
        password_value(value, literal=True) and not is_words(value) and not looks_like_words(value)
    )


# Punctuation a generated secret is spelled with, and code or templates rarely are.
_SYMBOLS = frozenset("!@#$%^&*()+=?~|<>[]{}")


def punctuated_secret(value: str) -> bool:
    """A quoted value such as ``'a!b@c#d$e%f^g&h*i(j)k'``: no spaces, 8 or more characters,
    three or more kinds of symbol, and not a placeholder, a path or a URL."""
    if not 8 <= len(value) <= 512 or _SPACE.search(value) or is_placeholder(value):
        return False
    if _PATH.fullmatch(value) or _is_reference(value):
        return False
    return len(_SYMBOLS & set(value)) >= 3


def is_path(value: str) -> bool:
    """A file path (``~/.ssh/id_ed25519``, ``/run/secrets/db``)."""
    return _PATH.fullmatch(value) is not None
