"""The team policy: ``team.yaml`` loaded fail-closed, the decision per item, secret detectors
and redaction."""

from memmesh.policy.config import (
    EMBEDDER_WHEN_ABSENT,
    POLICY_FILENAME,
    Policy,
    load_policy,
    parse_policy,
)
from memmesh.policy.decide import Decision, decide
from memmesh.policy.edit import update_policy
from memmesh.policy.errors import PolicyError, PolicyInvalid, PolicyMissing, PublishRefused
from memmesh.policy.redaction import Redacted, redact
from memmesh.policy.secrets import Finding, find_secrets
from memmesh.policy.summary import policy_summary
from memmesh.policy.template import policy_template

__all__ = [
    "EMBEDDER_WHEN_ABSENT",
    "POLICY_FILENAME",
    "Decision",
    "Finding",
    "Policy",
    "PolicyError",
    "PolicyInvalid",
    "PolicyMissing",
    "PublishRefused",
    "Redacted",
    "decide",
    "find_secrets",
    "load_policy",
    "parse_policy",
    "policy_summary",
    "policy_template",
    "redact",
    "update_policy",
]
