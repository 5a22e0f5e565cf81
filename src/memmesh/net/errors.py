"""Errors of the HTTP layer, on both sides of the wire.

MemmeshError
└── NetError
    ├── BadRequest            400: a body or parameter is malformed (names the field)
    ├── Unauthorized          401: missing or wrong token (never says which)
    │   └── WrongAudience     401: signed, but for another daemon (says which this one is)
    │       └── OutdatedAudience  401: signed the old way, for any coordinator of the team
    ├── Forbidden             403: signed by a key the service refuses
    ├── NotFound              404
    ├── RequestTimeout        408: the body arrived too slowly
    ├── Conflict              409: a stale version or a retraction by another key
    ├── BodyTooLarge          413
    ├── Overloaded            503: too many requests at once
    ├── Unavailable           503: the daemon cannot answer for now (says why)
    ├── Unreachable           client side: nothing answered (exit 4)
    │   ├── PinMismatch       client side: not the pinned certificate; nothing sent (exit 4)
    │   └── Timeout           client side: no answer within the client's timeout (exit 4)
    ├── BadResponse           client side: the answer broke the protocol
    ├── BadUrl                400: a URL from outside is unsound (names what is wrong)
    ├── Refused               client side: the service answered with an error status
    ├── InsecureUrl           client side: plain http beyond loopback, not allowed (exit 3)
    ├── CertificateUnusable   server side: a TLS certificate or key cannot be used
    ├── InsecureBind          server side: plain http beyond loopback, but no team token
    ├── CannotListen          server side: the address cannot be bound
    └── WorkerDied            server side: a worker process stopped by itself
"""

from memmesh.errors import ExitCode, MemmeshError

__all__ = [
    "BadRequest",
    "BadResponse",
    "BadUrl",
    "BodyTooLarge",
    "CannotListen",
    "CertificateUnusable",
    "Conflict",
    "Forbidden",
    "InsecureBind",
    "InsecureUrl",
    "NetError",
    "NotFound",
    "OutdatedAudience",
    "Overloaded",
    "PinMismatch",
    "Refused",
    "RequestTimeout",
    "Timeout",
    "Unauthorized",
    "Unavailable",
    "Unreachable",
    "WorkerDied",
    "WrongAudience",
]


class NetError(MemmeshError):
    """A request or response could not be handled."""


class BadRequest(NetError):
    """The request is malformed; the message names the field."""

    status = 400


class Unauthorized(NetError):
    """Missing or wrong bearer token, or no valid signature for this service; deliberately
    vague."""

    status = 401

    def __init__(self) -> None:
        super().__init__(
            "not accepted: a missing or wrong team token, or a request not signed by a key for "
            "this service within the last 2 minutes"
        )


class WrongAudience(Unauthorized):
    """A request signed for another daemon than the one it reached (says which this one is).

    ``got`` is the audience it was signed for, ``accepted`` the ones this daemon takes.
    """

    def __init__(self, got: str, accepted: list[str], *, message: str = "") -> None:
        NetError.__init__(
            self,
            message
            or (
                f"this request is signed for {got}, and this daemon is "
                f"{' or '.join(accepted) or 'none of those'}: the member's team.yaml names "
                "another coordinator (address or pin) than the one it reached, or a coordinator "
                "behind a reverse proxy was started without --url, the address members use"
            ),
        )
        self.got = got
        self.accepted = accepted


class OutdatedAudience(WrongAudience):
    """A request signed for any coordinator of its team, as older memmesh versions sign.

    Requests are bound to one coordinator now: the sender's memmesh must be upgraded.
    """

    def __init__(self, got: str, accepted: list[str]) -> None:
        super().__init__(
            got,
            accepted,
            message=f"this request is signed for {got}, any coordinator of that team, as older "
            "memmesh versions sign; this coordinator takes only requests signed for itself: "
            "upgrade memmesh on the computer that sent it",
        )


class Forbidden(NetError):
    """The signer is not allowed (outside the roster, or not the item's author)."""

    status = 403


