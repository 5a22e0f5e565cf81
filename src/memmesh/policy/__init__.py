"""The team policy: ``team.yaml`` loaded fail-closed, the decision per item, secret detectors."""

from memmesh.policy.config import POLICY_FILENAME, Policy, load_policy, parse_policy
from memmesh.policy.decide import Decision, decide
from memmesh.policy.edit import update_policy
from memmesh.policy.errors import PolicyError, PolicyInvalid, PolicyMissing, PublishRefused
from memmesh.policy.secrets import Finding, find_secrets
from memmesh.policy.template import policy_template

__all__ = [
    "POLICY_FILENAME",
    "Decision",
    "Finding",
    "Policy",
    "PolicyError",
    "PolicyInvalid",
    "PolicyMissing",
    "PublishRefused",
    "decide",
    "find_secrets",
    "load_policy",
    "parse_policy",
    "policy_template",
    "update_policy",
]
