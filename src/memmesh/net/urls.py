"""Peer and coordinator URLs from outside: checked before anything is sent to them.

Every URL that comes from a presence, zeroconf, team.yaml or the command line passes
:func:`peer_url` before memmesh contacts it (and so before the team token goes there).
"""

from memmesh._urls import UnsoundUrl, normalised_url
from memmesh.net.errors import BadUrl

__all__ = ["peer_url"]


def peer_url(text: str) -> str:
    """``text`` normalised (``scheme://host[:port]``, no trailing slash) if it is sound.

    Sound: ``http`` or ``https``, an IPv4 address, bracketed IPv6 address or DNS name, no user
    or password, a port of 1-65535 when given, no path but ``/``, no query, no fragment.
    Raises :class:`BadUrl`, naming what is wrong, and nothing else whatever ``text`` holds.
    """
    try:
        return normalised_url(text)
    except UnsoundUrl as exc:
        raise BadUrl(text, exc.problem) from None
