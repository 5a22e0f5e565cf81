"""docs/team.schema.json is generated from the policy structs and cannot drift."""

from pathlib import Path

import yaml

from memmesh.embed import EMBEDDER_NAMES
from memmesh.policy import EMBEDDER_WHEN_ABSENT, policy_template
from memmesh.policy.schema import policy_schema, policy_schema_text

SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "team.schema.json"


def test_the_published_schema_is_what_the_structs_generate() -> None:
    assert SCHEMA.read_text(encoding="utf-8") == policy_schema_text(), (
        "docs/team.schema.json is out of date: run `python scripts/gen_policy_schema.py`"
    )


def test_the_schema_refuses_unknown_keys_everywhere() -> None:
    definitions = policy_schema()["$defs"]
    assert {"Policy", "Share", "Never", "Identity", "Member", "ProjectRule"} <= set(definitions)
    assert all(d["additionalProperties"] is False for d in definitions.values())


def test_every_key_of_the_template_is_in_the_schema() -> None:
    template = yaml.safe_load(policy_template(name="ada", team="acme", coordinator="http://h:1"))
    properties = policy_schema()["$defs"]["Policy"]["properties"]
    assert set(template) <= set(properties)


def test_the_schema_offers_only_the_known_embedders_and_says_the_absent_one() -> None:
    embedder = policy_schema()["$defs"]["Policy"]["properties"]["embedder"]
    assert embedder["enum"] == list(EMBEDDER_NAMES)
    assert embedder["default"] == EMBEDDER_WHEN_ABSENT
