"""Joining a team (`mem team init`): the member's identity key and a team.yaml to start from."""

from collections.abc import Sequence
from pathlib import Path

import msgspec

from memmesh.policy import POLICY_FILENAME, policy_template
from memmesh.registry import create_identity

__all__ = ["Joined", "join_team"]


class Joined(msgspec.Struct, frozen=True, kw_only=True):
    """A new member: their key, and the team.yaml at ``policy_path``.

    ``policy_written`` is false when a team.yaml was there already (it is never replaced).
    """

    member_id: str
    public_key: str
    name: str
    team: str
    policy_path: Path
    policy_written: bool


def join_team(
    home: Path,
    *,
    name: str,
    team: str = "default",
    coordinator: str | None = None,
    kinds: Sequence[str] = (),
) -> Joined:
    """Create the member's identity key in ``home`` and, unless one exists, a commented
    team.yaml for ``team`` that shares ``kinds`` (none by default) through ``coordinator``.

    Raises :class:`IdentityExists` (and writes nothing) when ``home`` already has a key.
    """
    identity = create_identity(home)
    policy_path = home / POLICY_FILENAME
    wrote = False
    if not policy_path.exists():
        policy_path.write_text(
            policy_template(name=name, team=team, coordinator=coordinator, kinds=kinds),
            encoding="utf-8",
        )
        wrote = True
    return Joined(
        member_id=identity.key_id,
        public_key=identity.public_key_text,
        name=name,
        team=team,
        policy_path=policy_path,
        policy_written=wrote,
    )
