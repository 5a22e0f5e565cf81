"""How a member reaches the team's daemons: the one place a client is set up for them.

* The coordinator: its URL from team.yaml, pinned with ``coordinator_pin`` when https, every
  request signed for that very coordinator (its pin, else its URL's origin: see
  :mod:`memmesh.net.audience`), and the team token (an optional outer gate) as bearer token.
  When team.yaml lists the URLs of its processes, they are tried in order
  (:class:`~memmesh.net.client.Client`), each pinned with the one pin, and every request is
  signed for the first URL's origin when no pin is held: the ``--url`` each process is
  started with.
* A teammate's peer: the URL and pin from its signed presence, every request signed for that
  peer's audience, and never the team token (a peer knows askers by their keys).

Plain ``http`` beyond loopback is refused unless team.yaml says ``insecure_http: true``; an
``https`` service with no pin must have a certificate the system's authorities vouch for.
"""

import os
from functools import partial

from memmesh.net.client import DEFAULT_TIMEOUT, Client
from memmesh.net.signing import coordinator_audience, peer_audience
from memmesh.net.tls import pinned_context
from memmesh.net.urls import SoundUrl, check_transport, peer_url
from memmesh.policy.config import Policy
from memmesh.policy.errors import NoCoordinator
from memmesh.registry.identity import Identity

__all__ = ["coordinator_client", "peer_client", "team_token"]


def team_token(policy: Policy) -> str | None:
    """The team token from the variable team.yaml names (``None`` when unset or empty)."""
    return os.environ.get(policy.token_env) or None


def coordinator_client(
    policy: Policy, identity: Identity | None, *, timeout: float = 10.0
) -> Client:
    """A client for the policy's coordinator, at each of its addresses in turn; ``identity``
    signs every request (``None``: unsigned, for the routes anyone may call). Nothing is
    contacted yet: a pinned address's certificate is checked before its first request."""
    if policy.coordinator is None:
        raise NoCoordinator()
    first, *others = urls = [peer_url(url) for url in policy.coordinator_addresses()]
    for url in urls:
        check_transport(url, insecure_http=policy.insecure_http)
    tls, pin = None, ""
    if first.startswith("https:") and policy.coordinator_pin:
        pin = policy.coordinator_pin
        tls = partial(pinned_context, pin=pin, timeout=timeout)
    return Client(
        first,
        fallbacks=others,
        token=team_token(policy),
        timeout=timeout,
        identity=identity,
        audience=coordinator_audience(policy.team),
        pin=pin,
        tls=tls,
    )


def peer_client(
    url: SoundUrl,
    *,
    key_id: str,
    pin: str,
    identity: Identity | None,
    policy: Policy,
    timeout: float = DEFAULT_TIMEOUT,
) -> Client:
    """A client for the peer of member ``key_id`` at ``url`` (pinned with ``pin`` when https
    and a pin is given); never carries the team token."""
    check_transport(url, insecure_http=policy.insecure_http)
    tls = pinned_context(url, pin, timeout) if url.startswith("https:") and pin else None
    return Client(
        url,
        token=None,
        timeout=timeout,
        identity=identity,
        audience=peer_audience(key_id),
        tls=tls,
    )
