"""Write docs/team.schema.json, the JSON Schema of team.yaml, from the policy structs."""

from pathlib import Path

from memmesh.policy.schema import policy_schema_text

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "docs" / "team.schema.json"


def main() -> int:
    """Write the schema file."""
    SCHEMA_PATH.write_text(policy_schema_text(), encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
