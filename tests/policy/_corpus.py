"""Shared pieces of the secret-detector corpus: what an example is, and fake values.

Every value is fake. Random parts come from a generator seeded by the example's kind, so the
corpus is the same on every run, and no literal token sits in the source for a secret
scanner to find. Formats follow the providers' documented shapes: prefix, alphabet, length,
and where a format has a checksum (GitHub, npm), a real one.
"""

import base64
import json
import random
import string
import uuid
import zlib
from collections.abc import Callable, Iterable
from typing import NamedTuple

HEX = "0123456789abcdef"
UPPER_HEX = HEX.upper()
DIGITS = string.digits
LOWER = string.ascii_lowercase
LETTERS = string.ascii_letters
ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = LOWER + DIGITS
UPPER_ALNUM = string.ascii_uppercase + DIGITS
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
BASE32 = string.ascii_uppercase + "234567"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


class Secret(NamedTuple):
    """A memory holding one secret: its kind, the detector that must name it, the text."""

    kind: str
    detector: str
    text: str
    value: str


Make = Callable[[random.Random], str]


def chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def fake_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def b64url_json(data: dict[str, object]) -> str:
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


def _base62(number: int, width: int) -> str:
    digits = DIGITS + string.ascii_uppercase + LOWER
    out = ""
    while number:
        number, rest = divmod(number, 62)
        out = digits[rest] + out
    return out.rjust(width, "0")


def checksummed(prefix: str, rng: random.Random, random_part: int = 30) -> str:
    """GitHub's and npm's shape: random base62, then the CRC32 of it in six base62 digits."""
    body = chars(rng, ALNUM, random_part)
    return prefix + body + _base62(zlib.crc32(body.encode()), 6)


def token(prefix: str, *parts: tuple[str, int]) -> Make:
    """A value maker: ``prefix`` then random runs of each (alphabet, length)."""

    def make(rng: random.Random) -> str:
        return prefix + "".join(chars(rng, alphabet, n) for alphabet, n in parts)

    return make


def examples(kind: str, detector: str, make: Make, templates: Iterable[str]) -> list[Secret]:
    """One example per template, each with its own value, where the template says ``{S}``."""
    found = []
    for index, template in enumerate(templates):
        assert "{S}" in template, template
        value = make(random.Random(f"{kind}/{index}"))
        found.append(Secret(kind, detector, template.replace("{S}", value), value))
    return found


def pem(kind: str, body: str, width: int = 64) -> str:
    """A PEM block: BEGIN line, ``body`` in lines of ``width``, END line."""
    lines = [body[i : i + width] for i in range(0, len(body), width)]
    return "\n".join(
        ["-----" + "BEGIN " + kind + "-----", *lines, "-----" + "END " + kind + "-----"]
    )


# Where a developer keeps a token: a variable's name goes where the template says NAME (or
# name, lower-cased).
ENV_CONTEXTS = (
    "{NAME}={S}",
    "export {NAME}={S}",
    "export {NAME}='{S}' before running the deploy script",
    ".env.production has {NAME}={S}",
    '"{name}": "{S}" in config/secrets.json',
    "{name}: {S}   # in values-prod.yaml",
    "docker run -e {NAME}={S} acme/worker:2.3",
    "kubectl create secret generic app-env --from-literal={NAME}={S}",
    "GitHub Actions secret {NAME} is set to {S}",
    '[default]\n{name} = "{S}"',
    "heroku config:set {NAME}={S} -a acme-api",
    "fly secrets set {NAME}={S}",
    'In ~/.zshrc: export {NAME}="{S}"',
)
# How a developer mentions one in a note: DESC goes where the template says {desc}.
NOTE_CONTEXTS = (
    "Rotated the {desc} today, new value {S}",
    "{desc} (expires in 90 days): {S}",
    "Note to self: the {desc} is {S}",
    "pasting for later - {S} ({desc})",
    "If CI breaks again, the {desc} is {S}",
    "{S} <- {desc}, do not commit",
    "Found the {desc} in the old wiki page: {S}",
    "Temporary {desc} for the demo: {S}",
    "the {desc} that works: {S}",
    "Bob sent the {desc} over Slack: {S}",
)


def provider(
    kind: str,
    detector: str,
    make: Make,
    name: str,
    desc: str,
    *specific: str,
) -> list[Secret]:
    """A provider's token in its own sentences, in an environment variable and in a note."""
    pick = random.Random(kind)
    env = pick.choice(ENV_CONTEXTS).replace("{NAME}", name).replace("{name}", name.lower())
    note = pick.choice(NOTE_CONTEXTS).replace("{desc}", desc)
    return examples(kind, detector, make, [*specific, env, note])
