"""The work of the roster's commands registered in :mod:`memmesh.cli._team_members`.

A refusal of what a command asked (by the coordinator, by the signed roster, or by this
admin's memmesh, which will not sign a change the chain refuses) is said in
:func:`memmesh.team.refusals.refusal_of`'s words, which the page says too: as
:class:`~memmesh.cli.errors.TeamRefused` (exit 3), as a
:class:`~memmesh.cli.errors.UsageError` for a name or key the chain refuses, or as the error
of :mod:`memmesh.team.errors` that says why the coordinator refuses this member itself (its
token, its signature, its key: see :mod:`memmesh.team.access`).
"""

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec

from memmesh.cli._common import emit, home_of, note, open_store, shown_ids
from memmesh.cli._terminal import confirm
from memmesh.cli.errors import TeamRefused, UsageError
from memmesh.coordinator.errors import NotAnAdmin
from memmesh.errors import ExitCode
from memmesh.local.errors import ItemNotFound
from memmesh.local.items import iso
from memmesh.net.errors import Refused
from memmesh.net.presence import RosterMember
from memmesh.policy import Policy, load_policy
from memmesh.registry import Identity, load_identity
from memmesh.registry.errors import RosterChainBroken
from memmesh.team import roster
from memmesh.team.disclosures import my_disclosures
from memmesh.team.errors import KeyRevoked
from memmesh.team.refusals import Asked, Refusal, refusal_of
from memmesh.text import counted, printable

__all__ = [
    "asking",
    "labelled",
    "member_json",
    "member_of_home",
    "run_add",
    "run_demote",
    "run_disclosures",
    "run_invite",
    "run_members",
    "run_promote",
    "run_rename",
    "run_revoke",
    "run_sign",
]


@contextmanager
def asking(
    asked: Asked,
    what: str,
    policy: Policy | None = None,
    identity: Identity | None = None,
    *,
    home: Path | None = None,
    command: str = "team",
) -> Iterator[None]:
    """Turn the coordinator's refusal of ``what`` into what it means for this key (``home``:
    where a joining key lives), and a change this admin's memmesh would not sign into one line
    (``command``: the one whose help says more), in :func:`memmesh.team.refusals.refusal_of`'s
    words."""
    try:
        yield
    except (Refused, NotAnAdmin, KeyRevoked, RosterChainBroken) as exc:
        said = refusal_of(exc, asked, what, policy, identity, home=home)
        if not isinstance(said, Refusal):
            raise said from None
        if said.usage:
            raise UsageError(command, said.message) from None
        raise TeamRefused(said.message, said.http_status, said.error_code) from None


def member_of_home(args: argparse.Namespace) -> tuple[Policy, Identity]:
    home = home_of(args)
    return load_policy(home), load_identity(home)


def member_json(member: RosterMember) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(member)
    data["added_at"] = iso(member.added_at)
    data["revoked_at"] = iso(member.revoked_at) if member.revoked_at is not None else None
    return data


def labelled(member: RosterMember) -> str:
    admin = ", admin" if member.admin else ", reader" if member.reader else ""
    revoked = ", revoked" if member.revoked_at is not None else ""
    return printable(f"{member.name} ({member.key_id}{admin}{revoked})")


def run_invite(args: argparse.Namespace) -> int:
    if args.ttl > roster.MAX_INVITE_TTL:
        raise UsageError("team invite", "an invite lasts at most 30 days (--ttl 30d)")
    policy, identity = member_of_home(args)
    with asking("admin", "invite members", policy, identity, command="team invite"):
        invited = roster.invite(
            policy, identity, args.name, ttl=args.ttl, admin=args.admin, home=home_of(args)
        )
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


def run_members(args: argparse.Namespace) -> int:
    policy, identity = member_of_home(args)
    home = home_of(args)
    with asking("member", "list members", policy, identity):
        listed = roster.members(policy, identity, home=home)
    root = load_policy(home).roster_root  # pinned on first sight, perhaps just now
    rows = [
        (printable(m.name), printable(m.key_id), "yes" if m.admin else "no", iso(m.added_at),
         iso(m.revoked_at) if m.revoked_at is not None else "-", m.role)
        for m in listed.members
    ]  # fmt: skip
    lines = []
    if rows:
        width = max(4, *(len(row[0]) for row in rows))
        header = ("NAME", "MEMBER ID", "ADMIN", "ADDED", "REVOKED", "ROLE")
        lines = [
            f"{r[0]:<{width}}  {r[1]:<16}  {r[2]:<5}  {r[3]:<25}  {r[4]:<25}  {r[5]}"
            for r in [header, *rows]
        ]
    if not listed.enforced:
        lines.append("the roster is not enforced yet: any key holding the team token is accepted")
    signed = root is not None and listed.head_seq >= 0
    statements = counted(listed.head_seq + 1, "statement")
    if signed:
        lines.append(f"signed roster: {statements}, root {root}")
    elif listed.head_seq >= 0:
        lines.append(f"signed roster: {statements}, not verified here (team.yaml pins no root)")
    else:
        lines.append("roster: not signed")
    data = {
        "enforced": listed.enforced,
        "members": [member_json(m) for m in listed.members],
        "signed": {"statements": listed.head_seq + 1, "root": root} if signed else None,
    }
    emit(args, data, "\n".join(lines))
    return ExitCode.OK


