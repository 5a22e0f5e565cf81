"""Detectors for secrets typed into commands (``-p'…'``, ``--password=…``) or stated in a
sentence ("the staging password is …")."""

import re

from memmesh.policy._detect_generic import value_pattern
from memmesh.policy._detector import GENERIC, Detector, detector, form, quoted, unquoted_value
from memmesh.policy._secret_names import is_secret_name
from memmesh.policy._secret_values import (
    base64_of_text,
    is_path,
    is_words,
    looks_like_words,
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
    # Redis's ``AUTH [user] password`` after "redis" or a prompt; ``requirepass`` in its config.
    form(
        r"(?:(?i:redis)[^\n]{0,60}?(?<![A-Za-z0-9_-])|(?<=>)[ \t]{0,4}+)(?i:auth)[ \t]{1,8}+"
        r"(?:[a-z][a-z0-9_.-]{0,31}+[ \t]{1,8}+(?=[^\s]*[^a-z\s]))?+" + value_pattern("ra"),
        "auth",
        casefold=True,
    ),
    form(
        r"(?i:\b(?:requirepass|masterauth))[ \t]{1,8}+" + value_pattern("rp"),
        "requirepass",
        "masterauth",
        casefold=True,
    ),
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
# "pass" and "pw" only after what they open: "the ssh pass for the jump host is …".
_PASSWORD_WORD = (
    r"(?i:\b(?:password|passwd|passphrase|passcode|pword|(?:ssh|sftp|ftp|db|database|root"
    r"|admin|sudo|user|login|wifi|wi-fi|vpn|mysql|postgres|redis|account|jump|bastion|server"
    r"|host|vm|box|router|rdp|vnc|console|portal)[ _-]?(?:pass|pwd|pw))\b)"
)
_SECRET_WORD = (
    r"(?i:\b(?:(?:api|access|secret|license|signing|encryption|master|app|unseal|recovery"
    r"|root|(?:storage[ _-]?)?account|storage|webhook|deploy|service|shared|private|hmac|jwt"
    r"|admin|vault|ssh|client|subscription|primary|secondary|integration|ingest)[ _-]?key"
    r"|(?:client|webhook|signing|shared|jwt|hmac|app)[ _-]?secret"
    r"|(?:auth|access|api|bearer|bot|session|refresh|personal access)"
    r"[ _-]?token|token|secret)\b)"
)
# What hands a secret over without a verb: "log in with password …", "use token … for the
# webhook", "AKIA…, secret …"; a word may qualify it ("with the admin password …").
_HANDED = (
    r"(?i:\b(?:with|using|use|via|try|enter|type|and|or)[ \t]{1,4}+|[,;][ \t]{0,4}+)"
    r"(?i:(?:the|a|an|its|their|our|my|your)[ \t]{1,4}+)?"
    r"(?:(?P<q>(?i:[a-z][a-z0-9-]{0,19}+))[ \t]{1,4}+)?"
)
# A user and a password after a word for logging in: "login to grafana with admin / …".
_LOGIN_PAIR = (
    r"(?i:\b(?:log[ -]?in|logon|sign[ -]?in|credentials|creds)\b)[^\n/]{0,40}?"
    r"(?<![A-Za-z0-9_.@+-])[A-Za-z0-9_.@+-]{1,64}+(?P<pair>[ \t]{0,4}+/[ \t]{0,4}+|:)"
)
# A user named before the password: "username admin password …", "user ops pw …".
_USER_THEN = (
    r"(?i:\b(?:user(?:name)?|login|account))[ \t]{0,4}+[:=]?[ \t]{0,4}+[A-Za-z0-9_.@+-]{1,64}+"
    r"[ \t]{0,4}+[,;/]?[ \t]{0,4}+"
)
# An Azure storage account key: 64 random bytes in base64, named in words nearby.
_ACCOUNT_KEY = (
    r"(?i:\b(?:(?:storage[ _-]?)?account[ _-]?key[12s]?|storage[ _-]?(?:access[ _-]?)?key[12s]?"
    r"|accountkey|primary[ _-]?key|secondary[ _-]?key|key[12s]?)\b)[^\n\[\]{}]{0,60}?"
    r"(?<![A-Za-z0-9+/=])(?<!sha512-)(?P<v_z>[A-Za-z0-9+/]{86}==)(?![A-Za-z0-9+/=])"
)
# Words and word-like values are what a sentence goes on to say about a password: "is
# case-sensitive", "is Argon2id-hashed", "is SHA-256 hashed", "is 16 characters long".
_DESCRIBING = (
    "hashed|encrypted|encoded|generated|protected|based|managed|only|specific|sensitive|free"
    "|enabled|disabled|required|less|long|character|characters|chars|digits|letters|bits|bytes"
)
_DESCRIBED = re.compile(rf".*-(?:{_DESCRIBING})", re.IGNORECASE)
_DESCRIBED_NEXT = re.compile(rf"[ \t]{{1,4}}(?:{_DESCRIBING})\b", re.IGNORECASE)


# A scheme's name, not a password, after "with password": "hashed with password PBKDF2".
_ACRONYM = re.compile(r"[A-Z]{2,8}+-?[0-9]{1,4}+")


def _prose_password(match: re.Match[str]) -> bool:
    found = unquoted_value(match)
    if not quoted(match):
        if is_words(found) or _DESCRIBED.fullmatch(found):
            return False
        if "q" in match.re.groupindex and _ACRONYM.fullmatch(found):
            return False
        if _DESCRIBED_NEXT.match(match.string, match.end()):
            return False
    # After "login", a path, an address or a name is no password: ``/auth/callback``,
    # ``host:22``, "sign in with Google / Microsoft365".
    pair = match.groupdict().get("pair") is not None
    if pair and ("/" in found or ":" in found or (not quoted(match) and looks_like_words(found))):
        return False
    return password_value(found, literal=True)


def _prose_secret(match: re.Match[str]) -> bool:
    found = unquoted_value(match)
    qualifier, word = match.groupdict().get("q"), match.groupdict().get("w")
    # "with the next token …" pages, "use the csrf token …" guards a form.
    token = word is not None and word.lower().endswith("token")
    if qualifier and token and not is_secret_name(qualifier + "_token"):
        return False
    return random_looking(found) and not base64_of_text(found) and not is_path(found)


COMMAND_DETECTORS: tuple[Detector, ...] = (
    detector(
        "cli-password-flag", _COMMANDS, _cli_flag, rank=GENERIC, value_only=True, run_start=True
    ),
)
PROSE_DETECTORS: tuple[Detector, ...] = (
    detector(
        "password-in-prose",
        (
            form(
                _PASSWORD_WORD + _ABOUT + _STATED + value_pattern("p"), "pass", "pw", casefold=True
            ),
            form(
                _HANDED + _PASSWORD_WORD + r"[ \t]{1,4}+" + value_pattern("h"),
                "pass",
                "pw",
                casefold=True,
            ),
            # Quoted right after the word: "PASSWORD 'Kx7!mQ2pLz' for the box".
            form(
                _PASSWORD_WORD
                + r"[ \t]{1,4}+(?:\"(?P<vq_qd>[^\"\n]{1,512}+)\"|'(?P<vq_qs>[^'\n]{1,512}+)')",
                "pass",
                "pw",
                casefold=True,
            ),
            form(_LOGIN_PAIR + value_pattern("l"), "log", "sign", "cred", casefold=True),
            form(
                _USER_THEN + _PASSWORD_WORD + r"[ \t]{1,4}+" + value_pattern("n"),
                "pass",
                "pw",
                casefold=True,
            ),
        ),
        _prose_password,
        rank=GENERIC,
        value_only=True,
    ),
    detector(
        "secret-in-prose",
        (
            form(
                _SECRET_WORD + _ABOUT + _STATED + value_pattern("s"),
                "key",
                "secret",
                "token",
                casefold=True,
            ),
            form(
                _HANDED + "(?P<w>" + _SECRET_WORD + r")[ \t]{1,4}+" + value_pattern("u"),
                "key",
                "secret",
                "token",
                casefold=True,
            ),
            form(_ACCOUNT_KEY, "key", casefold=True),
        ),
        _prose_secret,
        rank=GENERIC,
        value_only=True,
    ),
)
