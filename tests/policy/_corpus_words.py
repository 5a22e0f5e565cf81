"""Corpus: secrets named in words rather than assigned - "the aws secret access key is …",
"use token … for the webhook", "login to grafana with admin / …" - two secrets in one text,
key bodies quoted without their BEGIN line, quoted values full of symbols; and the prose
around credentials that states none (hard negatives).

Every value is fake: random parts come from generators seeded by the example's kind.
"""

import base64
import random

from tests.policy._corpus import ALNUM, B64, HEX, UPPER_ALNUM, Secret, chars

_rng = random.Random("words")


def _s(kind: str, detector: str, template: str, value: str) -> Secret:
    assert "{S}" in template, template
    return Secret(kind, detector, template.replace("{S}", value), value)


def _many(kind: str, detector: str, *pairs: tuple[str, str]) -> list[Secret]:
    return [_s(kind, detector, template, value) for template, value in pairs]


def _aws_secret() -> str:
    return chars(_rng, ALNUM, 12) + "/" + chars(_rng, ALNUM, 14) + "+" + chars(_rng, ALNUM, 12)


def _key_id() -> str:
    return "AKIA" + chars(_rng, UPPER_ALNUM, 16)


def _account_key() -> str:
    return base64.b64encode(_rng.randbytes(64)).decode()


def _b64_key(size: int) -> str:
    return base64.b64encode(_rng.randbytes(size)).decode()


def _key_lines(prefix: str = "", suffix: str = "", count: int = 6) -> str:
    body = base64.b64encode(_rng.randbytes(48 * count)).decode()
    return "\n".join(prefix + body[i : i + 64] + suffix for i in range(0, len(body), 64))


_ID = _key_id()

AWS_IN_WORDS: list[Secret] = [
    _s(
        "aws-secret-in-words",
        "aws-secret-access-key",
        f"the AWS key {_ID} with secret {{S}}",
        _aws_secret(),
    ),
    _s(
        "aws-secret-in-words",
        "aws-secret-access-key",
        "aws secret access key is {S}",
        _aws_secret(),
    ),
    _s(
        "aws-secret-in-words",
        "aws-secret-access-key",
        "AWS Secret Access Key {S} (ci user)",
        _aws_secret(),
    ),
    _s(
        "aws-secret-in-words",
        "aws-secret-access-key",
        f"{_key_id()} / {{S}} for the backup bucket",
        _aws_secret(),
    ),
    _s(
        "aws-secret-in-words",
        "aws-secret-access-key",
        f"creds are {_key_id()}:{{S}}",
        _aws_secret(),
    ),
    _s(
        "aws-secret-in-words",
        "aws-secret-access-key",
        f"key id {_key_id()}, secret key {{S}}",
        _aws_secret(),
    ),
    _s(
        "aws-secret-in-words",
        "aws-secret-access-key",
        "the secret key for the deploy user -> {S}",
        _aws_secret(),
    ),
    _s(
        "aws-secret-in-words",
        "secret-assignment",
        f"AWS_CREDS={_key_id()}/{{S}}",
        _aws_secret(),
    ),
]

