"""Detectors that find a secret by where it stands: assigned to a secret-looking name, as the
password of a URL, in an ``Authorization`` header, in ``.netrc``, ``.env`` and ``.NET`` config;
and JSON Web Tokens, whoever issued them.
"""

import base64
import binascii
import re

from memmesh.policy._detector import (
    BROAD,
    GENERIC,
    Detector,
    detector,
    quoted,
    unquoted_value,
    value,
)
from memmesh.policy._secret_names import is_password_name, is_secret_name
from memmesh.policy._secret_values import (
    is_type_name,
    is_words,
    password_value,
    punctuated_secret,
    random_looking,
    url_password,
)

__all__ = ["GENERIC_DETECTORS", "value_pattern"]


def value_pattern(tag: str) -> str:
    """A quoted value up to its closing quote, or an unquoted run; groups named by ``tag``."""
    return (
        rf"""(?:"(?P<vq_{tag}d>[^"\n]{{1,512}}+)"|'(?P<vq_{tag}s>[^'\n]{{1,512}}+)'"""
        rf"""|`(?P<vq_{tag}b>[^`\n]{{1,512}}+)`|(?P<v_{tag}>[^\s"'`,;<>]{{1,512}}+))"""
    )


# ``name = value``, ``name: value``, ``"name": "value"``, ``name := value``, ``<name>value</``,
# and ``.NET``'s ``<add key="name" value="value" />``.
_ASSIGNMENT = (
    r"\bkey=[\"'](?P<n_k>[A-Za-z_][A-Za-z0-9_.:-]{0,63}+)[\"'][ \t]{1,8}+"
    r"value=[\"'](?P<vq_k>[^\"'\n]{1,512}+)[\"']"
    r"|(?<![A-Za-z0-9_.-])(?P<n>[A-Za-z_][A-Za-z0-9_.-]{0,63}+)[\"'\]]{0,2}+[ \t]{0,8}+"
    # The value is only looked at, so that it can be the next assignment's name: ``a: b: c``.
    r"(?P<op>:=|=>|=|:)(?!=|//)(?=[ \t]{0,8}+"
    + value_pattern("a")
    + r")|<(?P<n_x>[A-Za-z_][A-Za-z0-9_.-]{0,63}+)>(?P<vq_x>[^<\s]{1,512}+)</"
)
# Before an assignment on its own line, as in a ``.env`` file: nothing, or ``export``.
_LINE_START = re.compile(r"[ \t]{0,16}(?:export[ \t]{1,4})?")


def _name(match: re.Match[str]) -> str:
    return match["n"] or match["n_x"] or match["n_k"] or ""


def _in_colon_chain(match: re.Match[str]) -> bool:
    """``a:b:c`` is an ARN, a resource type or a time, not ``name: value``."""
    start = match.start()
    return match["op"] == ":" and start > 0 and match.string[start - 1] == ":"


def _spelled_out(match: re.Match[str]) -> bool:
    """Whether the value is written down rather than, as likely, a variable's name.

    ``password=pw`` in code names a variable; in ``.env`` (upper-case names), YAML or JSON
    (``:``), XML and ``.NET`` config the value is spelled out.
    """
    name = _name(match)
    return quoted(match) or match["op"] != "=" or name.isupper() or match["n"] is None


def _password_assignment(match: re.Match[str]) -> bool:
    if not is_password_name(_name(match)) or _in_colon_chain(match):
        return False
    found = unquoted_value(match)
    if quoted(match) and punctuated_secret(found):
        return True  # spelled out in quotes, symbols and all: ``'Xy(7)!@#$%^&*z'``
    # ``password: SecretStr`` is a type annotation.
    if not quoted(match) and match["op"] == ":" and found.isalpha() and is_type_name(found):
        return False
    return password_value(found, literal=_spelled_out(match))


