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


# Hosts a member's presence may not advertise whatever the coordinator: cloud metadata
# services (which hand any process there credentials), by name and by their addresses
# outside link-local (Alibaba's; AWS's IPv6 one).
_METADATA_NAMES = frozenset({"metadata", "metadata.google.internal", "instance-data"})
_METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("100.100.100.200", "fd00:ec2::254", "fd20:ce::254")
)
_LINK_LOCAL = "it is link-local, where cloud metadata services answer"
_LOOPBACK = (
    "while the coordinator serves beyond this machine, a peer on loopback is reachable by none"
)


def presence_url(text: str, *, loopback: bool) -> SoundUrl:
    """``text``, the peer URL a member's presence advertises, if teammates may contact it:
    sound (:func:`peer_url`), and its host neither link-local (169.254.0.0/16, fe80::/10,
    where cloud metadata services answer) nor a metadata service's, nor unspecified
    (``0.0.0.0``, ``::``), multicast or broadcast, nor loopback unless ``loopback`` (the
    coordinator serves only this machine, so every member is on it). A DNS name is judged by
    the name alone. Both the coordinator (before it lists a presence) and every asker (before
    it contacts a peer) check it. Raises :class:`BadUrl`."""
    url = peer_url(text)
    host = (urlsplit(url).hostname or "").rstrip(".")
    problem = _unfetchable(host, loopback=loopback)
    if problem:
        raise BadUrl(text, problem)
    return url


def _unfetchable(host: str, *, loopback: bool) -> str:
    """Why no teammate may be sent to ``host`` ("" when it may)."""
    if host in _METADATA_NAMES:
        return "it names a cloud metadata service"
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        local = host == "localhost" or host.endswith(".localhost")
        return _LOOPBACK if local and not loopback else ""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address in _METADATA_ADDRESSES:
        return "it names a cloud metadata service"
    if address.is_link_local:
        return _LINK_LOCAL
    if address.is_unspecified:
        return "it is unspecified (0.0.0.0 or ::), no address to reach a peer at"
    if address.is_multicast or address == ipaddress.IPv4Address("255.255.255.255"):
        return "it is multicast or broadcast"
    if address.is_loopback and not loopback:
        return _LOOPBACK
    return ""


def loopback_peers(coordinator: str | None) -> bool:
    """The ``loopback`` of :func:`presence_url` for a member whose coordinator is at the URL
    ``coordinator``: whether it serves on loopback (so every member is on this machine), or
    there is none (its peers are then named in team.yaml or heard of on the network)."""
    return coordinator is None or is_loopback(urlsplit(coordinator).hostname or "")