KEYS_IN_WORDS: list[Secret] = [
    _s(
        "storage-key-in-words",
        "secret-in-prose",
        "Storage account 'acmelogs' key: {S}",
        _account_key(),
    ),
    _s(
        "storage-key-in-words",
        "secret-in-prose",
        "Azure storage AccountKey for acmeprod is {S}",
        _account_key(),
    ),
    _s("storage-key-in-words", "secret-in-prose", "the storage account key: {S}", _account_key()),
    _s(
        "storage-key-in-words",
        "secret-in-prose",
        "key1 for acmelogs (rotate in May) {S}",
        _account_key(),
    ),
    _s(
        "storage-key-in-words",
        "secret-in-prose",
        "Primary key of the blob account = {S}",
        _account_key(),
    ),
    _s("unseal-key", "secret-in-prose", "the vault unseal key is {S}", _b64_key(32)),
    _s("unseal-key", "secret-in-prose", "Unseal Key 2: {S}", _b64_key(32)),
    _s("unseal-key", "secret-in-prose", "vault recovery key was {S}", _b64_key(32)),
    _s("handed-token", "secret-in-prose", "use token {S} for the webhook", chars(_rng, HEX, 32)),
    _s(
        "handed-token",
        "secret-in-prose",
        "Use the API token {S} when calling billing",
        chars(_rng, ALNUM, 32),
    ),
    _s("handed-token", "secret-in-prose", "call it with token `{S}`", chars(_rng, ALNUM, 28)),
    _s(
        "handed-token",
        "secret-in-prose",
        "host ci.acme.dev, user deploy, token {S}",
        chars(_rng, ALNUM, 24),
    ),
    _s(
        "handed-token",
        "secret-in-prose",
        "sign payloads using the webhook secret {S}",
        chars(_rng, ALNUM, 32),
    ),
    _s(
        "handed-token",
        "secret-in-prose",
        "try admin token {S} if the bot is down",
        chars(_rng, ALNUM, 30),
    ),
    _s(
        "handed-token",
        "secret-in-prose",
        "Our Sentry DSN is public, but USE SECRET {S}",
        chars(_rng, ALNUM, 26),
    ),
    _s("key-named-in-words", "secret-in-prose", "the webhook key is {S}", chars(_rng, ALNUM, 32)),
    _s("key-named-in-words", "secret-in-prose", "HMAC key: {S}", chars(_rng, HEX, 64)),
    _s(
        "key-named-in-words",
        "secret-in-prose",
        "The JWT secret for staging is '{S}'",
        chars(_rng, ALNUM, 40),
    ),
    _s(
        "key-named-in-words",
        "secret-in-prose",
        "deploy key was rotated to {S}",
        chars(_rng, ALNUM, 36),
    ),
]

PASSWORDS_IN_WORDS: list[Secret] = [
    _s("password-quoted", "password-in-prose", "PASSWORD '{S}' for the box", "Kx7!mQ2pLz"),
    _s("password-handed", "password-in-prose", "username admin password {S}", "Xyz!23ab"),
    *_many(
        "password-handed",
        "password-in-prose",
        ("login is admin with password {S}", "Pq9$wE3rTz"),
        ("Log in as root with password {S}", "r00t!Box-7"),
        ("connect using password {S} then change it", "Cx4-Temp!x"),
        ("user ops, password {S}", "0ps#Night9"),
        ("sign in with the admin password '{S}'", "Adm!n-2024x"),
        ("try password {S} on the old NAS", "nAs-0ld-22"),
        ("enter passphrase {S} to unlock the keystore", "Kst0re~Unl0ck"),
        ("The kiosk accepts the PIN or password {S}.", "K10sk-Pw!"),
    ),
    *_many(
        "short-password-word",
        "password-in-prose",
        ("ssh pass for the jump host is {S}", "Kx7!mQ2pLz"),
        ("root pw was reset to {S}", "T0p$ecret9"),
        ("the db pass is now {S}", "Db-Pa55-Q3"),
        ("Wi-Fi pass for guests is {S}", "GuestNet#88"),
        ("the vpn pwd is {S}", "Vpn!2024-z"),
        ("sudo pass on build-3 was changed to {S}", "Bu1ld3-Sud0"),
    ),
    *_many(
        "login-pair",
        "password-in-prose",
        ("login to grafana with admin / {S}", "Gr4f@na-Pr0d"),
        ("Login: admin/{S}", "Adm1n#Gate"),
        ("sign in to the router as admin / {S}", "Rtr-Adm!n5"),
        ("creds for jenkins: ci-bot / {S}", "J3nk!ns-Ci"),
        ("log in to the NAS with backup:{S}", "Nas-Bkp-77x"),
        ("credentials: ops@acme.dev / {S}", "0ps@Acme!9"),
    ),
    *_many(
        "redis-auth",
        "cli-password-flag",
        ("redis AUTH {S}", "Zq8vLm2Xp9Rt4Wn7"),
        ("127.0.0.1:6379> AUTH default {S}", "s3cr3t-R3dis"),
        ("on the redis box run AUTH app {S} first", "Kq8-Zz9x!r"),
        ("redis.conf: requirepass {S}", "Rd!s-Pr0d-77"),
        ("masterauth {S} on the replicas", "Rep1-Auth#9"),
    ),
]

