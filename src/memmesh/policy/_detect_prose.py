"""Detectors for secrets typed into commands (``-p'…'``, ``--password=…``) or stated in a
sentence ("the staging password is …")."""

import re

from memmesh.policy._detect_generic import value_pattern
from memmesh.policy._detector import GENERIC, Detector, detector, form, quoted, unquoted_value
from memmesh.policy._secret_names import is_secret_name
from memmesh.policy._secret_values import (
    base64_of_text,
    is_words,
    password_value,
    random_looking,
)

__all__ = ["COMMAND_DETECTORS", "PROSE_DETECTORS"]

# The tool's name, then the rest of its command line up to the flag.
_GAP = r"\b[^\n]{0,160}?[ \t]"

_COMMANDS = (
    # ``--password …``, ``--db-passphrase=…``; ``--token …``, ``--api-key=…``.
    form(
        r"--(?:(?:[a-z0-9]+-){0,3}(?:password|passwd|passphrase|pass)"
        r"|(?P<kind>(?:[a-z0-9]+-){0,3}(?:token|api-key|apikey|secret|access-key|secret-key)))"
        r"(?:=|[ \t]{1,8}+)" + value_pattern("f"),
        "--",
    ),
    # ``openssl … -passout pass:…``
    form(r"-pass(?:in|out)?[ \t]{1,8}+pass:(?P<v_o>[^\s\"'`]{1,256}+)", "pass:"),
    # MySQL's password is glued to ``-p`` (``-p`` alone asks for it).
    form(
        r"(?:mysql|mysqldump|mysqladmin|mysqlsh|mariadb|mariadb-dump)" + _GAP + r"-p"
        r"(?:'(?P<vq_ms>[^'\n]{1,256}+)'|\"(?P<vq_md>[^\"\n]{1,256}+)\""
        r"|(?P<v_m>[^\s\"'`-][^\s\"'`]{0,255}+))",
        "mysql",
        "mariadb",
    ),
    form(
        r"(?:sshpass|mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport|sqlcmd|bcp"
        r"|zip|unzip)" + _GAP + r"-[pP][ \t]{1,8}+" + value_pattern("p"),
        "sshpass",
        "mongo",
        "sqlcmd",
        "bcp",
        "zip",
    ),
    form(
        r"(?:docker|podman|nerdctl|buildah|skopeo|oras|az|helm[ \t]{1,8}+registry)[ \t]{1,8}+"
        r"login" + _GAP + r"-p[ \t]{1,8}+" + value_pattern("l"),
        "login",
    ),
    form(r"redis-cli" + _GAP + r"-a[ \t]{1,8}+" + value_pattern("r"), "redis-cli"),
    form(
        r"ldap(?:search|add|modify|delete|whoami|passwd|compare)"
        + _GAP
        + r"-w[ \t]{1,8}+"
        + value_pattern("w"),
        "ldap",
    ),
    form(
        r"(?:keytool|jarsigner)"
        + _GAP
        + r"-(?:src|dest)?(?:store|key)pass[ \t]{1,8}+"
        + value_pattern("k"),
        "keytool",
        "jarsigner",
    ),
    form(r"ssh-keygen" + _GAP + r"-N[ \t]{1,8}+" + value_pattern("n"), "ssh-keygen"),
    form(r"openssl" + _GAP + r"-k[ \t]{1,8}+" + value_pattern("e"), "openssl"),
    form(
        r"(?:smbclient|rpcclient)" + _GAP + r"-U[ \t]{1,8}+[^\s%]{1,64}+%" + value_pattern("u"),
        "smbclient",
        "rpcclient",
    ),
    # ``curl -u user:password``, ``http -a user:password``
    form(
        r"(?:curl|wget|http|https)" + _GAP + r"(?:-u|--user|-a|--auth)(?:=|[ \t]{1,8}+)[\"']?"
        r"[^\s:\"'@]{1,64}+:(?P<v_c>[^\s\"'`@]{1,256}+)",
        "curl",
        "wget",
        "http",
    ),
)


def _cli_flag(match: re.Match[str]) -> bool:
    found = unquoted_value(match)
    if not quoted(match) and found.startswith("-"):
        return False  # the next flag: ``mongo -p --authenticationDatabase admin`` asks
    kind = match.groupdict().get("kind")
    if kind is not None:
        return is_secret_name(kind) and random_looking(found)
    return password_value(found, literal=True)


# ``is``, ``was now set to``, ``changed to``, ``:``, ``=``, ``->``.
_STATED = (
    r"(?:[ \t]{1,4}+(?i:(?:is|was|are)(?:[ \t]{1,4}+(?:now|still|currently|temporarily))?"
    r"(?:[ \t]{1,4}+(?:set|changed|reset|rotated|updated)[ \t]{1,4}+to)?"
    r"|(?:set|changed|reset|rotated|updated)[ \t]{1,4}+to)[ \t]{1,4}+"
    r"|[ \t]{0,4}+(?::|=|->|→)[ \t]{0,4}+)"
)
# What is said about it comes between: "the password for ops@db-2 is …".
_ABOUT = r"(?P<about>(?:[ \t,(][^\n\"'`:=]{0,59}?)??)"
_PASSWORD_WORD = r"(?i:\b(?:password|passwd|passphrase|passcode)\b)"
_SECRET_WORD = (
    r"(?i:\b(?:(?:api|access|secret|license|signing|encryption|master|app)[ _-]?key"
    r"|client[ _-]?secret|(?:auth|access|api|bearer|bot|session|refresh|personal access)"
    r"[ _-]?token|token|secret)\b)"
)
# Words and word-like values are what a sentence goes on to say about a password: "is
# case-sensitive", "is Argon2id-hashed", "is SHA-256 hashed", "is 16 characters long".
_DESCRIBING = (
    "hashed|encrypted|encoded|generated|protected|based|managed|only|specific|sensitive|free"
    "|enabled|disabled|required|less|long|character|characters|chars|digits|letters|bits|bytes"
)
_DESCRIBED = re.compile(rf".*-(?:{_DESCRIBING})", re.IGNORECASE)
_DESCRIBED_NEXT = re.compile(rf"[ \t]{{1,4}}(?:{_DESCRIBING})\b", re.IGNORECASE)


def _prose_password(match: re.Match[str]) -> bool:
    found = unquoted_value(match)
    if not quoted(match):
        if is_words(found) or _DESCRIBED.fullmatch(found):
            return False
        if _DESCRIBED_NEXT.match(match.string, match.end()):
            return False
    return password_value(found, literal=True)


COMMAND_DETECTORS: tuple[Detector, ...] = (
    detector(
        "cli-password-flag", _COMMANDS, _cli_flag, rank=GENERIC, value_only=True, run_start=True
    ),
)
PROSE_DETECTORS: tuple[Detector, ...] = (
    detector(
        "password-in-prose",
        _PASSWORD_WORD + _ABOUT + _STATED + value_pattern("p"),
        _prose_password,
        rank=GENERIC,
        value_only=True,
        hints=("pass",),
        casefold=True,
    ),
    detector(
        "secret-in-prose",
        _SECRET_WORD + _ABOUT + _STATED + value_pattern("s"),
        lambda m: random_looking(unquoted_value(m)) and not base64_of_text(unquoted_value(m)),
        rank=GENERIC,
        value_only=True,
        hints=("key", "secret", "token"),
        casefold=True,
    ),
)
