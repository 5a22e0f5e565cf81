"""The commented ``team.yaml`` that `mem team init` and `mem team join` start from: it writes
out every choice (kinds, floor, projects, never rules, auto_sync) and shares nothing until
edited, or only the kinds it was given."""

import json
from collections.abc import Sequence

__all__ = ["policy_template"]


def policy_template(
    *,
    name: str,
    team: str,
    coordinator: str | None,
    kinds: Sequence[str] = (),
    embedder: str | None = None,
) -> str:
    """A valid, commented policy for a new member, sharing ``kinds`` (none by default), whose
    team uses ``embedder`` (default: :data:`memmesh.embed.DEFAULT_EMBEDDER`, written out)."""
    if embedder is None:
        from memmesh.embed import DEFAULT_EMBEDDER  # numpy: only when a template is written

        embedder = DEFAULT_EMBEDDER
    coordinator_line = (
        f"coordinator: {json.dumps(coordinator)}"
        if coordinator
        else "# coordinator: http://team-host:8400   # absent = nothing ever leaves this laptop"
    )
    return f"""\
# memmesh team policy. Nothing leaves this laptop unless you publish it on purpose
# (`mem team publish ID`) AND this file allows it. Every choice is written out below; a key
# left out takes its default, and no default shares anything. `mem team policy check` says
# in one line what this file allows. Reference: docs/policy.md
version: 1
team: {json.dumps(team)}
identity:
  name: {json.dumps(name)}

# The team host. While it is absent, nothing is ever published or sent (the kill switch).
# `mem team join CODE` writes it, with the pin of its TLS certificate and its own public key
# (which signs retraction receipts); both come from the join code and the coordinator.
{coordinator_line}
# coordinator_pin: sha256:<64 hex digits, as the coordinator prints>
# coordinator_key: <the coordinator's public key>
# Plain http:// beyond this machine is refused: anyone on the way could read and change it.
# insecure_http: false

# The environment variable holding the shared team token.
token_env: MEM_TEAM_TOKEN

# The embedder of the team: every member's store and the coordinator's use it, so that
# everyone's vectors are comparable. Changing it: docs/operations.md ("Changing the team's
# embedder"); `mem team status` says when your store uses another.
embedder: {json.dumps(embedder)}

# Teammates' peer daemons to ask directly, and LAN discovery (zeroconf).
peers: []
discovery: false

# The team's roster is the coordinator's (`mem team members`). This local list, when set,
# also drops items signed by other keys; `mem team members add --from-policy` copies it there.
# members:
#   - name: bob
#     key: <bob's public key from `mem team status`>
members: []

share:
  # Kinds eligible for publishing. Until you list some, nothing is eligible.
  kinds: {json.dumps(list(kinds))}
  # Publish only items reinforced at least this many times.
  min_reinforcements: 0
  # Per-project rules: false = never share that project; or override kinds / the floor.
  projects: {{}}
  #   billing: false
  #   web: {{kinds: [decision, gotcha], min_reinforcements: 1}}

# Never rules add to the built-in secret detectors, which are always on.
never:
  tags: [private, secret, personal]
  patterns: []

# Push to the coordinator at once after every publish, retract, forget and revise (and
# retract there what a tightened policy no longer allows); off: at `mem team sync`.
auto_sync: false
"""