QUOTED_SYMBOLS: list[Secret] = [
    *_many(
        "quoted-symbol-secret",
        "secret-assignment",
        ("SOMETHING_SECRET_KEY='{S}'", "a!b@c#d$e%f^g&h*i(j)k"),
        ("APP_SECRET_KEY='{S}'", "Xy(7)!@#$%^&*z"),
        ('export SESSION_SECRET="{S}"', "(q)w!e@r#t$y%"),
        ("secret_key = '{S}'", "#(a)s!d@f$g%h^j&k*l"),
        ("JWT_SECRET: '{S}'", "!@#$%^&*()_+Zz9"),
    ),
    *_many(
        "quoted-symbol-password",
        "password-assignment",
        ("DB_PASSWORD='{S}'", "Xy(7)!@#$%^&*z"),
        ('"admin_password": "{S}"', "pa(ss)!#$%^&*"),
    ),
]

KEY_LINES: list[Secret] = [
    _s("key-body-lines", "private-key-body", "the key body, middle lines:\n{S}", _key_lines()),
    _s("key-body-lines", "private-key-body", "> quoted from the ticket:\n{S}", _key_lines("> ")),
    _s("key-body-lines", "private-key-body", "KEY = (\n{S}\n)", _key_lines('    "', '"')),
    _s("key-body-lines", "private-key-body", "values.yaml:\n  tls:\n{S}", _key_lines("      ")),
]

# Two secrets in one text: the second must be found whatever the first one's detector took.
TWO_IN_ONE: list[Secret] = [
    _s(
        "second-secret",
        "secret-assignment",
        "token: ghp_R8kq2ZvX4mN7pL1sT9wY3bC6dF0gH5jK8aQe:{S}",
        chars(_rng, ALNUM, 20),
    ),
    _s("second-secret", "aws-secret-access-key", f"{_key_id()}:{{S}}", _aws_secret()),
]

SECRETS: list[Secret] = (
    AWS_IN_WORDS + KEYS_IN_WORDS + PASSWORDS_IN_WORDS + QUOTED_SYMBOLS + KEY_LINES + TWO_IN_ONE
)

_SHA1 = chars(_rng, HEX, 40)
_ULID = "01HZ" + chars(_rng, "0123456789ABCDEFGHJKMNPQRSTVWXYZ", 22)
_CERT_LINES = "\n".join(
    "MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ"[:64]
    if i == 0
    else chars(_rng, B64, 64)
    for i in range(4)
)
_TEXT_LINES = "\n".join(
    base64.b64encode(
        ("The quarterly report covers revenue, churn and hiring. " * 3).encode()
    ).decode()[i : i + 64]
    for i in range(0, 192, 64)
)

