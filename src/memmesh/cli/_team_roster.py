"""The work of the roster's commands registered in :mod:`memmesh.cli._team_members`.

A refusal from the coordinator (:class:`~memmesh.net.errors.Refused`) is turned here into a
sentence that says what it means and what to do: :class:`~memmesh.cli.errors.TeamRefused` for
what this command asked (a join code, an admin's business), an error of
:mod:`memmesh.team.errors` when the coordinator refuses this member itself (its token, its
signature, its key: see :mod:`memmesh.team.access`).
"""

import argparse
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import msgspec

from memmesh.cli._common import emit, home_of, note, open_store, shown_ids
from memmesh.cli._reindex import reindex_progress
from memmesh.cli._terminal import confirm
from memmesh.cli.errors import TeamRefused, UsageError
from memmesh.errors import ExitCode, MemmeshError
from memmesh.local.errors import ItemNotFound
from memmesh.local.items import iso
from memmesh.net.errors import Refused
from memmesh.net.presence import RosterMember
from memmesh.policy import Policy, load_policy
from memmesh.registry import Identity, load_identity
from memmesh.team import roster
from memmesh.team.access import explained, revoked_on
from memmesh.team.disclosures import my_disclosures
from memmesh.team.setup import TeamEmbedder, use_team_embedder
from memmesh.text import counted, printable

__all__ = [
    "run_add",
    "run_demote",
    "run_disclosures",
    "run_invite",
    "run_join",
    "run_members",
    "run_promote",
    "run_revoke",
]

# What a request asked for: any member's business, an admin's, or joining with a code.
Asked = Literal["member", "admin", "join"]
# The coordinator's words when it refuses the key itself, whatever was asked.
_REFUSES_THE_KEY = re.compile(r"is not a member of team|was revoked on")


@contextmanager
def _asking(
    asked: Asked,
    what: str,
    policy: Policy | None = None,
    identity: Identity | None = None,
    *,
    home: Path | None = None,
) -> Iterator[None]:
    """Turn the coordinator's refusal of ``what`` into what it means for this key (``home``:
    where a joining key lives)."""
    try:
        yield
    except Refused as refused:
        raise _explained(refused, asked, what, policy, identity, home) from None


def _explained(
    refused: Refused,
    asked: Asked,
    what: str,
    policy: Policy | None,
    identity: Identity | None,
    home: Path | None = None,
) -> MemmeshError:
    status, said = refused.http_status, refused.message
    if status == 404 and "no route" in said:
        return refused  # a coordinator that does not serve this yet says so itself
    revoked = revoked_on(refused)
    if asked == "join" and revoked is not None and home is not None:
        # The invite is not spent: it admits a new key, which a new home makes.
        new = f"{home}-new"
        return TeamRefused(
            f"this home's key was revoked from the team on {revoked} and stays refused; the "
            "join code was not used. It admits a new key: join from a new home, "
            f"`mem --home {new} team join CODE` (bring your private items along with "
            f"`mem export -o items.jsonl` here and `mem --home {new} import items.jsonl` there)",
            status,
            refused.error_code,
        )
    if asked == "join" and status in (403, 404, 409, 410):
        return TeamRefused(
            f"the coordinator did not accept this join code ({said}): a code works once, "
            "until it expires; ask an admin for a new one (mem team invite NAME)",
            status,
            refused.error_code,
        )
    if status == 401 and (policy is None or identity is None):
        return TeamRefused(
            f"the coordinator did not accept this request ({said}): check this computer's "
            "clock (it must be within 2 minutes of the coordinator's)",
            status,
            refused.error_code,
        )
    if policy is None or identity is None:
        return refused
    if status == 403 and asked == "admin" and not _REFUSES_THE_KEY.search(said):
        return TeamRefused(
            f"this key ({identity.key_id}) may not {what} in team {policy.team}: only its "
            f"admins may (the coordinator said: {said})",
            status,
            refused.error_code,
        )
    return explained(refused, policy, identity)


def _member(args: argparse.Namespace) -> tuple[Policy, Identity]:
    home = home_of(args)
    return load_policy(home), load_identity(home)


def _member_json(member: RosterMember) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(member)
    data["added_at"] = iso(member.added_at)
    data["revoked_at"] = iso(member.revoked_at) if member.revoked_at is not None else None
    return data


def _labelled(member: RosterMember) -> str:
    admin = ", admin" if member.admin else ""
    revoked = ", revoked" if member.revoked_at is not None else ""
    return printable(f"{member.name} ({member.key_id}{admin}{revoked})")


def run_invite(args: argparse.Namespace) -> int:
    if args.ttl > roster.MAX_INVITE_TTL:
        raise UsageError("team invite", "an invite lasts at most 30 days (--ttl 30d)")
    policy, identity = _member(args)
    with _asking("admin", "invite members", policy, identity):
        invited = roster.invite(policy, identity, args.name, ttl=args.ttl, admin=args.admin)
    revoked = invited.revoked_at
    data = {
        "code": invited.code,
        "name": invited.name,
        "team": invited.team,
        "expires_at": iso(invited.expires_at),
        "admin": invited.admin,
        "revoked_at": iso(revoked) if revoked is not None else None,
    }
    emit(args, data, invited.code)
    if not getattr(args, "json", False):
        role = " (an admin)" if invited.admin else ""
        note(
            f"This code lets one laptop join team {invited.team} as {invited.name}{role}, once, "
            f"until {iso(invited.expires_at)}. Send it privately: whoever holds it can join. "
            "On the new laptop: mem team join CODE"
        )
        if revoked is not None:
            note(
                f"{invited.name} was revoked from team {invited.team} on {iso(revoked)}, and "
                "their old key stays refused: this code admits a new key only. Where their old "
                "home is, they join from a new one, which makes a new key: "
                "mem --home NEW_HOME team join CODE"
            )
    return ExitCode.OK


