"""`mem team join`: the work of the command registered in :mod:`memmesh.cli._team_members`.

Joining with a code, then putting the member's store in the team's vector space; refusals are
said as :mod:`memmesh.cli._team_roster` says those of the other roster commands.
"""

import argparse
import sys

import msgspec

from memmesh.cli._common import emit, home_of, note, open_store
from memmesh.cli._reindex import reindex_progress
from memmesh.cli._team_roster import asking
from memmesh.errors import ExitCode, MemmeshError
from memmesh.policy import load_policy
from memmesh.team import roster
from memmesh.team.setup import TeamEmbedder, use_team_embedder

__all__ = ["run_join"]


def run_join(args: argparse.Namespace) -> int:
    code = sys.stdin.read() if args.code == "-" else args.code
    home = home_of(args)
    with asking("join", "join", home=home, command="team join"):
        joined = roster.join(home, code, name=args.name)
    member = joined.member
    embedder = _team_embedder(args)
    data = {
        "member_id": member.key_id,
        "public_key": member.key,
        "name": joined.name,
        "team": joined.team,
        "coordinator": joined.coordinator,
        "admin": member.admin,
        "identity_created": joined.identity_created,
        "policy": str(joined.policy_path),
        "policy_created": joined.policy_created,
        "roster_root": joined.root,
        "embedder": msgspec.to_builtins(embedder),
    }
    emit(args, data, member.key_id)
    if not getattr(args, "json", False):
        role = " (an admin)" if member.admin else ""
        written = (
            f"wrote {joined.policy_path}: it shares nothing until you list kinds under share:"
            if joined.policy_created
            else f"updated the team's keys in {joined.policy_path}; the rest is as it was"
        )
        note(f"joined team {joined.team} as {member.name}{role}; {written}")
        if joined.root == member.key_id:
            note(
                f"you started the team's signed roster: your key ({joined.root}) is its root, "
                "and team.yaml pins it; every change to the roster is signed by an admin"
            )
        elif joined.root is not None:
            note(
                f"the team's signed roster verified from its root ({joined.root}), which "
                "team.yaml now pins: the roster is believed only as its admins signed it"
            )
        if embedder.missing:
            note(f"the team's embedder is {embedder.name}, and {embedder.missing}")
        elif embedder.reindexed is not None:
            again = f", {embedder.reindexed} items re-embedded" if embedder.reindexed else ""
            note(f"your store now uses the team's embedder, {embedder.name}{again}")
    return ExitCode.OK


def _team_embedder(args: argparse.Namespace) -> TeamEmbedder:
    """Put the member's store in the team's vector space, now that team.yaml names the team
    (the join has succeeded whatever happens here: a problem is said, not raised)."""
    policy = load_policy(home_of(args))
    try:
        with open_store(args, repair=True) as store, reindex_progress(args) as progress:
            return use_team_embedder(store, policy, progress)
    except MemmeshError as exc:
        return TeamEmbedder.unusable(policy.embedder, "", exc.message)
