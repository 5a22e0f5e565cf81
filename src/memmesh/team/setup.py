"""Joining a team (`mem team init`): the member's identity key and a team.yaml to start from;
and putting the member's store in the team's vector space (`mem team join`)."""

from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path

import msgspec

from memmesh._files import private_folder, reason
from memmesh._urls import UnsoundUrl, normalised_url
from memmesh.embed import EmbedderUnavailable
from memmesh.local.errors import HomeNotCreated
from memmesh.local.store import Store
from memmesh.policy import POLICY_FILENAME, Policy, parse_policy, policy_template
from memmesh.policy.config import write_policy_source
from memmesh.registry import create_identity

__all__ = ["Joined", "TeamEmbedder", "join_team", "use_team_embedder"]


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


class TeamEmbedder(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`use_team_embedder` did to a member's store.

    * ``name`` - the team's embedder (team.yaml's ``embedder``); ``before`` - the store's.
    * ``reindexed`` - the items re-embedded with it (``0``: the store was empty, and only
      switched); ``None`` when nothing was done: the store used it already, or it cannot be
      loaded here, and then ``missing`` says what to install and run.
    """

    name: str
    before: str
    reindexed: int | None = None
    missing: str = ""

    @classmethod
    def unusable(cls, name: str, before: str, problem: str) -> "TeamEmbedder":
        """Nothing done, for ``problem``: ``missing`` says it, and how to switch later."""
        then = f"then run `mem reindex --embedder {name}` to switch your store to it"
        return cls(name=name, before=before, missing=f"{problem}; {then}")


def use_team_embedder(
    store: Store, policy: Policy, progress: Callable[[int, int], None] | None = None
) -> TeamEmbedder:
    """Switch ``store`` to the team's embedder, re-embedding its items (``progress`` as for
    :meth:`Store.reindex`, not called for an empty store) unless it uses it already. Where
    that embedder's optional extra is missing, nothing changes and ``missing`` says so."""
    team, before = policy.embedder, store.embedder.name
    if before == team:
        return TeamEmbedder(name=team, before=before)
    empty = not store.items(status=None, limit=1)
    try:
        count = store.reindex(team, None if empty else progress)
    except EmbedderUnavailable as exc:
        return TeamEmbedder.unusable(team, before, exc.message)
    return TeamEmbedder(name=team, before=before, reindexed=count)
