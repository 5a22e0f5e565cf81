"""Whom a member's publish is for, and whether the roster lets them publish at all.

An item is published for the audience ``--to`` names; without it, for its latest
publication's (an item is never widened unasked), else for team.yaml's first matching
``share.audiences`` rule, else for the whole team. Names are groups and members of the signed
roster, or ``everyone``; one the roster lacks refuses the whole publish
(:class:`~memmesh.registry.errors.UnknownAudience`), and so does a roster that makes this member
a reader, or leaves them out of the project's publishers
(:class:`~memmesh.registry.errors.PublishNotAllowed`): fail closed, before anything is recorded.

The roster is the one this member verified: the chain read from the coordinator and verified
(the one kept in the home when the coordinator cannot be reached): :func:`member_access`.
"""

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memmesh.local.items import Item
from memmesh.net.errors import NetError
from memmesh.peer.chain import kept_access
from memmesh.policy import Policy
from memmesh.registry import Identity
from memmesh.registry.access import Access
from memmesh.registry.envelopes import Audience, Publication
from memmesh.registry.log import Live
from memmesh.registry.publish import AudienceOf
from memmesh.registry.roster_chain import display_names
from memmesh.team.groups import verified_access

__all__ = ["choose", "member_access", "readers", "restricted_reach"]


def member_access(policy: Policy, identity: Identity, home: Path) -> Access:
    """The roster's rules for deciding a publish: the coordinator's verified chain (what it
    holds beyond the chain kept in ``home``), else, when it does not answer, the kept one (or
    none): the coordinator checks again as it receives, by the roster as it stands then."""
    kept = kept_access(home, policy)
    if policy.roster_root is None or policy.coordinator is None:
        return kept or Access(None)
    try:
        return verified_access(policy, identity, home)
    except NetError:
        return kept or Access(None)


def choose(
    access: Access, policy: Policy, identity: Identity, name: str, to: Sequence[str] | None
) -> AudienceOf:
    """The audience of each item published now (see the module), checked: raises
    :class:`UnknownAudience` for ``to`` naming what the roster lacks. ``name`` is this member's,
    for the refusal of a member who may not publish an item's project."""
    chosen = access.resolve(to) if to else None
    by_rule: dict[tuple[str, ...], Audience | None] = {}

    def audience_of(item: Item, latest: Publication | None) -> Audience | None:
        access.check_publish(identity.key_id, name, item.project)
        if to:
            return chosen
        if latest is not None:
            return latest.audience
        names = policy.share.audience_for(item.project, item.kind)
        if names is None:
            return None
        if names not in by_rule:
            by_rule[names] = access.resolve(names)
        return by_rule[names]

    return audience_of


def readers(
    access: Access, author: str, project: str, audience: Audience | None
) -> list[str] | None:
    """Who may read an item of ``author`` (a member id) in ``project`` for ``audience`` now,
    by the names output shows. Without a signed roster, which does not say who the team is,
    an item for the whole team has ``None`` (every member) and one with an audience its
    author alone."""
    shown = display_names(access.state) if access.state else {}
    if access.state is None:
        return None if audience is None else [shown.get(author, "you")]
    members = access.readers(author=author, project=project, audience=audience)
    return [shown.get(m.key_id, m.name) for m in members]


def restricted_reach(
    policy: Policy, home: Path, me: str, live: Mapping[str, Live]
) -> list[dict[str, Any]]:
    """This member's live publications that are for some of the team, oldest first: each
    one's ``id``, ``audience`` (names) and ``readers`` now (names; ``None``: every member), by
    the roster kept in ``home`` (`mem team status` works offline)."""
    from memmesh.team.groups import names_of

    access = kept_access(home, policy) or Access(None)
    rows = []
    mine = [e.publication for e in live.values() if e.publication.key_id == me]
    for publication in sorted(mine, key=lambda p: p.published_at):
        if publication.audience is None:
            continue
        rows.append(
            {
                "id": publication.item_id,
                "audience": list(names_of(access, publication.audience) or ()),
                "readers": readers(access, me, publication.project, publication.audience),
            }
        )
    return rows