HARMLESS: list[str] = [
    # prose about credentials that states none
    "rotate the token weekly",
    "the password policy requires 12 chars",
    "use `$REDIS_PASSWORD` from the environment",
    "login with your SSO",
    "Log in with your SSO account, not a local password",
    "the api token is in 1Password under 'Billing'",
    "use token auth for the webhook, not basic auth",
    "use the token from the vault, never a personal one",
    "with password authentication disabled, only keys work",
    "try password reset if the login fails",
    "sign in with Google or GitHub",
    "the secret key is stored in AWS Secrets Manager",
    "the aws secret access key is in ~/.aws/credentials",
    "AWS secret access key rotation is automated by the platform team",
    "the storage account key is rotated every 30 days by the runbook",
    "the vault unseal keys are split between five people",
    "Unseal Key 1: <redacted> (kept by Ada)",
    "redis AUTH is required in production",
    "redis auth is disabled on dev boxes",
    "requirepass is set from the REDIS_PASSWORD secret",
    "ssh pass is managed by the bastion, ask ops",
    "the db pass is in the team vault",
    "login to grafana with your Okta account",
    "login to the console with admin / <password>",
    "login as admin / ******** on the staging box",
    "credentials: user / password from the docs",
    "login with admin/admin on a fresh install, then change it",
    "sign in at https://sso.acme.dev/login/callback",
    "log in at acme.dev/signin/v2 after the migration",
    "login timeout: 30s, then the session ends",
    "login at 10:30 and deploy at noon",
    "creds in vault:secret/data/app",
    "hashed with password PBKDF2 and 600k rounds",
    "the password is hashed with PBKDF2-SHA256",
    "with password-less login for staff",
    "user admin, password changeme on the demo image",
    "use password123 only in the fixtures, never elsewhere",
    "with token rotation every 24h",
    "use the next token eyJOZXh0VG9rZW4iOiBudWxsLCAiYm90b190cnVuY2F0ZV9hbW91bnQiOiAxfQ== to page",
    "use the csrf token from the cookie, not the header",
    "with secret scanning enabled on every repo",
    "and token expiry set to one hour",
    ", secret rotation is on the Q3 roadmap",
    "use the private key at ~/.ssh/id_ed25519_deploy for the box",
    "the ssh key is ~/.ssh/id_ed25519",
    "the deploy key is read-only on purpose",
    "with the signing key from the HSM",
    "use the webhook secret configured in the dashboard",
    "the JWT secret lives in SSM under /prod/api/jwt",
    "use $API_TOKEN for the webhook",
    "use token ${WEBHOOK_TOKEN} for the webhook",
    "use token <token> for the webhook",
    "use token YOUR_TOKEN_HERE for the webhook",
    "with password: <password>",
    "redis AUTH <password>",
    "AUTH tokens expire after an hour",
    # ids, hashes, versions, paths that sit near credential words
    f"the token fix landed in commit {_SHA1}",
    f"secret key rotation shipped in {_SHA1}",
    f"AKIAIOSFODNN7EXAMPLE was leaked in commit {_SHA1}, revoked",
    f"job {_ULID} used the new token cache",
    "the api key request 550e8400-e29b-41d4-a716-446655440000 failed",
    "use token version 2.14.3 of the SDK",
    "login with v2.3.1 of the CLI",
    "the secret key length is 40 characters in AWS",
    "the secret key looks like wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY in the docs",
    "secret key of 64 bytes, base64 encoded to 88 characters",
    "the storage account key must be base64 (88 characters ending in ==)",
    "key1 and key2 are the two storage account keys; rotate one at a time",
    "Primary key and secondary key are shown in the portal under Access keys",
    "use token bucket rate limiting for the webhook",
    "password and token fields are masked in the logs",
    "login: see the onboarding doc",
    "creds: ask in #ops",
    "with token-based auth the CLI needs no password",
    "AKIA keys belong to IAM users; ASIA keys are temporary",
    "the AWS key AKIA... with secret wJalr... is the shape of the pair",
    # base64 of ordinary words, wrapped like a key body, and public blocks
    "base64 of the banner: " + base64.b64encode(b"Welcome to the acme build farm").decode(),
    "the report in base64:\n" + _TEXT_LINES,
    "certificate body without its header:\n" + _CERT_LINES,
    "the env file has SECRET_KEY='{{ secret_key }}' as a template",
    "SECRET_KEY='$(cat /run/secrets/django)' in the entrypoint",
    "CRON_SCHEDULE='*/5 * * * *' and SECRET_NAME='payments-tls'",
    "PASSWORD_HINT='(ask ops)'",
    "docs/security.md explains where the webhook token is kept",
    # words that hand nothing over
    "integrity key sha512-" + base64.b64encode(_rng.randbytes(64)).decode(),
    "the admin password / user table migration",
    "login with SSO / SAML",
    "login with email/password",
    "sign in with Google / Microsoft365",
    "credentials rotated on 2024/05/01",
    "Login flow: client -> server / callback",
    "with token TTL 3600",
    "use token-exchange grant for the CLI",
    "with secret sauce",
    "use the API key header X-Api-Key",
    "use the session token from localStorage",
    "the secret key is 32 random bytes",
    "and token: 3f9c2ab",
    "login: admin@acme.dev",
    "Sign-in / Sign-up pages redesign",
    "login / logout buttons moved",
    "login via LDAP / Kerberos5",
    "redis AUTH failed for user app",
    "redis auth default user ACL",
    "> AUTH LOGIN",
    "requirepass foobared is the redis.conf example",
    "masterauth <master-password>",
    "the hmac key: 256 bits",
    "the private key is ed25519",
    "use the storage account key from Key Vault",
    "Primary key: id (uuid)",
    "log in as root / toor on Kali, the default",
    "sign in with username / password fields",
    "the root pw is in the safe",
    "vpn pass is the same as your SSO",
    "with the admin token from the dashboard",
    "using API key auth and OAuth2 for users",
    "the jump host pass is stored in Teleport",
    "with password: see the wiki",
    "and secret: injected at runtime",
    "use key1 for the connection string, key2 while rotating",
]
