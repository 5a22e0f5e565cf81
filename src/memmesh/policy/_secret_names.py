"""What a secret-bearing name looks like: ``DB_PASSWORD``, ``client_secret``, ``API_KEY``.

A name ending in a word that describes a secret rather than holding it (``token_url``,
``secret_name``, ``max_tokens``) is not one.
"""

from memmesh.policy._secret_values import NAME_WORD

__all__ = ["is_password_name", "is_secret_name"]

_PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase", "pass", "pwd", "pw"})
_SECRET_WORDS = frozenset(
    {"secret", "token", "credential", "credentials", "creds", "apikey", "bearer"}
)
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


# What is meant to be shared: ``PUBLIC_KEY``, ``STRIPE_PUBLISHABLE_KEY``.
_PUBLIC = frozenset({"public", "publishable", "pub"})


def _name_words(name: str) -> list[str]:
    """``dbPassword`` -> ``["db", "password"]``, without trailing numbers (``api_key2``)."""
    words = [w.lower() for w in NAME_WORD.findall(name)]
    while words and words[-1].isdigit():
        words.pop()
    return words


def is_password_name(name: str) -> bool:
    words = _name_words(name)
    return bool(words) and (
        words[-1] in _PASSWORD_WORDS or words[-1].endswith(("password", "passwd"))
    )


def is_secret_name(name: str) -> bool:
    words = _name_words(name)
    if not words or words[-1] in _DESCRIBING or _PUBLIC & set(words):
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
