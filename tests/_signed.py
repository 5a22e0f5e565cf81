"""Signed requests for tests: every coordinator route but /healthz needs one."""

from collections.abc import Generator
from typing import TYPE_CHECKING

import httpx
import msgspec

from memmesh.coordinator import _members
from memmesh.coordinator.invites import secret_digest
from memmesh.coordinator.protocol import MemberAdd
from memmesh.net.audience import bound_audience, client_audience, origin_of
from memmesh.net.client import Client
from memmesh.net.presence import RosterMember
from memmesh.net.signing import Caller, coordinator_audience, sign_request
from memmesh.registry.envelopes import Envelope
from memmesh.registry.identity import Identity

if TYPE_CHECKING:
    from memmesh.coordinator import Coordinator


def caller(identity: Identity) -> Caller:
    """The caller a request signed by ``identity`` verifies as."""
    return Caller(key=identity.public_key_text, key_id=identity.key_id)


# Who sends an envelope whose payload names no readable key (a damaged one, say).
NOBODY = Caller(key="A" * 43, key_id="a" * 16)


def author_of(envelope: Envelope) -> Caller:
    """The caller an honest member sending ``envelope`` is: the key inside its payload (read
    without checking the signature), or :data:`NOBODY` if the payload names none."""
    try:
        body = msgspec.json.decode(envelope.payload)
        return Caller(key=body["author_key"], key_id=body["key_id"])
    except (msgspec.MsgspecError, KeyError, TypeError):
        return NOBODY


def signed_client(
    url: str,
    identity: Identity,
    *,
    team: str,
    token: str | None = None,
    timeout: float = 5.0,
    known_as: str | None = None,
) -> Client:
    """A protocol client of ``team``'s coordinator at ``url`` whose requests ``identity``
    signs; with ``known_as``, signed for the coordinator members reach at that URL (its
    ``--url``, a proxy in front of it), though sent to ``url`` itself."""
    client = Client(
        url, token=token, identity=identity, audience=coordinator_audience(team), timeout=timeout
    )
    if known_as is not None:
        client.audience = bound_audience(coordinator_audience(team), origin_of(known_as))
    return client


class SignedAuth(httpx.Auth):
    """Signs each raw httpx request with ``identity`` for ``audience`` (a coordinator's bound
    to the origin the request goes to, as a member's client does)."""

    requires_request_body = True

    def __init__(self, identity: Identity, audience: str) -> None:
        self.identity = identity
        self.audience = audience

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        headers = sign_request(
            self.identity, request.method, request.url.raw_path.decode("ascii"),
            request.content, client_audience(self.audience, str(request.url)),
        )  # fmt: skip
        request.headers.update(headers)
        yield request


def make_admin(coordinator: "Coordinator", identity: Identity, name: str = "admin") -> RosterMember:
    """Make ``identity`` the first admin of ``coordinator``, as its bootstrap invite did before
    rosters were signed: the roster stays the coordinator's table, which the admins' routes
    change (a bootstrap code now starts a signed roster: tests/coordinator/test_signed_roster.py).
    """
    made = coordinator.membership.bootstrap(name)
    assert made is not None, "the roster has a member already"
    secret, _ = made
    entry = RosterMember(
        name=name, key=identity.public_key_text, key_id=identity.key_id, admin=True,
        added_at=coordinator.membership._clock(),
    )  # fmt: skip
    with coordinator.store.transaction() as tx:
        _members.use_invite(tx, secret_digest(secret), entry.added_at)
        _members.add_member(tx, entry)
    return entry


def add_member(
    coordinator: "Coordinator",
    admin: Identity,
    identity: Identity,
    name: str,
    *,
    is_admin: bool = False,
) -> RosterMember:
    """Put ``identity`` on the roster as ``name``, added by the admin ``admin``."""
    request = MemberAdd(name=name, key=identity.public_key_text, admin=is_admin)
    return coordinator.membership.add(caller(admin), request)