def run_join(args: argparse.Namespace) -> int:
    code = sys.stdin.read() if args.code == "-" else args.code
    home = home_of(args)
    with _asking("join", "join", home=home):
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


def run_members(args: argparse.Namespace) -> int:
    policy, identity = _member(args)
    with _asking("member", "list members", policy, identity):
        listed = roster.members(policy, identity)
    rows = [
        (printable(m.name), printable(m.key_id), "yes" if m.admin else "no", iso(m.added_at),
         iso(m.revoked_at) if m.revoked_at is not None else "-")
        for m in listed.members
    ]  # fmt: skip
    lines = []
    if rows:
        width = max(4, *(len(row[0]) for row in rows))
        header = ("NAME", "MEMBER ID", "ADMIN", "ADDED", "REVOKED")
        lines = [
            f"{r[0]:<{width}}  {r[1]:<16}  {r[2]:<5}  {r[3]:<25}  {r[4]}" for r in [header, *rows]
        ]
    if not listed.enforced:
        lines.append("the roster is not enforced yet: any key holding the team token is accepted")
    data = {"enforced": listed.enforced, "members": [_member_json(m) for m in listed.members]}
    emit(args, data, "\n".join(lines))
    return ExitCode.OK


def run_add(args: argparse.Namespace) -> int:
    if args.from_policy == (args.member is not None or args.key is not None):
        raise UsageError("team members add", "give NAME and KEY, or --from-policy alone")
    if not args.from_policy and args.key is None:
        raise UsageError("team members add", "give the member's public KEY after NAME")
    policy, identity = _member(args)
    with _asking("admin", "add members", policy, identity):
        if args.from_policy:
            report = roster.add_from_policy(policy, identity)
        else:
            member = roster.add_member(policy, identity, args.member, args.key, admin=args.admin)
            report = roster.FromPolicy(added=[member], already=[], not_addable=[])
    lines = [f"added {_labelled(m)} to team {policy.team}" for m in report.added]
    lines += [f"already on the roster: {_labelled(m)}" for m in report.already]
    lines += [printable(f"not added: {n.name}: {n.reason}") for n in report.not_addable]
    data = {
        "added": [_member_json(m) for m in report.added],
        "already": [_member_json(m) for m in report.already],
        "not_addable": [msgspec.to_builtins(n) for n in report.not_addable],
    }
    emit(args, data, "\n".join(lines) or "team.yaml lists no members")
    return ExitCode.OK


def run_revoke(args: argparse.Namespace) -> int:
    policy, identity = _member(args)
    confirm(args, "nothing was revoked", lambda: _question(policy, identity, args))
    with _asking("admin", "revoke members", policy, identity):
        revoked = roster.revoke(policy, identity, args.member, purge=args.purge)
    purged = f"; {counted(revoked.purged, 'published item')} purged" if args.purge else ""
    emit(
        args,
        {"member": _member_json(revoked.member), "purged": revoked.purged},
        f"revoked {_labelled(revoked.member)} from team {policy.team}{purged}",
    )
    return ExitCode.OK


def run_promote(args: argparse.Namespace) -> int:
    return _change_role(args, admin=True)


def run_demote(args: argparse.Namespace) -> int:
    return _change_role(args, admin=False)


def _change_role(args: argparse.Namespace, *, admin: bool) -> int:
    """`mem team members promote` (``admin``) or `demote`: one signed request, one line."""
    policy, identity = _member(args)
    verb, change = ("promote", roster.promote) if admin else ("demote", roster.demote)
    with _asking("admin", f"{verb} members", policy, identity):
        changed = change(policy, identity, args.member)
    now = "now an admin" if admin else "no longer an admin"
    emit(
        args,
        {"member": _member_json(changed)},
        f"{_labelled(changed)} is {now} of team {policy.team}",
    )
    return ExitCode.OK


def _question(policy: Policy, identity: Identity, args: argparse.Namespace) -> str:
    """What `mem team revoke` asks before revoking ``args.member``, naming who that is."""
    with _asking("member", "list members", policy, identity):
        listed = roster.members(policy, identity).members
    found = [m for m in listed if args.member in (m.name, m.key, m.key_id)]
    who = ", ".join(_labelled(m) for m in found) or args.member
    items = " and remove every item they published" if args.purge else ""
    return f"Revoke {who} from team {policy.team}: refuse their key from now on{items}?"


def run_disclosures(args: argparse.Namespace) -> int:
    policy, identity = _member(args)
    with open_store(args) as store:
        item_id = None
        if args.item is not None:
            try:
                item_id = store.get(args.item).id
            except ItemNotFound:
                item_id = args.item  # gone from this store, perhaps still in the logs
        with _asking("member", "see disclosures", policy, identity):
            entries = my_disclosures(
                policy, identity, store, item_id=item_id, limit=args.limit,
                per_asker=args.per_asker or None,
            )  # fmt: skip
        shown = shown_ids(store, [e.item_id for e in entries])
    lines = [
        printable(f"{iso(e.served_at)}  {shown[e.item_id]}  to {e.asker_name} ({e.asker_key_id})")
        + f"  via {e.source}"
        for e in entries
    ]
    rows = [{**msgspec.to_builtins(e), "served_at": iso(e.served_at)} for e in entries]
    nothing = "none of your items has been served" if item_id is None else "not served yet"
    emit(args, {"entries": rows}, "\n".join(lines) or nothing)
    return ExitCode.OK
