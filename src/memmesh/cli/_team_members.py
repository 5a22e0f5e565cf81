"""`mem team invite`, `join`, `members` (`list`, `add`, `promote`, `demote`, `rename`,
`sign`), `revoke` and `disclosures`: the team's roster, registered in :mod:`memmesh.cli.team`.

The commands' work is in :mod:`memmesh.cli._team_roster` (and `join`'s in
:mod:`memmesh.cli._team_join`), imported when one of them runs.
"""

import argparse
import re

from memmesh.cli import _team_groups
from memmesh.cli._common import (
    Command,
    Handler,
    command_adder,
    lazy,
    member_name,
    positive_int,
)

__all__ = ["duration", "member", "register"]

_MEMBER = '{"name", "key", "key_id", "admin", "added_at", "revoked_at"}'
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def register(command: Command) -> None:
    """Add the roster's commands through the team group's ``command`` helper."""
    p = command(
        "invite",
        _run("invite"),
        "Make a join code for a new member (admins only). It works once, until it expires.",
        "mem team invite bob --ttl 2h",
        description="Make a join code for a new member (admins only): one line holding the "
        "coordinator's URL and certificate pin, the team, the name and a secret. It works "
        "once, until it expires. On a signed roster the invite is a statement you sign, the "
        "secret is the private half of a key made for it alone (the coordinator never sees "
        "it), and the code names the roster's root, from which the new member verifies the "
        "roster; on a roster not signed yet, only the secret's SHA-256 reaches the "
        "coordinator. Send it privately: whoever holds it can join as NAME. Inviting a "
        "revoked member again: their "
        "old key stays refused, so the code admits a new key only, and they join from a new "
        "home (mem --home NEW_HOME team join CODE), as it says.",
        json_shape='{"code", "name", "team", "expires_at", "admin", "revoked_at"}; times are '
        'ISO 8601 UTC, "revoked_at" is null unless a member of that name was revoked',
    )
    p.add_argument("name", metavar="NAME", type=member_name, help="the new member's name")
    p.add_argument(
        "--ttl",
        type=duration,
        default=duration("24h"),
        metavar="TIME",
        help="how long the code works: 90s, 30m, 24h or 7d (24h; at most 30d)",
    )
    p.add_argument("--admin", action="store_true", help="the new member may invite and revoke")

    p = command(
        "join",
        lazy("memmesh.cli._team_join", "run_join"),
        "Join a team with a join code from an admin, in one step.",
        "mem team join memmesh-join:eyJ1cmwiOiJodHRwczovL3RlYW0taG9zdDo4NDAwIn0",
        description="Join a team with a join code from an admin: makes your key unless this "
        "home has one, presents the code once to the coordinator (trusting only the "
        "certificate the code pins), and writes team.yaml: the team, your name, the "
        "coordinator's URL, pin and key, and the signed roster's root. With the first admin's "
        "code (the one `mem coordinator serve` prints), your key starts the team's signed "
        "roster as its root. With an admin's invite, the roster is read and verified from "
        "the root the code names first (a roster that does not verify is refused, and "
        "nothing is written), then your key signs its join. An existing team.yaml keeps "
        "everything else, comments included. When the code is damaged or expired, or the "
        "coordinator refuses it, team.yaml is not touched. Then it switches your store to the "
        "team's embedder (team.yaml's embedder:), re-embedding what it holds (progress on "
        "stderr); where that embedder's extra is not installed, it says what to install and "
        "to run `mem reindex --embedder NAME` after.",
        json_shape='{"member_id", "public_key", "name", "team", "coordinator", "admin", '
        '"identity_created", "policy", "policy_created", "roster_root", "embedder": {"name", '
        '"before", "reindexed", "missing"}}; "roster_root" is null for a roster not signed',
    )
    p.add_argument(
        "code",
        metavar="CODE",
        help="the join code, or - to read it from stdin (out of your shell's history)",
    )
    p.add_argument(
        "--name",
        type=member_name,
        help="your name in team.yaml (default: the name the invite was made for)",
    )

    members = _members(command)
    listing = command_adder(members.add_subparsers(title="members commands", metavar="COMMAND"))
    _members_list(listing)
    p = listing(
        "add",
        _run("add"),
        "Put a member's key on the roster (admins only), or every full key of team.yaml's "
        "members: list with --from-policy.",
        "mem team members add carol cM8vZ2X1YtqkQm0pN3r4s5t6u7v8w9x0y1z2A3B4C5D",
        description="Put a member's public key on the roster (admins only). With "
        "--from-policy, every entry of team.yaml's members: list that holds a full public key "
        "is added (once); entries holding only a member id are reported as not addable.",
        json_shape='{"added": [MEMBER], "already": [MEMBER], "not_addable": '
        '[{"name", "key", "reason"}]}, MEMBER as in `mem team members`',
    )
    p.add_argument("member", nargs="?", metavar="NAME", type=member_name, help="their name")
    p.add_argument(
        "key", nargs="?", metavar="KEY", help="their public key (their `mem team status --json`)"
    )
    p.add_argument("--admin", action="store_true", help="they may invite and revoke too")
    p.add_argument("--from-policy", action="store_true", help="add team.yaml's members: list")
    _roles(listing)

    p = command(
        "revoke",
        _run("revoke"),
        "Take a member off the team (admins only): their key is refused from now on.",
        "mem team revoke bob --purge --yes",
        description="Take a member off the team (admins only): on a signed roster you sign "
        "the revocation. The coordinator refuses their key from now on (it never returns), "
        "and members drop their items. With --purge, the coordinator also "
        "removes every item they published. Asks first unless --yes; without a terminal to "
        "ask on, or with --json, it revokes only with --yes.",
        json_shape=f'{{"member": {_MEMBER}, "purged"}}',
    )
    p.add_argument(
        "member", metavar="MEMBER", type=member, help="their name, public key or member id"
    )
    p.add_argument("--purge", action="store_true", help="also remove their published items")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    p = command(
        "disclosures",
        _run("disclosures"),
        "Who was served your published items: the coordinator's log and your peer's, newest "
        "first (never what they asked); at most --per-asker rows of one asker, so that one "
        "who searched often hides no one else.",
        "mem team disclosures 01J9ZC4 --limit 20 --per-asker 0",
        json_shape='{"entries": [{"item_id", "asker_key_id", "asker_name", "served_at", '
        '"source": "coordinator" | "peer"}]}, newest first; times are ISO 8601 UTC',
    )
    p.add_argument("item", nargs="?", metavar="ID", help="only this item (an id or prefix)")
    p.add_argument("--limit", type=_limit, default=100, metavar="N", help="at most N (100)")
    p.add_argument(
        "--per-asker", type=_per_asker, default=10, metavar="N",
        help="at most N of one asker's (10; 0: no cap)",
    )  # fmt: skip


