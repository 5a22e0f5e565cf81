"""`mem edit` and `mem unforget`: an item changed in place, under its own id.

Neither publishes nor retracts anything. An edited item that is published stays published as
it was until its owner publishes it again, and the policy judges it as edited: what it no
longer allows, the next `mem team sync` takes back, as for a tightened team.yaml. An item
brought back keeps the retraction its forgetting caused.
"""

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memmesh.cli._common import Command, emit, home_of, nonempty, open_store, shown_id, warn
from memmesh.cli._input import secrets_named
from memmesh.cli.errors import UsageError
from memmesh.errors import ExitCode
from memmesh.local.items import GLOBAL, KINDS

if TYPE_CHECKING:
    from memmesh.local.items import Item
    from memmesh.local.store import Store
    from memmesh.team.member import Member

__all__ = ["add_edit", "add_unforget"]

_EDIT = (
    "Change an item's kind, tags or project in place: the same id, no new version, its track "
    "record kept (`mem revise` changes the text). A published item stays published as it was "
    "until you publish it again; if team.yaml does not share it as edited, the next `mem team "
    "sync` retracts it."
)
_FIELDS = ("kind", "project", "tags")


def add_edit(command: Command, id_help: str) -> None:
    """Add `mem edit` to the parser."""
    p = command("edit", _edit, _EDIT, "mem edit 01J9ZC4XQM --kind decision --tag ci --untag wip")
    p.add_argument("id", help=id_help)
    p.add_argument("--kind", choices=KINDS, help="the new kind")
    p.add_argument("--tag", action="append", default=[], metavar="T", help="add a tag (repeatable)")
    p.add_argument(
        "--untag", action="append", default=[], metavar="T", help="remove a tag (repeatable)"
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument("--project", metavar="P", type=nonempty, help="move it to project P")
    group.add_argument("--global", dest="global_", action="store_true", help="make it global")


def add_unforget(command: Command, id_help: str) -> None:
    """Add `mem unforget` to the parser."""
    p = command(
        "unforget",
        _unforget,
        "Bring back an item `mem forget` archived: it is recalled again. A revised item is not "
        "forgotten (its revision replaced it), and a publication taken back stays taken back.",
        "mem unforget 01J9ZC4XQM",
    )
    p.add_argument("id", help=id_help)


def _edit(args: argparse.Namespace) -> int:
    from memmesh.policy import redact

    project = GLOBAL if args.global_ else args.project
    if args.kind is None and project is None and not args.tag and not args.untag:
        raise UsageError(
            "edit", "nothing to change: give --kind, --tag, --untag, --project or --global"
        )
    clean = redact("", args.tag)  # a tag holding a secret is dropped, as by mem remember
    with open_store(args) as store:
        old, new = store.edit(
            args.id, kind=args.kind, project=project, add_tags=clean.tags, remove_tags=args.untag
        )
        shown = shown_id(store, new.id)
        published = _published_note(home_of(args), store, new, shown) if new != old else None
    if clean.detectors:
        warn(f"left out {secrets_named(clean.detectors)} given as a tag", "secret_redacted")
    warn(published, "published_as_before")
    changed = {
        field: [_value(old, field), _value(new, field)]
        for field in _FIELDS
        if getattr(old, field) != getattr(new, field)
    }
    text = ", ".join(
        f"{field} {_shown(after)} (was {_shown(before)})"
        for field, (before, after) in changed.items()
    )
    data = {"id": new.id, "status": "edited" if changed else "unchanged", "changed": changed}
    data["item"] = new.to_dict()
    emit(args, data, f"edited {shown}: {text}" if changed else f"unchanged {shown}")
    return ExitCode.OK


def _unforget(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        item = store.unforget(args.id)
        shown = shown_id(store, item.id)
        member = _member(home_of(args), store)
        if member is not None:
            with store.read() as tx:
                retracted = member.registry.latest_version(tx, item.id) > 0
            if retracted and item.id not in member.registry.live():
                warn(
                    "its publication stays retracted: teammates do not see it again unless you "
                    "publish it again",
                    "publication_retracted",
                )
    emit(args, {"id": item.id, "status": item.status, "item": item.to_dict()}, f"restored {shown}")
    return ExitCode.OK


def _value(item: "Item", field: str) -> Any:
    value = getattr(item, field)
    return list(value) if isinstance(value, tuple) else value


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(value) or "none"
    return str(value)


def _member(home: Path, store: "Store") -> "Member | None":
    """The member working on ``store``, if this home has a key (else nothing was published)."""
    from memmesh.registry import load_identity
    from memmesh.registry.identity import KEY_FILENAME
    from memmesh.team.member import Member, try_policy

    if not (home / KEY_FILENAME).exists():
        return None
    return Member(store, load_identity(home), try_policy(home), reconcile_first=False)


def _published_note(home: Path, store: "Store", item: "Item", shown: str) -> str | None:
    """What an edit of a published item means for teammates, or ``None`` if it is not."""
    from memmesh.registry import withheld

    member = _member(home, store)
    if member is None:
        return None
    live = member.registry.live()
    current = live.get(item.id)
    if current is None or current.publication.author_key != member.identity.public_key_text:
        return None
    policy = member.policy
    held = withheld(member.registry, policy, live).get(item.id) if policy else None
    if held is not None:
        return (
            f"{shown} is published, and team.yaml does not share it as edited ({held.rule}): "
            "the next `mem team sync` retracts it"
        )
    return (
        f"{shown} is published: teammates see it as it was until you publish it again "
        f"(`mem team publish {shown}`)"
    )
