"""Signed requests: every request a member sends carries its key's signature.

A request is signed over one canonical text: a version tag, the method, the path, the
*audience* (which daemon it is meant for: :func:`coordinator_audience` bound to one coordinator,
or :func:`peer_audience`; see :mod:`memmesh.net.audience`), the time, a random nonce and the
SHA-256 of the body. The five headers of :data:`SIGNED_HEADERS` carry the key, the time, the
nonce, the audience and the signature.

A daemon checks a request with a :class:`RequestVerifier` made for its own audience: the
signature must hold for the named key, the time be within :data:`REPLAY_WINDOW` of its clock,
the audience be its own (a request signed for a teammate's peer, or for another coordinator of
the same team name, is worthless here: 401 ``wrong_audience``, or ``outdated_audience`` for the
unbound coordinator audience older memmesh versions sign), and the nonce unseen in that window
(a captured request cannot be sent twice). Any other failure is the same vague 401; whether the
key may ask at all (the roster) is the daemon's business, decided on the :class:`Caller` this
gives.

The harness checks the signature (:meth:`RequestVerifier.check`), lets the daemon admit the
signer, and only then remembers the nonce (:meth:`RequestVerifier.remember`): the nonces of
the members a daemon admits go to its :class:`~memmesh.net.nonces.NonceStore` (the daemons keep
them in a file beside their data, shared by every worker process and kept across restarts);
everyone else's are kept apart, in this process, so that a stranger's flood of fresh signed
requests (which passes the signature check, then is refused) fills only the strangers' share
and never turns a member away with 503.
"""

import base64
import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterable

import msgspec

from memmesh.net.audience import arrival_origins, bound_audience, is_bound
from memmesh.net.errors import OutdatedAudience, Unauthorized, WrongAudience
from memmesh.net.nonces import MemoryNonces, NonceStore
from memmesh.registry.errors import BadSignature
from memmesh.registry.identity import Identity, key_id, public_key_from_text, verify_signature

__all__ = [
    "AUDIENCE_HEADER",
    "KEY_HEADER",
    "MAX_NONCES",
    "NONCE_HEADER",
    "PRUNE_EVERY",
    "REPLAY_WINDOW",
    "SIGNATURE_HEADER",
    "SIGNED_HEADERS",
    "TIME_HEADER",
    "Caller",
    "Checked",
    "RequestVerifier",
    "coordinator_audience",
    "peer_audience",
    "sign_request",
]

KEY_HEADER = "x-memmesh-key"
TIME_HEADER = "x-memmesh-time"
NONCE_HEADER = "x-memmesh-nonce"
AUDIENCE_HEADER = "x-memmesh-audience"
SIGNATURE_HEADER = "x-memmesh-signature"
SIGNED_HEADERS = (KEY_HEADER, TIME_HEADER, NONCE_HEADER, AUDIENCE_HEADER, SIGNATURE_HEADER)

# Seconds a request's time may differ from the daemon's clock (laptop clocks drift).
REPLAY_WINDOW = 120.0
# Nonces remembered at once in memory; a flood of fresh signed requests beyond it gets 503,
# never a forgotten nonce.
MAX_NONCES = 200_000
# Seconds between two prunings of the nonces past the window.
PRUNE_EVERY = 30.0
_TAG = b"memmesh-request/1"


class Caller(msgspec.Struct, frozen=True, kw_only=True):
    """Who signed a request: the public key (as in envelopes) and its member id."""

    key: str
    key_id: str


class Checked(msgspec.Struct, frozen=True, kw_only=True):
    """A request whose signature holds, before its nonce is remembered: who signed it, its
    nonce and the time it was checked at."""

    caller: Caller
    nonce: str
    at: float


def coordinator_audience(team: str) -> str:
    """The audience of requests meant for a coordinator of ``team``: on the wire, bound to one
    coordinator (:func:`~memmesh.net.audience.client_audience`, which the client applies)."""
    return f"coordinator:{team}"


def peer_audience(peer_key_id: str) -> str:
    """The audience of requests meant for the peer daemon of the member ``peer_key_id``."""
    return f"peer:{peer_key_id}"


def _message(method: str, path: str, audience: str, stamp: str, nonce: str, body: bytes) -> bytes:
    digest = hashlib.sha256(body).hexdigest()
    lines = (method.upper(), path, audience, stamp, nonce, digest)
    return _TAG + b"\n" + "\n".join(lines).encode("utf-8")


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def sign_request(
    identity: Identity,
    method: str,
    path: str,
    body: bytes,
    audience: str,
    *,
    now: float | None = None,
    nonce: str | None = None,
) -> dict[str, str]:
    """The headers that sign ``method path`` with ``body`` for ``audience``."""
    stamp = str(int(time.time() if now is None else now))
    nonce = nonce or os.urandom(16).hex()
    signature = identity.sign(_message(method, path, audience, stamp, nonce, body))
    return {
        KEY_HEADER: identity.public_key_text,
        TIME_HEADER: stamp,
        NONCE_HEADER: nonce,
        AUDIENCE_HEADER: audience,
        SIGNATURE_HEADER: _b64(signature),
    }


