"""Peer and coordinator URLs from outside: checked before anything is sent to them.

Every URL that comes from a presence, zeroconf, team.yaml or the command line passes
:func:`peer_url` before memmesh contacts it (and so before the team token goes there).
"""

import ipaddress
from urllib.parse import urlsplit

from memmesh._urls import SoundUrl, UnsoundUrl, normalised_url
from memmesh.net.errors import BadUrl, InsecureUrl

__all__ = ["SoundUrl", "check_transport", "is_loopback", "peer_url", "serves_tls"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (127.0.0.0/8, ::1 or localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serves_tls(
    host: str, *, tls: bool = False, insecure_http: bool = False, url: str | None = None
) -> bool:
    """Whether a daemon listening on ``host`` serves https: when asked (``tls``); otherwise
    unless told to serve plain http (``insecure_http``: a reverse proxy in front of it serves
    the https), when the ``url`` it is reached at says https, and beyond loopback."""
    if tls or insecure_http:
        return tls
    return (url is not None and url.startswith("https:")) or not is_loopback(host)


def check_transport(url: SoundUrl, *, insecure_http: bool) -> None:
    """Refuse plain ``http`` beyond loopback (:class:`InsecureUrl`) unless allowed."""
    parts = urlsplit(url)
    if parts.scheme == "http" and not insecure_http and not is_loopback(parts.hostname or ""):
        raise InsecureUrl(url)


def peer_url(text: str) -> SoundUrl:
    """``text`` as a :data:`SoundUrl` (``scheme://host[:port]``, no trailing slash) if it is sound.

    Sound: ``http`` or ``https``, an IPv4 address, bracketed IPv6 address or DNS name, no user
    or password, a port of 1-65535 when given, no path but ``/``, no query, no fragment.
    Raises :class:`BadUrl`, naming what is wrong, and nothing else whatever ``text`` holds.
    """
    try:
        return normalised_url(text)
    except UnsoundUrl as exc:
        raise BadUrl(text, exc.problem) from None