def _roles(listing: Command) -> None:
    """`mem team members promote` and `demote`."""
    p = listing(
        "promote",
        _run("promote"),
        "Make a member an admin (admins only): they may invite, add, promote and revoke too.",
        "mem team members promote bob",
        description="Make a member an admin (admins only): from now on they may invite, "
        "add, promote, demote and revoke members. A team needs a second admin before its "
        "last one can be revoked or demoted. A revoked member cannot be promoted: their key "
        "stays refused (invite them again; they join with a new key).",
        json_shape=f'{{"member": {_MEMBER}}}, the member as the roster now has them',
    )
    p.add_argument("member", metavar="MEMBER", type=member, help="their name or member id")
    p = listing(
        "demote",
        _run("demote"),
        "Make an admin a member who is no admin (admins only, yourself included); never the "
        "team's last admin.",
        "mem team members demote bob",
        json_shape=f'{{"member": {_MEMBER}}}, the member as the roster now has them',
    )
    p.add_argument("member", metavar="MEMBER", type=member, help="their name or member id")
    p = listing(
        "rename",
        _run("rename"),
        "Rename a member on the signed roster (admins only); output then shows their member "
        "id beside the name.",
        "mem team members rename bob robert",
        description="Rename a member on the signed roster (admins only): you sign the new "
        "name. The roster keeps every name a key had, so output shows a renamed member's "
        "name with their member id beside it (robert (k3f9a2)), as it does a name another "
        "key has or had. Two active members never share a name, letter case aside. Needs a "
        "signed roster (mem team members sign).",
        json_shape=f'{{"member": {_MEMBER}}}, the member as the roster now has them',
    )
    p.add_argument("member", metavar="MEMBER", type=member, help="their name or member id")
    p.add_argument("name", metavar="NEW-NAME", type=member_name, help="their new name")
    _team_groups.register_role(listing)
    listing(
        "sign",
        _run("sign"),
        "Sign the team's roster as it is (an admin, once, for a team from before the roster "
        "was signed); from then on every change is signed by an admin.",
        "mem team members sign",
        description="Sign the team's roster as the coordinator holds it (an admin, once, for a "
        "team whose roster is not signed yet): your key becomes the roster's root, and you "
        "sign every member with their name and role, and every revoked key's revocation. "
        "team.yaml then pins the root; every member's memmesh pins it the first time it "
        "reads the signed roster, and from then on believes only what the team's admins "
        "signed, never the coordinator's word. Refused when the roster is signed already, or "
        "when your key is no admin.",
        json_shape=f'{{"root", "statements", "members": [{_MEMBER}]}}',
    )