def _secret_assignment(match: re.Match[str]) -> bool:
    name = _name(match)
    if not is_secret_name(name) or _in_colon_chain(match):
        return False
    found = unquoted_value(match)
    if random_looking(found) or (quoted(match) and punctuated_secret(found)):
        return True
    # A ``.env`` line (``SECRET_KEY=…`` on a line of its own) holds a secret whatever it looks
    # like, unless it is a placeholder, a path, a URL or a word.
    dotenv = name.isupper() and match["op"] == "=" and _on_its_own_line(match)
    if not dotenv or not _alone_on_its_line(match) or is_words(found):
        return False
    return password_value(found, literal=True)


def _on_its_own_line(match: re.Match[str]) -> bool:
    start = match.start()
    before = match.string[max(0, start - 24) : start]
    _, newline, line = before.rpartition("\n")
    if not newline and start > len(before):
        return False
    return _LINE_START.fullmatch(line) is not None


def _alone_on_its_line(match: re.Match[str]) -> bool:
    """Nothing but a comment follows the value (``KEY=dckr_pat_<token>`` is a template)."""
    end = max(match.end(k) for k, group in match.groupdict().items() if group is not None)
    rest = match.string[end + quoted(match) : end + 80].partition("\n")[0].strip()
    return not rest or rest.startswith("#")


def _authorization(match: re.Match[str]) -> bool:
    found = value(match)
    if match["scheme"] is None or match["scheme"].lower() == "bearer":
        return random_looking(found)
    if len(found) % 4:
        return False
    try:
        decoded = base64.b64decode(found, validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        return False
    user, colon, password = decoded.partition(":")
    return bool(colon and user and decoded.isprintable() and url_password(password))


GENERIC_DETECTORS: tuple[Detector, ...] = (
    detector(
        "jwt",
        r"eyJ[A-Za-z0-9_-]{8,2048}+\.eyJ[A-Za-z0-9_-]{8,8192}+\.[A-Za-z0-9_-]{8,2048}+",
        rank=BROAD,
        hints=("eyJ",),
        run_start=True,
    ),
    detector(
        "password-in-url",
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}+://[^\s:/@'\"]{0,128}+:"
        r"(?P<v>[^\s/@'\"]{1,256}+)@",
        lambda m: url_password(m["v"]),
        rank=GENERIC,
        value_only=True,
        hints=("://",),
    ),
    detector(
        "password-assignment",
        _ASSIGNMENT,
        _password_assignment,
        rank=GENERIC,
        value_only=True,
        hints=("pass", "pw"),
        casefold=True,
    ),
    detector(
        "secret-assignment",
        _ASSIGNMENT,
        _secret_assignment,
        rank=GENERIC,
        value_only=True,
        hints=("secret", "token", "cred", "key", "bearer", "auth"),
        casefold=True,
    ),
    detector(
        "netrc-password",
        r"\bmachine[ \t]{1,8}+[^\s]{1,253}+\s{1,8}+login[ \t]{1,8}+[^\s]{1,128}+\s{1,8}+"
        r"password[ \t]{1,8}+" + value_pattern("n"),
        lambda m: password_value(unquoted_value(m), literal=True),
        rank=GENERIC,
        value_only=True,
        hints=("machine",),
    ),
    detector(
        "authorization-header",
        r"(?<![A-Za-z0-9_-])(?P<scheme>(?i:bearer)|Basic)[ \t]{1,8}+"
        r"(?P<v>[A-Za-z0-9._~+/-]{8,4096}+=*)"
        # Other schemes only where the header is named: ``Authorization: Token 9944b…``.
        r"|(?i:authorization)[\"']?[ \t]{0,8}+[:=,][ \t]{0,8}+[\"']?"
        r"(?:Token|token|SSWS|Api-Key|ApiKey)[ \t]{1,8}+(?P<v_t>[A-Za-z0-9._~+/=-]{16,4096}+)",
        _authorization,
        rank=GENERIC,
        value_only=True,
        hints=("bearer", "basic", "authorization"),
        casefold=True,
    ),
)
