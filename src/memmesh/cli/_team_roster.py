"""The work of the roster's commands registered in :mod:`memmesh.cli._team_members`.

A refusal from the coordinator (:class:`~memmesh.net.errors.Refused`) is turned here into a
sentence that says what it means and what to do: :class:`~memmesh.cli.errors.TeamRefused` for
what this command asked (a join code, an admin's business), an error of
:mod:`memmesh.team.errors` when the coordinator refuses this member itself (its token, its
signature, its key: see :mod:`memmesh.team.access`). A change an admin's memmesh refuses to
sign on a signed roster is said the same way: in the roster's words, or as a
:class:`~memmesh.cli.errors.UsageError` for a name or key the chain holds already.
"""

import argparse
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import msgspec

from memmesh.cli._common import emit, home_of, note, open_store, shown_ids
from memmesh.cli._terminal import confirm
from memmesh.cli.errors import TeamRefused, UsageError
from memmesh.coordinator.errors import NotAnAdmin
from memmesh.errors import ExitCode, MemmeshError
from memmesh.local.errors import ItemNotFound
from memmesh.local.items import iso
from memmesh.net.errors import Refused
from memmesh.net.presence import RosterMember
from memmesh.policy import Policy, load_policy
from memmesh.registry import Identity, load_identity
from memmesh.registry.errors import RosterChainBroken
from memmesh.team import roster
from memmesh.team.access import explained, revoked_on
from memmesh.team.disclosures import my_disclosures
from memmesh.team.errors import KeyRevoked
from memmesh.text import counted, printable

__all__ = [
    "asking",
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

# What a request asked for: any member's business, an admin's, or joining with a code.
Asked = Literal["member", "admin", "join"]
# The coordinator's words when it refuses the key itself, whatever was asked.
# The coordinator's code for a change sent to its table once the roster is signed.
_ROSTER_SIGNED = "roster_signed"
_REFUSES_THE_KEY = re.compile(r"is not a member of team|was revoked on")
# A change the chain refuses for what it names (a name, a key), in words for the command line.
_CHAIN_USAGE = {
    "name_taken": "another active member has that name",
    "key_known": "that key is on the team's roster, or was (a revoked key never returns)",
    "bad_name": "that is no member name",
    "bad_key": "that is no public key",
    "bad_expiry": "an invite lasts at most 30 days",
    "no_change": "that changes nothing",
}


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
    (``command``: the one whose help says more)."""
    try:
        yield
    except Refused as refused:
        raise _explained(refused, asked, what, policy, identity, home) from None
    except NotAnAdmin as exc:
        assert identity is not None
        raise TeamRefused(
            f"this key ({identity.key_id}) may not {what} in team {exc.team}: only its admins "
            "may (the team's signed roster lists it as no admin)",
            403,
            exc.code,
        ) from None
    except KeyRevoked as exc:
        if asked != "join" or home is None:
            raise
        raise _rejoin(home, exc.when, 403, exc.code) from None
    except RosterChainBroken as exc:
        if exc.reason not in _CHAIN_USAGE:
            raise
        raise UsageError(command, f"{_CHAIN_USAGE[exc.reason]}: {exc.detail}") from None


def _rejoin(home: Path, revoked: str, status: int, code: str) -> TeamRefused:
    """A join refused because this home's key was revoked on ``revoked``: the invite is not
    spent, and admits a new key, which a new home makes."""
    new = f"{home}-new"
    return TeamRefused(
        f"this home's key was revoked from the team on {revoked} and stays refused; the "
        "join code was not used. It admits a new key: join from a new home, "
        f"`mem --home {new} team join CODE` (bring your private items along with "
        f"`mem export -o items.jsonl` here and `mem --home {new} import items.jsonl` there)",
        status,
        code,
    )


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
        return _rejoin(home, revoked, status, refused.error_code)
    if refused.error_code == _ROSTER_SIGNED and policy is not None:
        return TeamRefused(
            f"team {policy.team}'s roster is signed, and team.yaml does not pin its root yet: "
            "`mem team members` reads the signed roster and pins it; then run this again",
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
    policy, identity = _member(args)
    home = home_of(args)
    with asking("member", "list members", policy, identity):
        listed = roster.members(policy, identity, home=home)
    root = load_policy(home).roster_root  # pinned on first sight, perhaps just now
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
        "members": [_member_json(m) for m in listed.members],
        "signed": {"statements": listed.head_seq + 1, "root": root} if signed else None,
    }
    emit(args, data, "\n".join(lines))
    return ExitCode.OK


def run_add(args: argparse.Namespace) -> int:
    if args.from_policy == (args.member is not None or args.key is not None):
        raise UsageError("team members add", "give NAME and KEY, or --from-policy alone")
    if not args.from_policy and args.key is None:
        raise UsageError("team members add", "give the member's public KEY after NAME")
    policy, identity = _member(args)
    home = home_of(args)
    with asking("admin", "add members", policy, identity, command="team members add"):
        if args.from_policy:
            report = roster.add_from_policy(policy, identity, home=home)
        else:
            member = roster.add_member(
                policy, identity, args.member, args.key, admin=args.admin, home=home
            )
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
    with asking("admin", "revoke members", policy, identity, command="team revoke"):
        revoked = roster.revoke(policy, identity, args.member, purge=args.purge, home=home_of(args))
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
    with asking("admin", f"{verb} members", policy, identity, command=f"team members {verb}"):
        changed = change(policy, identity, args.member, home=home_of(args))
    now = "now an admin" if admin else "no longer an admin"
    emit(
        args,
        {"member": _member_json(changed)},
        f"{_labelled(changed)} is {now} of team {policy.team}",
    )
    return ExitCode.OK


def run_rename(args: argparse.Namespace) -> int:
    policy, identity = _member(args)
    command = "team members rename"
    with asking("admin", "rename members", policy, identity, command=command):
        renamed = roster.rename(policy, identity, args.member, args.name, home=home_of(args))
    emit(
        args,
        {"member": _member_json(renamed)},
        f"renamed {printable(args.member)} to {_labelled(renamed)} in team {policy.team}",
    )
    return ExitCode.OK


def run_sign(args: argparse.Namespace) -> int:
    policy, identity = _member(args)
    with asking("admin", "sign the roster", policy, identity, command="team members sign"):
        signed = roster.sign_roster(home_of(args), policy, identity)
    members = signed.roster.members
    active = [m for m in members if m.revoked_at is None]
    lines = [f"signed team {policy.team}'s roster: {counted(signed.statements, 'statement')}"]
    lines += [f"  {_labelled(m)}" for m in members]
    lines.append(
        f"root {signed.root} (your key), pinned in team.yaml: {counted(len(active), 'member')}"
        f", {len(members) - len(active)} revoked. From now on every change is signed by an "
        "admin; each member's memmesh pins this root the first time it reads the signed roster"
    )
    data = {
        "root": signed.root,
        "statements": signed.statements,
        "members": [_member_json(m) for m in members],
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
