"""The client side of the protocol: timeouts, a response size cap, typed responses, and each
request signed by the member for the daemon it is meant for (:mod:`memmesh.net.signing`).

A service served by several processes at several addresses (a coordinator on one shared
database) is reached at one of them: the client tries them in order, as libpq tries a
multi-host connection string's hosts, and moves on to the next when one cannot be reached
(connection refused, no answer in time, the connection dropped before the answer). Each
attempt is signed afresh (a new nonce: the processes share the nonces they have seen, and would
refuse the same signed request twice), always for the service's one name. Sending a request
again after its connection dropped is safe only because the service's writes are idempotent
(a resent publish, retraction or tally is answered ``duplicate``).
"""

import functools
import ssl
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import httpx
import msgspec

from memmesh.net.audience import client_audience
from memmesh.net.errors import BadResponse, BadUrl, Refused, Timeout, Unreachable
from memmesh.net.signing import sign_request
from memmesh.net.wire import encode
from memmesh.registry.identity import Identity

__all__ = ["DEFAULT_MAX_RESPONSE", "DEFAULT_TIMEOUT", "Client"]

DEFAULT_TIMEOUT = 5.0
DEFAULT_MAX_RESPONSE = 8 * 1024 * 1024

T = TypeVar("T")


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context per process: building one loads the whole CA bundle, which
    cost tens of milliseconds per client and dominated recall-team's latency."""
    return ssl.create_default_context()


class _ErrorDetail(msgspec.Struct, frozen=True):
    code: str
    message: str


class _ErrorBody(msgspec.Struct, frozen=True):
    error: _ErrorDetail


