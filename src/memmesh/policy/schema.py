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
    # A name the loader checks against the embedders this memmesh has.
    schema["$defs"]["Policy"]["properties"]["embedder"]["enum"] = list(EMBEDDER_NAMES)
    for definition in schema.get("$defs", {}).values():
        # Every definition is a policy struct, and the loader refuses unknown keys.
        definition["additionalProperties"] = False
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "memmesh team.yaml"
    return schema


def policy_schema_text() -> str:
    """The schema as the exact text of docs/team.schema.json."""
    return json.dumps(policy_schema(), indent=2, sort_keys=True) + "\n"
