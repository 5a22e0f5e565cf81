"""OpenAPI documents generated from the endpoints' msgspec structs."""

from collections.abc import Sequence
from typing import Any

import msgspec

from memmesh.net.app import PROTOCOL_HEADER, Endpoint
from memmesh.net.wire import PROTOCOL_VERSION

__all__ = ["openapi_document"]

_ERRORS = {
    "400": "Malformed body: the message names the field.",
    "401": "Missing or wrong bearer token.",
    "408": "The body arrived too slowly.",
    "413": "The body is over this route's limit.",
    "503": "Too many requests at once.",
}


def openapi_document(title: str, endpoints: Sequence[Endpoint]) -> dict[str, Any]:
    """An OpenAPI 3.1 document; schemas come straight from the request and response structs."""
    types: list[Any] = []
    for endpoint in endpoints:
        if endpoint.request is not None:
            types.append(endpoint.request)
        types.append(endpoint.response)
    _, components = msgspec.json.schema_components(
        types, ref_template="#/components/schemas/{name}"
    )
    paths: dict[str, Any] = {}
    for endpoint in endpoints:
        name = endpoint.response.__name__
        operation: dict[str, Any] = {
            "summary": endpoint.summary,
            "responses": {
                "200": {
                    "description": "OK",
                    "content": {
                        "application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}
                    },
                },
                **{code: {"description": text} for code, text in _ERRORS.items()},
            },
        }
        if endpoint.path == "/healthz":
            operation["security"] = []
        if endpoint.request is not None:
            operation["requestBody"] = {
                "required": True,
                "description": f"At most {endpoint.limit.max_bytes} bytes.",
                "content": {
                    "application/json": {
                        "schema": {"$ref": f"#/components/schemas/{endpoint.request.__name__}"}
                    }
                },
            }
        paths[endpoint.path] = {endpoint.method.lower(): operation}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": title,
            "version": PROTOCOL_VERSION,
            "description": f"Every response carries the `{PROTOCOL_HEADER}` header.",
        },
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"team_token": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"team_token": []}],
    }
