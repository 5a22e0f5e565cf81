"""Joining a team (`mem team init`): the member's identity key and a team.yaml to start from."""

from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

import msgspec

from memmesh._files import private_folder, reason
from memmesh._urls import UnsoundUrl, normalised_url
from memmesh.local.errors import HomeNotCreated
from memmesh.policy import POLICY_FILENAME, parse_policy, policy_template
from memmesh.policy.config import write_policy_source
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
    team.yaml for ``team`` that shares ``kinds`` (none by default) through ``coordinator``
    (normalised, as every URL is when it is contacted).

    The team.yaml is first checked as every later command checks it: a name, URL or kind it
    would refuse is a :class:`PolicyInvalid` naming the key, before anything is made. Raises
    :class:`IdentityExists` (and writes nothing) when ``home`` already has a key,
    :class:`HomeNotCreated` when ``home`` cannot be made, and the errors of
    :func:`create_identity` and :func:`write_policy_source` when a file cannot be written.
    The home is made ``0700`` and team.yaml ``0600``; team.yaml is written at once.
    """
    policy_path = home / POLICY_FILENAME
    if coordinator is not None:
        with suppress(UnsoundUrl):  # the policy's own check names what is wrong, below
            coordinator = normalised_url(coordinator)
    text = policy_template(name=name, team=team, coordinator=coordinator, kinds=kinds)
    parse_policy(text, str(policy_path))
    try:
        private_folder(home)
    except OSError as exc:
        raise HomeNotCreated(str(home), reason(exc)) from None
    identity = create_identity(home)
    wrote = not policy_path.exists()
    if wrote:
        write_policy_source(home, text)
    return Joined(
        member_id=identity.key_id,
        public_key=identity.public_key_text,
        name=name,
        team=team,
        policy_path=policy_path,
        policy_written=wrote,
    )
