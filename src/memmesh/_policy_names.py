"""The name of the policy file and of the team token's default variable (memmesh.policy.config
uses them), importable without PyYAML, msgspec and the secret detectors: the `mem` parser and
the opening of every store read them."""

__all__ = ["DEFAULT_TOKEN_ENV", "POLICY_FILENAME"]

POLICY_FILENAME = "team.yaml"
DEFAULT_TOKEN_ENV = "MEM_TEAM_TOKEN"
