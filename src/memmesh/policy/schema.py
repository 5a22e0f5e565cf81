"""The JSON Schema of ``team.yaml``, generated from the policy structs (docs/team.schema.json)."""

import json
from typing import Any

import msgspec

from memmesh.policy.config import Policy

__all__ = ["policy_schema", "policy_schema_text"]


def policy_schema() -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) that editors can validate ``team.yaml`` against."""
    from memmesh.embed import EMBEDDER_NAMES  # numpy: only where the schema is written

    schema: dict[str, Any] = msgspec.json.schema(Policy)
    properties = schema["$defs"]["Policy"]["properties"]
    # A name the loader checks against the embedders this memmesh has.
    properties["embedder"]["enum"] = list(EMBEDDER_NAMES)
    # One URL, or the URLs of the coordinator's processes, which the loader splits into the
    # first and the others (no key of the file: memmesh.policy.config).
    del properties["coordinator_fallbacks"]
    urls = {"type": "array", "items": {"type": "string"}, "minItems": 1}
    properties["coordinator"]["anyOf"].insert(1, urls)
    for definition in schema.get("$defs", {}).values():
        # Every definition is a policy struct, and the loader refuses unknown keys.
        definition["additionalProperties"] = False
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "memmesh team.yaml"
    return schema


def policy_schema_text() -> str:
    """The schema as the exact text of docs/team.schema.json."""
    return json.dumps(policy_schema(), indent=2, sort_keys=True) + "\n"
