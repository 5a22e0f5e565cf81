"""Join codes: one line that holds everything a new laptop needs to join a team.

In a team whose roster is signed, an admin's ``mem team invite NAME`` puts an invite on the
chain and prints a :class:`JoinCode`: the coordinator's URL, its certificate pin, the team, the
name, the expiry, the invite's secret (the private half of a key made for that invite alone)
and ``root``, the member id of the team's root key. ``mem team join CODE`` reads it back, pins
the coordinator, believes the roster only as a chain that starts at that root, and signs its
join with its own key and the invite's. A code without ``root`` is the first admin's (its
secret is the coordinator's bootstrap invite, and the joiner starts the chain), or an invite of
a team whose roster is not signed yet (only the secret's SHA-256 reached the coordinator).
The code is a secret: whoever holds it can join once, until it expires.
"""

import base64
import hashlib
import os
import time
from typing import Annotated

import msgspec

from memmesh._urls import UnsoundUrl, normalised_url
from memmesh.coordinator.errors import BadJoinCode

__all__ = ["JOIN_PREFIX", "JoinCode", "new_secret", "secret_digest"]

JOIN_PREFIX = "memmesh-join:"
_MAX_CODE = 2048
_PIN = "^sha256:[0-9a-f]{64}$"
_MEMBER_ID = "^[a-z2-7]{16}$"


def new_secret() -> str:
    """A fresh invite secret: 32 random bytes, URL-safe base64."""
    return base64.urlsafe_b64encode(os.urandom(32)).decode("ascii").rstrip("=")


def secret_digest(secret: str) -> str:
    """What the coordinator keeps of a secret: its SHA-256, in hex."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class JoinCode(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """What a join code says. ``pin`` is empty for a coordinator on plain loopback http or
    with a certificate from a public authority; ``root`` (the member id of the team's root
    key) is empty for the first admin's code and for a team whose roster is not signed;
    ``start`` marks the first admin's code, whose joiner starts the signed roster (its genesis
    is sent with the code's secret, its key becomes the team's root).

    Fields at their defaults are left out of the code: a shorter line, and one that a memmesh
    from before ``root`` still reads."""

    url: Annotated[str, msgspec.Meta(min_length=1, max_length=512)]
    team: Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
    secret: Annotated[str, msgspec.Meta(min_length=16, max_length=128)]
    expires_at: float
    pin: Annotated[str, msgspec.Meta(pattern=_PIN)] | None = None
    admin: bool = False
    root: Annotated[str, msgspec.Meta(pattern=_MEMBER_ID)] | None = None
    start: bool = False

    def encode(self) -> str:
        """The one-line code."""
        raw = msgspec.json.encode(self)
        return JOIN_PREFIX + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")

    @classmethod
    def decode(cls, text: str, *, now: float | None = None) -> "JoinCode":
        """The code in ``text``; :class:`BadJoinCode` says what is wrong with it (expired
        included)."""
        text = text.strip()
        if len(text) > _MAX_CODE or not text.startswith(JOIN_PREFIX):
            raise BadJoinCode(f"a join code starts with {JOIN_PREFIX!r}")
        body = text[len(JOIN_PREFIX) :]
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
            code = msgspec.json.decode(raw, type=cls, strict=True)
        except (ValueError, msgspec.MsgspecError):
            raise BadJoinCode("it is damaged (was it copied whole?)") from None
        try:
            normalised_url(code.url)
        except UnsoundUrl as exc:
            raise BadJoinCode(f"its coordinator URL is unusable: {exc}") from None
        if code.expires_at <= (time.time() if now is None else now):
            raise BadJoinCode("it has expired; ask an admin for a new one")
        return code
