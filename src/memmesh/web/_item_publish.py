"""Publishing an item from its page: first what would leave, then, once confirmed, the
publish itself, both as `mem team publish` does them (:meth:`memmesh.team.member.Member.publish`).

* ``GET /items/{id}/publish`` - the dry run (`mem team publish ID --dry-run`): the policy's
  deciding rule, what would be done (publish as version N, unchanged, refused, retracted
  before), and the exact fields that would leave: the text as stored (a secret was redacted
  when it was remembered), kind, project, tags, with the team, version, author and embedder
  the envelope carries. Nothing is recorded or sent. ``force=yes`` plans it past the
  member's own eligibility and never rules, ``again=yes`` anew after a retraction.
* ``POST /items/{id}/publish`` - the publish, with the same ``force`` and ``again``: the
  policy decides again, all or nothing, and a refusal is the command's own message with
  nothing recorded. A detected secret never leaves, forced or not.

Both take ``to``, the audience as `mem team publish --to` takes it (names, comma-separated;
empty: as the command chooses without it); the dry run shows whom the item would be for and
who could read it.

The policy is read before the key, as the command reads them, so a home without a team gets
the command's own message of what is missing.
"""

from typing import TYPE_CHECKING
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from memmesh.local.items import Item
from memmesh.registry import Planned
from memmesh.web.forms import read_form, text
from memmesh.web.session import Session, session_of

if TYPE_CHECKING:
    from memmesh.team.member import Member

__all__ = ["routes"]

_YES = "yes"
# The longest audience a form may name: 64 groups and 64 members of 64 characters, and commas.
_MOST_TO = 9000


async def _plan_page(request: Request) -> Response:
    session = session_of(request)
    params = request.query_params
    force, again = params.get("force") == _YES, params.get("again") == _YES
    to = _audience(params.get("to", ""))
    item_id = request.path_params["item_id"]
    planned, team, mismatch, reach = await session.run(_planned, session, item_id, force, again, to)
    context = {
        "plan": planned,
        "to": ", ".join(to or ()),
        "audience": reach[0],
        "readers": reach[1],
        "item": planned.item,
        "team": team,
        "force": force,
        "again": again,
        "mismatch": mismatch,
        "again_url": f"/items/{planned.item.id}/publish?"
        + urlencode({"again": _YES, **({"force": _YES} if force else {})}),
        "shown": await session.run(_shown, session, planned.item),
    }
    return session.templates.page(request, "item_publish.html", context)


def _planned(
    session: Session, item_id: str, force: bool, again: bool, to: list[str] | None
) -> tuple[Planned, str, str | None, tuple[tuple[str, ...] | None, list[str] | None]]:
    """`mem team publish ID --dry-run`: the plan for the item, the team it would go to, the
    warning of a store embedded otherwise than the team's, and whom it would be for and who
    could read it (names; ``None``: the whole team)."""
    from memmesh.team.audience import readers
    from memmesh.team.groups import names_of
    from memmesh.team.status import embedder_mismatch

    with session.changing:
        member = _member(session)
        access = member.access_for()
        planned, _ = member.publish(
            [item_id], force=force, dry_run=True, again=again, to=to, access=access
        )
    plan = planned[0]
    me, project = member.identity.key_id, plan.item.project
    reach = names_of(access, plan.audience), readers(access, me, project, plan.audience)
    return plan, member.registry.team, embedder_mismatch(session.store, member.policy), reach


async def _publish(request: Request) -> Response:
    session = session_of(request)
    form = await read_form(request, session.token)
    force = text(form, "force", most=8, required=False) == _YES
    again = text(form, "again", most=8, required=False) == _YES
    to = _audience(text(form, "to", most=_MOST_TO, required=False))
    item_id = request.path_params["item_id"]
    item, notice = await session.run(_published, session, item_id, force, again, to)
    return session.templates.see_other(f"/items/{item.id}", notice)


def _published(
    session: Session, item_id: str, force: bool, again: bool, to: list[str] | None
) -> tuple[Item, str]:
    """`mem team publish ID`: recorded in the registry, then auto-synced when the policy
    asks for it; what happened, in words."""
    from memmesh.team.member import reported_action
    from memmesh.team.status import embedder_mismatch

    with session.changing:
        member = _member(session)
        planned, warning = member.publish([item_id], force=force, again=again, to=to)
    done = planned[0]
    shown = _shown(session, done.item)
    forced = " (forced)" if done.decision.forced else ""
    action = reported_action(done, dry_run=False)
    said = f"{action} v{done.version} {shown} [{done.decision.rule}]{forced}"
    mismatch = embedder_mismatch(session.store, member.policy)
    return done.item, "; ".join(filter(None, (said, warning, mismatch)))


def _member(session: Session) -> "Member":
    """The member as `mem team publish` acts for them: the policy read first (its absence or
    a fault in it refuses), then the key."""
    from memmesh.policy import load_policy
    from memmesh.registry import load_identity
    from memmesh.team.member import Member

    policy = load_policy(session.home)
    return Member(session.store, load_identity(session.home), policy)


def _audience(given: str) -> list[str] | None:
    """The names of ``to`` (comma-separated), ``None`` when it names none."""
    names = [name.strip() for name in given[:_MOST_TO].split(",") if name.strip()]
    return names or None


def _shown(session: Session, item: Item) -> str:
    return session.store.short_ids([item.id]).get(item.id, item.id)


routes: list[BaseRoute] = [
    Route("/items/{item_id}/publish", _plan_page, methods=["GET"]),
    Route("/items/{item_id}/publish", _publish, methods=["POST"]),
]