class Revoked(Forbidden):
    """The signer's key was revoked from the team, and stays refused from then on.

    ``when`` is the time of the revocation, as the service words it.
    """

    def __init__(self, when: str) -> None:
        super().__init__(f"this key was revoked on {when}")
        self.when = when


class NotFound(NetError):
    """No such route or object."""

    status = 404


class RequestTimeout(NetError):
    """The request body did not arrive within the read deadline."""

    status = 408

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the request body did not arrive within {seconds:g}s")


class Conflict(NetError):
    """The request contradicts what the service holds (a stale version, say)."""

    status = 409


class BodyTooLarge(NetError):
    """The request body is over the route's limit."""

    status = 413

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is larger than {limit} bytes")
        self.limit = limit


class Overloaded(NetError):
    """Too many requests at once; try again shortly."""

    status = 503


class Unavailable(NetError):
    """The daemon cannot answer for now; the message says why and what would mend it."""

    status = 503


class Unreachable(NetError):
    """Nothing answered (connection refused, timed out, DNS failed)."""

    exit_code = ExitCode.UNREACHABLE


class Timeout(Unreachable):
    """The service did not connect, accept the request or answer within the client's timeout."""


class BadResponse(NetError):
    """The service answered, but not in the protocol's shape."""


class BadUrl(NetError):
    """A coordinator or peer URL that memmesh will not contact; ``problem`` says why."""

    status = 400

    def __init__(self, url: str, problem: str) -> None:
        # Hostile text may be long or hold control characters: show a short, escaped excerpt.
        shown = url if len(url) <= 100 else url[:100] + "..."
        super().__init__(f"{shown!r} is not a usable URL: {problem}")
        self.url = url
        self.problem = problem


class Refused(NetError):
    """The service answered with an error status, its error's ``error_code`` (the ``code`` of
    its error body, ``""`` when it had none) and message: act on the code, not the words."""

    def __init__(self, status: int, message: str, error_code: str = "") -> None:
        super().__init__(f"{message} (HTTP {status})")
        self.http_status = status
        self.error_code = error_code


class InsecureBind(NetError):
    """A daemon was asked to listen beyond loopback without a team token to demand."""

    def __init__(self, host: str) -> None:
        super().__init__(
            f"refusing to listen on {host} over plain http without a team token: serve https "
            "(the default beyond loopback), set the token variable, or listen on 127.0.0.1"
        )
        self.host = host


class CannotListen(NetError):
    """The daemon's address cannot be bound (in use, not this machine's, not permitted)."""

    def __init__(self, host: str, port: int, reason: str) -> None:
        super().__init__(f"cannot listen on {host}:{port}: {reason}")
        self.host = host
        self.port = port
        self.reason = reason


class WorkerDied(NetError):
    """One of a daemon's worker processes stopped by itself, so all of them were stopped."""

    def __init__(self) -> None:
        super().__init__("a worker process stopped unexpectedly; all were stopped")


class PinMismatch(Unreachable):
    """The service presented a certificate other than the pinned one: nothing was sent."""

    def __init__(self, where: str, expected: str, got: str) -> None:
        super().__init__(
            f"{where} presented a certificate other than the pinned one (expected {expected}, "
            f"got {got}): nothing was sent to it. If its certificate was replaced on purpose, "
            "put the new pin in team.yaml"
        )
        self.expected = expected
        self.got = got


class InsecureUrl(NetError):
    """Plain ``http://`` to something beyond loopback, without ``insecure_http: true``."""

    exit_code = ExitCode.REFUSED

    def __init__(self, url: str) -> None:
        super().__init__(
            f"refusing to send anything to {url} over plain http: beyond this machine anyone "
            "on the way could read and change it. Use https (the coordinator makes a "
            "certificate and prints its pin), or write insecure_http: true in team.yaml"
        )
        self.url = url


class CertificateUnusable(NetError):
    """A TLS certificate or key file cannot be read or does not belong together."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"the TLS certificate {path} cannot be used: {reason}")
        self.path = path
        self.reason = reason