class RequestVerifier:
    """Checks signed requests meant for ``audience``.

    * ``names`` - for a coordinator's audience, the names it is bound to here (pins and
      origins, see :mod:`memmesh.net.audience`); with no origin among them, the address each
      request reached names it too.
    * ``nonces`` - where the admitted members' nonces are kept (default: in this process).
    * ``window`` - seconds of clock difference allowed either way (:data:`REPLAY_WINDOW`).
    * ``clock`` - the time now, in seconds.
    * ``max_nonces`` - nonces remembered at once in memory (:data:`MAX_NONCES`), for the
      members the daemon admits (unless ``nonces`` keeps them) and, as many again, for
      everyone else.
    """

    def __init__(
        self,
        audience: str,
        *,
        names: Iterable[str] = (),
        nonces: NonceStore | None = None,
        window: float = REPLAY_WINDOW,
        clock: Callable[[], float] = time.time,
        max_nonces: int = MAX_NONCES,
    ) -> None:
        self.audience = audience
        self.names = tuple(dict.fromkeys(names))
        self.window = window
        self._clock = clock
        # A stamp may lie up to a window ahead, and is accepted a window behind.
        self._keep_for = 2 * window
        self._admitted = nonces or MemoryNonces(max_nonces, self._keep_for)
        self._others = MemoryNonces(max_nonces, self._keep_for)
        self._pruned_at = clock()
        self._pruning = threading.Lock()

    def audiences(self, scheme: str = "", server: tuple[str, int] | None = None) -> list[str]:
        """The audiences this verifier takes from a request that reached the listening
        address ``server`` by ``scheme`` (both unknown: only its own names)."""
        if not is_bound(self.audience):
            return [self.audience]
        names = list(self.names)
        if not any("://" in name for name in names):
            names += arrival_origins(scheme, server)
        return [bound_audience(self.audience, name) for name in dict.fromkeys(names)]

    def verify(
        self, method: str, path: str, headers: Iterable[tuple[bytes, bytes]], body: bytes
    ) -> Caller:
        """:meth:`check`, then :meth:`remember` the request as an admitted member's."""
        checked = self.check(method, path, headers, body)
        self.remember(checked)
        return checked.caller

    def check(
        self,
        method: str,
        path: str,
        headers: Iterable[tuple[bytes, bytes]],
        body: bytes,
        *,
        scheme: str = "",
        server: tuple[str, int] | None = None,
    ) -> Checked:
        """The signer of a request with these raw ``headers`` that reached ``server`` by
        ``scheme`` (see :meth:`audiences`); :class:`Unauthorized` unless it is signed and
        fresh, :class:`WrongAudience` when it is signed for another daemon. Its nonce is not
        remembered yet."""
        values = _signed_values(headers)
        if values is None:
            raise Unauthorized()
        key_text, stamp, nonce, audience, signature = values
        if not (stamp.isascii() and stamp.isdigit() and len(stamp) <= 12):
            raise Unauthorized()
        if not (len(nonce) == 32 and all(c in "0123456789abcdef" for c in nonce)):
            raise Unauthorized()
        now = self._clock()
        if abs(now - int(stamp)) > self.window:
            raise Unauthorized()
        try:
            public_key = public_key_from_text(key_text)
            raw_signature = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))
            message = _message(method, path, audience, stamp, nonce, body)
            verify_signature(public_key, raw_signature, message)
        except (BadSignature, ValueError):
            raise Unauthorized() from None
        # Only a signed request learns which daemon this is.
        accepted = self.audiences(scheme, server)
        if audience not in accepted:
            if audience == self.audience and is_bound(audience):
                raise OutdatedAudience(audience, accepted)
            raise WrongAudience(audience, accepted)
        caller = Caller(key=key_text, key_id=key_id(public_key))
        return Checked(caller=caller, nonce=nonce, at=now)

    def remember(self, checked: Checked, *, admitted: bool = True) -> None:
        """Record the checked request's nonce (:class:`Unauthorized` if it was seen in the
        window: a replay), among the ``admitted`` members' or everyone else's;
        :class:`~memmesh.net.errors.Overloaded` when that share is full of fresh ones."""
        store = self._admitted if admitted else self._others
        if not store.remember(checked.caller.key, checked.nonce, checked.at):
            raise Unauthorized()
        self._prune(checked.at)

    def _prune(self, now: float) -> None:
        """Forget the nonces past the window, every :data:`PRUNE_EVERY` seconds at most."""
        if now - self._pruned_at < PRUNE_EVERY or not self._pruning.acquire(blocking=False):
            return
        try:
            self._pruned_at = now
            for store in (self._admitted, self._others):
                store.prune(now - self._keep_for)
        finally:
            self._pruning.release()


def _signed_values(
    headers: Iterable[tuple[bytes, bytes]],
) -> tuple[str, str, str, str, str] | None:
    """The five signed headers' values, or ``None`` if one is missing, repeated or not ASCII."""
    wanted = {name.encode(): name for name in SIGNED_HEADERS}
    found: dict[str, str] = {}
    for raw_name, raw_value in headers:
        name = wanted.get(raw_name.lower())
        if name is None:
            continue
        if name in found or len(raw_value) > 512 or not raw_value.isascii():
            return None
        found[name] = raw_value.decode("ascii").strip()
    if len(found) != len(SIGNED_HEADERS):
        return None
    key, stamp, nonce, audience, signature = (found[name] for name in SIGNED_HEADERS)
    return key, stamp, nonce, audience, signature
