"""The client side of the protocol: timeouts, a response size cap, typed responses, and each
request signed by the member for the daemon it is meant for (:mod:`memmesh.net.signing`)."""

import functools
import ssl
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

    * ``base_url`` - the service, e.g. ``http://127.0.0.1:8400``.
    * ``token`` - the team token, sent as a bearer token (``None`` sends none).
    * ``timeout`` - seconds for connecting and for each read; waiting longer raises
      :class:`Timeout`.
    * ``max_response`` - bytes of response body read at most; more is a :class:`BadResponse`.
    * ``identity`` and ``audience`` - the member who signs every request, and for which daemon
      (see :mod:`memmesh.net.signing`); without an identity nothing is signed. A
      coordinator's audience is bound to the coordinator reached: to ``pin`` when given (the
      pin of its certificate that the member holds), else to the origin of ``base_url``
      (:func:`~memmesh.net.audience.client_audience`).
    * ``tls`` - the TLS context for an ``https`` service (a pinned one from
      :mod:`memmesh.net.tls`); ``None`` trusts the system's certificate authorities.
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
        tls: ssl.SSLContext | None = None,
    ) -> None:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self.base_url = base_url.rstrip("/")
        self.max_response = max_response
        self.identity = identity
        self.audience = client_audience(audience, self.base_url, pin) if identity else audience
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout),
            transport=transport,
            follow_redirects=False,
            verify=tls or _tls_context(),
        )
        # The path the service sees, which is what is signed (a base URL may have a prefix).
        self._prefix = self._http.base_url.raw_path.decode("ascii").rstrip("/")

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

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
        headers = {"content-type": "application/json"} if content is not None else {}
        if self.identity is not None:
            signed = sign_request(
                self.identity, method, self._prefix + path, content or b"", self.audience
            )
            headers.update(signed)
        try:
            with self._http.stream(method, path, content=content, headers=headers) as answer:
                body = self._read(answer)
                status = answer.status_code
        except httpx.TimeoutException:
            raise Timeout(f"{self.base_url} did not answer in time") from None
        except httpx.TransportError as exc:
            raise Unreachable(f"{self.base_url} is unreachable: {exc}") from None
        except (httpx.InvalidURL, UnicodeError) as exc:  # a host httpx cannot encode
            raise BadUrl(self.base_url, str(exc)) from None
        if status != 200:
            try:
                error = msgspec.json.decode(body, type=_ErrorBody).error
            except msgspec.MsgspecError:
                error = _ErrorDetail("", "an error without a readable explanation")
            raise Refused(status, error.message[:300], error.code[:64])
        try:
            return msgspec.json.decode(body, type=response, strict=True)
        except msgspec.MsgspecError as exc:
            raise BadResponse(f"{self.base_url}{path} answered out of protocol: {exc}") from None

    def _read(self, answer: httpx.Response) -> bytes:
        """The body, refusing to read more than the cap."""
        declared = answer.headers.get("content-length", "")
        if declared.isascii() and declared.isdigit() and int(declared) > self.max_response:
            raise BadResponse(
                f"{self.base_url} sent a response larger than {self.max_response} bytes"
            )
        chunks: list[bytes] = []
        size = 0
        for chunk in answer.iter_bytes():
            size += len(chunk)
            if size > self.max_response:
                raise BadResponse(
                    f"{self.base_url} sent a response larger than {self.max_response} bytes"
                )
            chunks.append(chunk)
        return b"".join(chunks)