def run_add(args: argparse.Namespace) -> int:
    if args.from_policy == (args.member is not None or args.key is not None):
        raise UsageError("team members add", "give NAME and KEY, or --from-policy alone")
    if not args.from_policy and args.key is None:
        raise UsageError("team members add", "give the member's public KEY after NAME")
    policy, identity = member_of_home(args)
    home = home_of(args)
    with asking("admin", "add members", policy, identity, command="team members add"):
        if args.from_policy:
            report = roster.add_from_policy(policy, identity, home=home)
        else:
            member = roster.add_member(
                policy, identity, args.member, args.key, admin=args.admin, home=home
            )
            report = roster.FromPolicy(added=[member], already=[], not_addable=[])
    lines = [f"added {labelled(m)} to team {policy.team}" for m in report.added]
    lines += [f"already on the roster: {labelled(m)}" for m in report.already]
    lines += [printable(f"not added: {n.name}: {n.reason}") for n in report.not_addable]
    data = {
        "added": [member_json(m) for m in report.added],
        "already": [member_json(m) for m in report.already],
        "not_addable": [msgspec.to_builtins(n) for n in report.not_addable],
    }
    emit(args, data, "\n".join(lines) or "team.yaml lists no members")
    return ExitCode.OK


def run_revoke(args: argparse.Namespace) -> int:
    policy, identity = member_of_home(args)
    confirm(args, "nothing was revoked", lambda: _question(policy, identity, args))
    with asking("admin", "revoke members", policy, identity, command="team revoke"):
        revoked = roster.revoke(policy, identity, args.member, purge=args.purge, home=home_of(args))
    purged = f"; {counted(revoked.purged, 'published item')} purged" if args.purge else ""
    emit(
        args,
        {"member": member_json(revoked.member), "purged": revoked.purged},
        f"revoked {labelled(revoked.member)} from team {policy.team}{purged}",
    )
    return ExitCode.OK


def run_promote(args: argparse.Namespace) -> int:
    return _change_role(args, admin=True)


def run_demote(args: argparse.Namespace) -> int:
    return _change_role(args, admin=False)


def _change_role(args: argparse.Namespace, *, admin: bool) -> int:
    """`mem team members promote` (``admin``) or `demote`: one signed request, one line."""
    policy, identity = member_of_home(args)
    verb, change = ("promote", roster.promote) if admin else ("demote", roster.demote)
    with asking("admin", f"{verb} members", policy, identity, command=f"team members {verb}"):
        changed = change(policy, identity, args.member, home=home_of(args))
    now = "now an admin" if admin else "no longer an admin"
    emit(
        args,
        {"member": member_json(changed)},
        f"{labelled(changed)} is {now} of team {policy.team}",
    )
    return ExitCode.OK


def run_rename(args: argparse.Namespace) -> int:
    policy, identity = member_of_home(args)
    command = "team members rename"
    with asking("admin", "rename members", policy, identity, command=command):
        renamed = roster.rename(policy, identity, args.member, args.name, home=home_of(args))
    emit(
        args,
        {"member": member_json(renamed)},
        f"renamed {printable(args.member)} to {labelled(renamed)} in team {policy.team}",
    )
    return ExitCode.OK


def run_sign(args: argparse.Namespace) -> int:
    policy, identity = member_of_home(args)
    with asking("admin", "sign the roster", policy, identity, command="team members sign"):
        signed = roster.sign_roster(home_of(args), policy, identity)
    members = signed.roster.members
    active = [m for m in members if m.revoked_at is None]
    lines = [f"signed team {policy.team}'s roster: {counted(signed.statements, 'statement')}"]
    lines += [f"  {labelled(m)}" for m in members]
    lines.append(
        f"root {signed.root} (your key), pinned in team.yaml: {counted(len(active), 'member')}"
        f", {len(members) - len(active)} revoked. From now on every change is signed by an "
        "admin; each member's memmesh pins this root the first time it reads the signed roster"
    )
    data = {
        "root": signed.root,
        "statements": signed.statements,
        "members": [member_json(m) for m in members],
    }
    emit(args, data, "\n".join(lines))
    return ExitCode.OK


def _question(policy: Policy, identity: Identity, args: argparse.Namespace) -> str:
    """What `mem team revoke` asks before revoking ``args.member``, naming who that is."""
    with asking("member", "list members", policy, identity):
        listed = roster.members(policy, identity, home=home_of(args)).members
    # A name the roster shows with its member id beside it ("bob (k3f9a2)") is still bob.
    found = [
        m
        for m in listed
        if args.member in (m.name, m.key, m.key_id) or m.name.startswith(f"{args.member} (")
    ]
    who = ", ".join(labelled(m) for m in found) or args.member
    items = " and remove every item they published" if args.purge else ""
    return f"Revoke {who} from team {policy.team}: refuse their key from now on{items}?"


def run_disclosures(args: argparse.Namespace) -> int:
    policy, identity = member_of_home(args)
    with open_store(args) as store:
        item_id = None
        if args.item is not None:
            try:
                item_id = store.get(args.item).id
            except ItemNotFound:
                item_id = args.item  # gone from this store, perhaps still in the logs
        with asking("member", "see disclosures", policy, identity):
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
