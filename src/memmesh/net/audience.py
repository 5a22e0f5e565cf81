"""Which daemon a signed request is meant for: its *audience*, one daemon and no other.

A peer's audience is its owner's member id (``peer:<key id>``): that names one daemon already.
A team name does not: two coordinators may serve teams of the same name (a request captured
at one must be worthless at the other). So a coordinator's audience is bound to the coordinator
the member reaches, by one of its *names* (:func:`bound_audience`):

* the pin of its certificate, when the member holds one (team.yaml ``coordinator_pin``, from
  the join code): whatever address it is reached by, only the holder of that certificate's
  key answers there;
* else the origin of its URL as the member's team.yaml names it (``scheme://host:port``,
  :func:`origin_of`): a coordinator behind a reverse proxy is named by the proxy's address,
  which is the coordinator's ``--url``.

The coordinator answers to the pin of the certificate it serves (and of the one its data folder
keeps), and to the origin of its ``--url``; without ``--url``, to the address the request
reached (:func:`arrival_origins`), as members use it then.
"""

from urllib.parse import urlsplit

from memmesh.net.urls import is_loopback

__all__ = [
    "COORDINATOR_PREFIX",
    "arrival_origins",
    "bound_audience",
    "client_audience",
    "is_bound",
    "origin_of",
]

COORDINATOR_PREFIX = "coordinator:"
_DEFAULT_PORTS = {"http": 80, "https": 443}
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def is_bound(audience: str) -> bool:
    """Whether ``audience`` is a coordinator's, which is bound to one coordinator on the
    wire."""
    return audience.startswith(COORDINATOR_PREFIX)


def bound_audience(audience: str, name: str) -> str:
    """``audience`` bound to the coordinator named ``name`` (a pin or an origin, neither of
    which holds an ``@``)."""
    return f"{audience}@{name}"


def origin_of(url: str) -> str:
    """``scheme://host:port`` of ``url``, with the scheme and host in lower case and the port
    always written (``https://Team-Host`` -> ``https://team-host:443``).

    Raises ``ValueError`` for a URL without a host or with a bad port.
    """
    parts = urlsplit(url.strip())
    scheme, host = parts.scheme.lower(), parts.hostname
    if not host:
        raise ValueError(f"{url!r} names no host")
    port = parts.port or _DEFAULT_PORTS.get(scheme)
    if port is None:
        raise ValueError(f"{url!r} names no port")
    return _origin(scheme, host, port)


def _origin(scheme: str, host: str, port: int) -> str:
    host = host.lower().strip("[]")
    return f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}"


def arrival_origins(scheme: str, server: tuple[str, int] | None) -> list[str]:
    """The origins a request that reached the listening address ``server`` by ``scheme`` was
    sent to, as far as this end knows: that address, and on loopback each name of loopback."""
    if server is None or not server[0] or not server[1]:
        return []
    host, port = server
    origin = _origin(scheme, host, port)
    if not is_loopback(host):
        return [origin]
    return list(dict.fromkeys([origin, *(_origin(scheme, name, port) for name in _LOOPBACK_NAMES)]))


def client_audience(audience: str, url: str, pin: str = "") -> str:
    """What a member signs for when it sends a request meant for ``audience`` to ``url``: a
    coordinator's audience bound to ``pin`` when the member holds one, else to the origin of
    ``url``; any other audience as it is."""
    if not is_bound(audience):
        return audience
    return bound_audience(audience, pin or origin_of(url))
