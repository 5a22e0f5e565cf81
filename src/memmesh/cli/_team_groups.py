"""`mem team group` (`add`, `remove`, `list`), `mem team grant` (`set`, `list`) and
`mem team members role`: groups, roles and project grants on the signed roster, registered in
:mod:`memmesh.cli.team` and :mod:`memmesh.cli._team_members`. The work is
:mod:`memmesh.team.groups`'s; a refusal is said as every roster command says it
(:func:`memmesh.cli._team_roster.asking`)."""

import argparse
from typing import Any

import msgspec

from memmesh.cli._common import (
    Command,
    command_adder,
    emit,
    home_of,
    lazy,
    member_name,
)
from memmesh.errors import ExitCode

__all__ = ["names", "register", "register_role", "run_grant_list", "run_grant_set", "run_group"]

_GROUP = '{"name", "members": [NAME]}'
_GRANT = '{"project", "read": [NAME] | null, "publish": [NAME] | null} (null: every member)'


def register(command: Command) -> None:
    """Add `mem team group` and `mem team grant` through the team group's ``command``."""
    group = command(
        "group",
        lazy("memmesh.cli._team_groups", "run_group_list"),
        "List the team's groups, or change one (admins only): `add`, `remove`.",
        "mem team group add backend ana bo",
        description="List the team's groups and their members, as the signed roster says. "
        "A group is a name for some members, which `mem team publish --to GROUP` and "
        "`mem team grant` use; taking someone out of a group stops serving them what was "
        "published for it, at once. Groups exist on a signed roster only, and each change "
        "is a statement an admin signs. A group and a member never share a name; "
        "'everyone' names the whole team.",
        json_shape=f'{{"groups": [{_GROUP}]}}',
    )
    sub = command_adder(group.add_subparsers(title="group commands", metavar="COMMAND"))
    for verb, what in (("add", "Put members into a group"), ("remove", "Take members out of")):
        p = sub(
            verb,
            lazy("memmesh.cli._team_groups", "run_group"),
            f"{what} a group (admins only); a group is made by its first member.",
            f"mem team group {verb} backend ana bo",
            json_shape=f'{{"group": {_GROUP}}}, the group as it now stands',
        )
        p.add_argument("group", metavar="GROUP", type=member_name, help="the group's name")
        p.add_argument("members", nargs="+", metavar="MEMBER", help="names or member ids")
        p.set_defaults(verb=verb)
    sub(
        "list",
        lazy("memmesh.cli._team_groups", "run_group_list"),
        "List the team's groups and their members.",
        "mem team group list --json",
        json_shape=f'{{"groups": [{_GROUP}]}}',
    )

    grant = command(
        "grant",
        lazy("memmesh.cli._team_groups", "run_grant_list"),
        "List who may read and publish each project, or set it (admins only): `set`.",
        "mem team grant set api --read backend --publish backend",
        description="Per-project grants, as the signed roster says: who may read a "
        "project's published items (on top of each item's own audience) and who may "
        "publish in it. A project with no grant is open to every member (a reader still "
        "publishes nothing).",
        json_shape=f'{{"grants": [{_GRANT}]}}',
    )
    sub = command_adder(grant.add_subparsers(title="grant commands", metavar="COMMAND"))
    p = sub(
        "set",
        lazy("memmesh.cli._team_groups", "run_grant_set"),
        "Say who may read and who may publish a project's items (admins only).",
        "mem team grant set api --read backend,carol --publish backend",
        description="Say who may read (--read) and who may publish (--publish) the items "
        "of a project: groups and members by name, comma-separated or repeated, or "
        "'everyone' to open it again. What you do not give stays as it is. Readers are "
        "served a project's items only if both the grant and the item's own audience "
        "admit them; the coordinator and every peer refuse the rest.",
        json_shape=f'{{"grant": {_GRANT}}}',
    )
    p.add_argument("project", metavar="PROJECT", type=member_name, help="the project")
    p.add_argument("--read", action="append", type=names, metavar="WHO", help="who may read")
    p.add_argument("--publish", action="append", type=names, metavar="WHO", help="who may publish")
    sub(
        "list",
        lazy("memmesh.cli._team_groups", "run_grant_list"),
        "List each project's grants.",
        "mem team grant list --json",
        json_shape=f'{{"grants": [{_GRANT}]}}',
    )


