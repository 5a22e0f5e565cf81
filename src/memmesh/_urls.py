"""Which URLs memmesh ever contacts: the one check, shared by every layer.

A coordinator or peer URL is sound when it is ``http`` or ``https``, names a host (an IPv4
address, a bracketed IPv6 address or a DNS name) and nothing else that could carry or redirect
a request: no user or password, no path but ``/``, no query, no fragment, and a port (when
given) of 1-65535. It sits below every layer so that team.yaml's loader (below the network
layer) and the network layer check with the same rules; each raises its own typed error from
:class:`UnsoundUrl` (``memmesh.net.urls.peer_url`` raises ``BadUrl``).
"""

import ipaddress
import re
from typing import NewType
from urllib.parse import urlsplit

__all__ = ["MAX_URL_LENGTH", "SoundUrl", "UnsoundUrl", "normalised_url"]

MAX_URL_LENGTH = 2048

# A URL that passed :func:`normalised_url`: the only kind anything is ever sent to. Code that
# contacts a daemon takes this type, so a string from outside cannot reach it unchecked.
SoundUrl = NewType("SoundUrl", str)
_SCHEMES = ("http", "https")
_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_DIGITS = re.compile(r"[0-9]+")
_HEX = re.compile(r"0x[0-9a-f]*")


class UnsoundUrl(ValueError):
    """What is wrong with a URL, in ``problem`` (the callers' typed errors carry it on)."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def normalised_url(text: str) -> SoundUrl:
    """``text`` as ``scheme://host[:port]`` (lower-case, no trailing slash) if it is sound.

    Raises :class:`UnsoundUrl`, and nothing else, whatever ``text`` holds.
    """
    if len(text) > MAX_URL_LENGTH:
        raise UnsoundUrl(f"it is longer than {MAX_URL_LENGTH} characters")
    # urlsplit silently drops tabs and newlines and strips leading controls: refuse them first,
    # so that what is checked is what would be sent.
    if not text.isascii() or any(ch <= " " or ch == "\x7f" for ch in text):
        raise UnsoundUrl("it holds spaces, control or non-ASCII characters")
    if "?" in text:
        raise UnsoundUrl("it has a query")
    if "#" in text:
        raise UnsoundUrl("it has a fragment")
    # Text after an IPv6 address's bracket is told in these words whichever Python reads it
    # (some patch releases of urlsplit refuse it themselves, in words of their own).
    authority = text.partition("://")[2].partition("/")[0]
    if authority.startswith("[") and "]" in authority:
        after = authority.partition("]")[2]
        if after and not after.startswith(":"):
            raise UnsoundUrl("it is not a URL (text after the IPv6 address)")
    try:
        parts = urlsplit(text)
    except ValueError as exc:  # "Invalid IPv6 URL": an unclosed bracket, say
        raise UnsoundUrl(f"it is not a URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES or not text.lower().startswith(f"{scheme}://"):
        raise UnsoundUrl("only http:// and https:// URLs are contacted")
    if "@" in parts.netloc:
        raise UnsoundUrl("it names a user or password")
    if parts.path not in ("", "/"):
        raise UnsoundUrl("it has a path")
    host, port = _host_and_port(parts.netloc)
    try:
        number = parts.port
    except ValueError:
        number = None
    if port is not None and (number is None or not 1 <= number <= 65535):
        raise UnsoundUrl("the port must be a number from 1 to 65535")
    return SoundUrl(f"{scheme}://{host}" + (f":{number}" if port is not None else ""))


def _host_and_port(netloc: str) -> tuple[str, str | None]:
    """The checked host (bracketed if IPv6) and the port text, if one was given."""
    if netloc.startswith("["):
        inside, _, rest = netloc[1:].partition("]")
        if "%" in inside:
            raise UnsoundUrl("an IPv6 zone is not allowed")
        try:
            host = f"[{ipaddress.IPv6Address(inside).compressed}]"
        except ValueError:
            raise UnsoundUrl("the host is not an IPv6 address") from None
        if rest and not rest.startswith(":"):
            raise UnsoundUrl("it is not a URL (text after the IPv6 address)")
        return host, rest[1:] if rest else None
    name, colon, port = netloc.partition(":")
    if ":" in port:
        raise UnsoundUrl("an IPv6 address must be in brackets")
    return _host(name.lower()), port if colon else None


def _host(name: str) -> str:
    """An IPv4 address or a DNS name, checked."""
    if not name:
        raise UnsoundUrl("it names no host")
    labels = name.split(".")
    if all(_DIGITS.fullmatch(label) for label in labels):
        try:
            return str(ipaddress.IPv4Address(name))
        except ValueError:
            raise UnsoundUrl("the host is not an IPv4 address") from None
    if len(name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise UnsoundUrl("the host is not an IP address or a DNS name")
    if _DIGITS.fullmatch(labels[-1]) or any(_HEX.fullmatch(label) for label in labels):
        raise UnsoundUrl("the host is not an IPv4 address")  # 0x7f.1 resolves as one
    if any(label.startswith("xn--") for label in labels):
        _punycode(name)
    return name


def _punycode(name: str) -> None:
    """Refuse an internationalised name that does not decode: clients would fail on it."""
    import idna  # httpx's own IDNA codec, so that what passes here is what it can connect to

    try:
        idna.decode(name)
    except (idna.IDNAError, UnicodeError):
        raise UnsoundUrl("the host is not a valid internationalised domain name") from None