class Client:
    """Talks to one memmesh service.

    * ``base_url`` - the service, e.g. ``http://127.0.0.1:8400``: its name, and its first
      address.
    * ``fallbacks`` - further addresses of the same service (its other processes), tried in
      order, from the one that answered last, when one cannot be reached; the one answering
      is :attr:`address`.
    * ``token`` - the team token, sent as a bearer token (``None`` sends none).
    * ``timeout`` - seconds for connecting and for each read; waiting longer raises
      :class:`Timeout` (or tries the next address).
    * ``max_response`` - bytes of response body read at most; more is a :class:`BadResponse`.
    * ``identity`` and ``audience`` - the member who signs every request, and for which daemon
      (see :mod:`memmesh.net.signing`); without an identity nothing is signed. A
      coordinator's audience is bound to the coordinator reached: to ``pin`` when given (the
      pin of its certificate that the member holds), else to the origin of ``base_url``
      (:func:`~memmesh.net.audience.client_audience`), whichever address a request goes to.
    * ``tls`` - the TLS context for an ``https`` service (a pinned one from
      :mod:`memmesh.net.tls`), or what makes one for an address, called before the first
      connection there (its :class:`Unreachable` counts as that address's); ``None`` trusts
      the system's certificate authorities.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None,
        timeout: float = DEFAULT_TIMEOUT,
        max_response: int = DEFAULT_MAX_RESPONSE,
        transport: httpx.BaseTransport | None = None,
        identity: Identity | None = None,
        audience: str = "",
        pin: str = "",
        tls: ssl.SSLContext | Callable[[str], ssl.SSLContext] | None = None,
        fallbacks: Sequence[str] = (),
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.addresses = (self.base_url, *(url.rstrip("/") for url in fallbacks))
        self.max_response = max_response
        self.identity = identity
        self.audience = client_audience(audience, self.base_url, pin) if identity else audience
        self._headers = {"authorization": f"Bearer {token}"} if token else {}
        self._timeout = timeout
        self._transport = transport
        self._tls = tls
        self._current = 0
        self._opened: dict[str, httpx.Client] = {}
        self._opening = threading.Lock()

    @property
    def address(self) -> str:
        """The address requests go to first: the one that answered last."""
        return self.addresses[self._current]

    def close(self) -> None:
        """Close the connection pools."""
        with self._opening:
            opened, self._opened = list(self._opened.values()), {}
        for http in opened:
            http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def post(self, path: str, body: Any, response: type[T]) -> T:
        """POST ``body`` as JSON and decode the answer as ``response``."""
        return self._call("POST", path, response, content=encode(body))

    def get(self, path: str, response: type[T]) -> T:
        """GET ``path`` and decode the answer as ``response``."""
        return self._call("GET", path, response)

    def _call(self, method: str, path: str, response: type[T], content: bytes | None = None) -> T:
        failures: list[Unreachable] = []
        start = self._current
        for step in range(len(self.addresses)):
            index = (start + step) % len(self.addresses)
            try:
                status, body = self._send(self.addresses[index], method, path, content)
            except Unreachable as exc:
                failures.append(exc)
                continue
            self._current = index
            return self._decoded(self.addresses[index], path, status, body, response)
        raise _none_answered(failures)

    def _send(self, url: str, method: str, path: str, content: bytes | None) -> tuple[int, bytes]:
        """The status and body ``url`` answers the request with, signed now."""
        http = self._http(url)
        headers = {"content-type": "application/json"} if content is not None else {}
        if self.identity is not None:
            # The path the service sees, which is what is signed (a base URL may have a prefix).
            prefix = http.base_url.raw_path.decode("ascii").rstrip("/")
            signed = sign_request(
                self.identity, method, prefix + path, content or b"", self.audience
            )
            headers.update(signed)
        try:
            with http.stream(method, path, content=content, headers=headers) as answer:
                return answer.status_code, self._read(answer, url)
        except httpx.TimeoutException:
            raise Timeout(f"{url} did not answer in time") from None
        except httpx.TransportError as exc:
            raise Unreachable(f"{url} is unreachable: {exc}") from None
        except (httpx.InvalidURL, UnicodeError) as exc:  # a host httpx cannot encode
            raise BadUrl(url, str(exc)) from None

    def _http(self, url: str) -> httpx.Client:
        """The connection pool of ``url``, opened at its first request."""
        with self._opening:
            http = self._opened.get(url)
        if http is not None:
            return http
        tls = self._tls(url) if callable(self._tls) else self._tls
        http = httpx.Client(
            base_url=url,
            headers=self._headers,
            timeout=httpx.Timeout(self._timeout),
            transport=self._transport,
            follow_redirects=False,
            verify=tls or _tls_context(),
        )
        with self._opening:
            kept = self._opened.setdefault(url, http)
        if kept is not http:  # another thread opened it meanwhile
            http.close()
        return kept

    def _decoded(self, url: str, path: str, status: int, body: bytes, response: type[T]) -> T:
        if status != 200:
            try:
                error = msgspec.json.decode(body, type=_ErrorBody).error
            except msgspec.MsgspecError:
                error = _ErrorDetail("", "an error without a readable explanation")
            raise Refused(status, error.message[:300], error.code[:64])
        try:
            return msgspec.json.decode(body, type=response, strict=True)
        except msgspec.MsgspecError as exc:
            raise BadResponse(f"{url}{path} answered out of protocol: {exc}") from None

    def _read(self, answer: httpx.Response, url: str) -> bytes:
        """The body, refusing to read more than the cap."""
        too_large = f"{url} sent a response larger than {self.max_response} bytes"
        declared = answer.headers.get("content-length", "")
        if declared.isascii() and declared.isdigit() and int(declared) > self.max_response:
            raise BadResponse(too_large)
        chunks: list[bytes] = []
        size = 0
        for chunk in answer.iter_bytes():
            size += len(chunk)
            if size > self.max_response:
                raise BadResponse(too_large)
            chunks.append(chunk)
        return b"".join(chunks)


def _none_answered(failures: list[Unreachable]) -> Unreachable:
    """The error of a request no address answered: the one address's own, else one naming
    what happened at each (a :class:`Timeout` when none answered in time)."""
    if len(failures) == 1:
        return failures[0]
    told = "; ".join(failure.message for failure in failures)
    kind = Timeout if all(isinstance(f, Timeout) for f in failures) else Unreachable
    return kind(f"none of the addresses tried answered: {told}")