def register_role(listing: Command) -> None:
    """`mem team members role`."""
    p = listing(
        "role",
        lazy("memmesh.cli._team_groups", "run_role"),
        "Make a member a reader, who asks the team but publishes nothing, or a member again "
        "(admins only).",
        "mem team members role auditor reader",
        description="Make a member a reader or a plain member again (admins only): a reader "
        "asks the team (recall-team, the feed, the team cache) but publishes nothing; the "
        "coordinator and every peer refuse what a reader publishes, not only this command. "
        "An admin is never a reader (demote first). Needs a signed roster.",
        json_shape='{"member": {"name", "key", "key_id", "admin", "added_at", "revoked_at"}, '
        '"role"}',
    )
    p.add_argument("member", metavar="MEMBER", help="their name or member id")
    p.add_argument("role", choices=("reader", "member"), help="their role from now on")


def names(value: str) -> list[str]:
    """An argparse type: names, comma-separated."""
    names = [part.strip() for part in value.split(",") if part.strip()]
    if not names:
        raise argparse.ArgumentTypeError("give at least one name")
    return [member_name(name) for name in names]


def _flat(given: list[list[str]] | None) -> list[str] | None:
    return None if given is None else [name for names in given for name in names]


def _listed(names: tuple[str, ...] | None) -> str:
    return "everyone" if names is None else ", ".join(names) or "nobody"


def run_group(args: argparse.Namespace) -> int:
    from memmesh.cli._team_roster import asking, member_of_home
    from memmesh.team.groups import change_group

    policy, identity = member_of_home(args)
    add, remove = (args.members, ()) if args.verb == "add" else ((), args.members)
    with asking("admin", "change groups", policy, identity, command=f"team group {args.verb}"):
        group = change_group(
            policy, identity, args.group, add=add, remove=remove, home=home_of(args)
        )
    emit(
        args,
        {"group": msgspec.to_builtins(group)},
        f"group {group.name}: {', '.join(group.members) or 'no members'}",
    )
    return ExitCode.OK


def run_group_list(args: argparse.Namespace) -> int:
    from memmesh.cli._team_roster import asking, member_of_home
    from memmesh.team.groups import groups_of, verified_access

    policy, identity = member_of_home(args)
    with asking("member", "read the roster", policy, identity, command="team group"):
        groups = groups_of(verified_access(policy, identity, home_of(args)))
    lines = [f"{g.name}: {', '.join(g.members) or 'no members'}" for g in groups]
    emit(args, {"groups": msgspec.to_builtins(groups)}, "\n".join(lines) or "no groups")
    return ExitCode.OK


def run_grant_set(args: argparse.Namespace) -> int:
    from memmesh.cli._team_roster import asking, member_of_home
    from memmesh.cli.errors import UsageError
    from memmesh.team.groups import set_grant

    if args.read is None and args.publish is None:
        raise UsageError("team grant set", "give --read, --publish or both")
    policy, identity = member_of_home(args)
    with asking("admin", "set grants", policy, identity, command="team grant set"):
        read, publish = _flat(args.read), _flat(args.publish)
        grant = set_grant(
            policy, identity, args.project, read=read, publish=publish, home=home_of(args)
        )
    emit(args, {"grant": msgspec.to_builtins(grant)}, _grant_line(grant))
    return ExitCode.OK


def run_grant_list(args: argparse.Namespace) -> int:
    from memmesh.cli._team_roster import asking, member_of_home
    from memmesh.team.groups import grants_of, verified_access

    policy, identity = member_of_home(args)
    with asking("member", "read the roster", policy, identity, command="team grant"):
        grants = grants_of(verified_access(policy, identity, home_of(args)))
    lines = [_grant_line(g) for g in grants]
    emit(args, {"grants": msgspec.to_builtins(grants)}, "\n".join(lines) or "no grants")
    return ExitCode.OK


def _grant_line(grant: Any) -> str:
    return f"{grant.project}: read {_listed(grant.read)}; publish {_listed(grant.publish)}"


def run_role(args: argparse.Namespace) -> int:
    from memmesh.cli._team_roster import asking, labelled, member_json, member_of_home
    from memmesh.team.groups import set_role

    policy, identity = member_of_home(args)
    with asking("admin", "change roles", policy, identity, command="team members role"):
        changed = set_role(policy, identity, args.member, args.role, home=home_of(args))
    emit(
        args,
        {"member": member_json(changed), "role": args.role},
        f"{labelled(changed)} is a {args.role} of team {policy.team} now",
    )
    return ExitCode.OK
