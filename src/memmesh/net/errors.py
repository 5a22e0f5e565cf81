"""Errors of the HTTP layer, on both sides of the wire.

MemmeshError
└── NetError
    ├── BadRequest            400: a body or parameter is malformed (names the field)
    ├── Unauthorized          401: missing or wrong token (never says which)
    ├── Forbidden             403: signed by a key the service refuses
    ├── NotFound              404
    ├── RequestTimeout        408: the body arrived too slowly
    ├── Conflict              409: a stale version or a retraction by another key
    ├── BodyTooLarge          413
    ├── Overloaded            503: too many requests at once
    ├── Unreachable           client side: nothing answered (exit 4)
    │   └── Timeout           client side: no answer within the client's timeout (exit 4)
    ├── BadResponse           client side: the answer broke the protocol
    └── Refused               client side: the service answered with an error status
"""

from memmesh.errors import MemmeshError

__all__ = [
    "BadRequest",
    "BadResponse",
    "BodyTooLarge",
    "Conflict",
    "Forbidden",
    "NetError",
    "NotFound",
    "Overloaded",
    "Refused",
    "RequestTimeout",
    "Timeout",
    "Unauthorized",
    "Unreachable",
]


class NetError(MemmeshError):
    """A request or response could not be handled."""

    code = "error"


class BadRequest(NetError):
    """The request is malformed; the message names the field."""

    status = 400
    code = "bad_request"


class Unauthorized(NetError):
    """Missing or wrong bearer token; deliberately vague."""

    status = 401
    code = "unauthorized"

    def __init__(self) -> None:
        super().__init__("missing or invalid token")


class Forbidden(NetError):
    """The signer is not allowed (outside the roster, or not the item's author)."""

    status = 403
    code = "forbidden"


class NotFound(NetError):
    """No such route or object."""

    status = 404
    code = "not_found"


class RequestTimeout(NetError):
    """The request body did not arrive within the read deadline."""

    status = 408
    code = "request_timeout"

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the request body did not arrive within {seconds:g}s")


class Conflict(NetError):
    """The request contradicts what the service holds (a stale version, say)."""

    status = 409
    code = "conflict"


class BodyTooLarge(NetError):
    """The request body is over the route's limit."""

    status = 413
    code = "body_too_large"

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is larger than {limit} bytes")
        self.limit = limit


class Overloaded(NetError):
    """Too many requests at once; try again shortly."""

    status = 503
    code = "overloaded"


class Unreachable(NetError):
    """Nothing answered (connection refused, timed out, DNS failed)."""

    exit_code = 4
    code = "unreachable"


class Timeout(Unreachable):
    """The service did not connect, accept the request or answer within the client's timeout."""

    code = "timeout"


class BadResponse(NetError):
    """The service answered, but not in the protocol's shape."""

    code = "bad_response"


class Refused(NetError):
    """The service answered with an error status and message."""

    code = "refused"

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{message} (HTTP {status})")
        self.http_status = status