def _members(command: Command) -> argparse.ArgumentParser:
    """`mem team members`: alone, it lists the roster."""
    return _members_list(command, name="members")


def _members_list(command: Command, *, name: str = "list") -> argparse.ArgumentParser:
    return command(
        name,
        _run("members"),
        "List the team's roster: name, member id, admin, when added and revoked; a signed "
        "roster as its admins signed it, verified from its root.",
        f"mem team {'members' if name == 'members' else 'members list'} --json",
        description="List the team's roster: name, member id, admin, when added and "
        "revoked. A signed roster is listed as its admins signed it, verified from the root "
        "team.yaml pins (pinned the first time it is read); a name another key has or had, "
        "or a member's changed name, shows with its member id beside it. The last line says "
        "how many statements the signed roster holds and its root, or that it is not signed.",
        json_shape=f'{{"enforced", "members": [{_MEMBER}], "signed": {{"statements", "root"}} '
        '| null}; times are ISO 8601 UTC, "revoked_at" is null while a member',
    )


def _run(name: str) -> Handler:
    return lazy("memmesh.cli._team_roster", f"run_{name}")


def _limit(value: str) -> int:
    """An argparse type: how many disclosures to show, 1 to 1000."""
    number = positive_int(value)
    if number > 1000:
        raise argparse.ArgumentTypeError(f"must be at most 1000, not {number}")
    return number


_NO_CAP = 0  # --per-asker 0: every row of each asker, within --limit


def _per_asker(value: str) -> int:
    """An argparse type: how many disclosures of one asker to show, 0 (no cap) to 1000."""
    if value.strip() == "0":
        return _NO_CAP
    return _limit(value)


def member(value: str) -> str:
    """An argparse type: a member as `revoke` and `members promote` take one: a name (refused
    with the rule of :func:`~memmesh.cli._common.member_name`), a member id, or a public key
    (which may start with '-' or '_', where a name may not)."""
    try:
        return member_name(value)
    except argparse.ArgumentTypeError as not_a_name:
        from memmesh.registry.errors import BadSignature
        from memmesh.registry.identity import public_key_from_text

        try:
            public_key_from_text(value)
        except BadSignature:
            raise not_a_name from None  # the name's rule: a name is what was meant
        return value


def duration(value: str) -> float:
    """An argparse type: a time like ``90s``, ``30m``, ``24h`` or ``7d``, in seconds."""
    match = re.fullmatch(r"([0-9]{1,7})([a-z]*)", value.strip().lower())
    if match is None:
        raise argparse.ArgumentTypeError(f"{value!r} is not a time like 30m, 24h or 7d")
    number, unit = match.groups()
    if not unit:
        raise argparse.ArgumentTypeError(f"{value!r} has no unit; write it as 90s, 30m, 24h or 7d")
    if unit not in _UNITS:
        raise argparse.ArgumentTypeError(
            f"{unit!r} is not a unit of time; use s, m, h or d (90s, 30m, 24h, 7d)"
        )
    seconds = int(number) * _UNITS[unit]
    if seconds == 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return float(seconds)
