"""The team section of the page (docs/ui.md): what `mem team ...` shows and does, for the
member whose page this is.

=========================  =====================================================================
``GET /team``              where the member's items stand, per project (``?project=P``: each
                           item with the rule that decides it), as `mem team status` and
                           `mem team publish --dry-run` decide
``GET /team/feed``         who published, revised or retracted what (`mem team feed`)
``GET /team/members``      the verified roster; an admin invites, promotes, demotes, revokes
``POST /team/members/...`` ``invite``, ``promote``, ``demote``, ``revoke``
``GET /team/sources``      whether the coordinator and each peer answer, and how fast
``GET /team/log``          the member's signed registry log and `mem team verify`'s verdict
``GET /team/disclosures``  who was served the member's items (`mem team disclosures`)
``GET|POST /team/ask``     recall-team (`mem team recall-team`)
=========================  =====================================================================

Without a team (no team.yaml) every page shows how to start or join one. A call to the team
runs in a worker thread with a short timeout, and a source that does not answer is said on
the page (:mod:`memmesh.web._team_setup`); the roster's changes go through the functions the
`mem team` commands use, so the coordinator and the signed roster refuse what they refuse
there.
"""

import logging
import threading
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from memmesh.errors import MemmeshError
from memmesh.policy import Policy, load_policy
from memmesh.registry import load_identity
from memmesh.registry.identity import Identity
from memmesh.text import counted
from memmesh.web import _team_ask as asking
from memmesh.web import _team_feed as feeds
from memmesh.web import _team_roster as rosters
from memmesh.web._team_log import log_view
from memmesh.web._team_setup import READ_SECONDS, Standing, failure, reach, standing
from memmesh.web._team_sources import contacts_of, health
from memmesh.web._team_status import current
from memmesh.web.forms import choice, read_form, text
from memmesh.web.session import Session, session_of

__all__ = ["routes", "warm"]

# The section's tabs: (key, path, title).
TABS = (
    ("status", "/team", "Status"),
    ("feed", "/team/feed", "Feed"),
    ("members", "/team/members", "Members"),
    ("sources", "/team/sources", "Sources"),
    ("log", "/team/log", "Log"),
    ("disclosures", "/team/disclosures", "Disclosures"),
    ("ask", "/team/ask", "Ask the team"),
)
# Seconds the sources' checks may take in all (each source has its own, shorter, timeout).
_HEALTH_SECONDS = 12.0
_log = logging.getLogger("memmesh.web")


def _render(request: Request, stand: Standing, name: str, tab: str, **context: Any) -> Response:
    session = session_of(request)
    values = {**stand.context(), "tab": tab, "team_tabs": TABS, **context}
    return session.templates.page(request, name, values)


def _keys(stand: Standing) -> tuple[Policy, Identity]:
    """The team.yaml and key of a member who is ``ready``."""
    assert stand.policy is not None
    assert stand.identity is not None
    return stand.policy, stand.identity


async def _standing(request: Request) -> tuple[Session, Standing]:
    session = session_of(request)
    return session, await session.run(standing, session)


async def status_page(request: Request) -> Response:
    session, stand = await _standing(request)
    if not stand.ready:
        return _render(request, stand, "team.html", "status")
    project = request.query_params.get("project", "").strip()
    view = await session.run(current, session.store, session.home, session.changing, project)
    return _render(request, stand, "team.html", "status", view=view)


def warm(app: Starlette) -> threading.Thread:
    """Count where the member's items stand in a background thread, as a visit to ``/team``
    counts it, so that the first visit finds it counted; call once the app is made. A home
    without a usable team counts nothing. Returns the thread (a daemon)."""
    session: Session = app.state.session
    thread = threading.Thread(target=_warm, args=(session,), name="memmesh-ui-warm", daemon=True)
    thread.start()
    return thread


def _warm(session: Session) -> None:
    try:
        if standing(session).ready:
            current(session.store, session.home, session.changing)
    except Exception as exc:  # a head start only: the first visit counts, and says what failed
        _log.debug("counting the team standing ahead of a visit failed: %s", exc)


async def feed_page(request: Request) -> Response:
    session, stand = await _standing(request)
    limit = feeds.number(
        request.query_params.get("limit"), "limit", least=1, most=feeds.FEED_MOST, default=50
    )
    if not stand.ready:
        return _render(request, stand, "team_feed.html", "feed")
    policy, identity = _keys(stand)
    try:
        view = await reach(
            READ_SECONDS,
            feeds.feed,
            policy,
            identity,
            session.home,
            session.store,
            limit,
        )
    except MemmeshError as exc:
        return _render(request, stand, "team_feed.html", "feed", failure=failure(exc), limit=limit)
    return _render(request, stand, "team_feed.html", "feed", view=view, failure=None, limit=limit)


async def members_page(request: Request) -> Response:
    session, stand = await _standing(request)
    if not stand.ready:
        return _render(request, stand, "team_members.html", "members")
    policy, identity = _keys(stand)
    try:
        view = await reach(READ_SECONDS, rosters.roster_view, policy, identity, session.home)
    except MemmeshError as exc:
        return _render(request, stand, "team_members.html", "members", failure=failure(exc))
    context = {"view": view, "failure": None, "ttls": list(rosters.TTLS)}
    return _render(request, stand, "team_members.html", "members", **context)


async def invite(request: Request) -> Response:
    session = session_of(request)
    form = await read_form(request, session.token)
    name = rosters.checked_name(text(form, "name", most=64))
    ttl = rosters.TTLS[choice(form, "ttl", rosters.TTLS)]
    admin = form.get("admin") == "on"

    def work() -> Any:
        policy, identity = load_policy(session.home), load_identity(session.home)
        with session.changing:
            return rosters.invite(policy, identity, session.home, name, ttl=ttl, admin=admin)

    invited = await session.run(work)
    stand = await session.run(standing, session)
    return _render(request, stand, "team_invited.html", "members", invited=invited)


async def revoke(request: Request) -> Response:
    session = session_of(request)
    form = await read_form(request, session.token)
    member = rosters.checked_member(text(form, "member", most=64))
    purge = form.get("purge") == "on"

    def work() -> Any:
        policy, identity = load_policy(session.home), load_identity(session.home)
        with session.changing:
            revoked = rosters.revoke(policy, identity, session.home, member, purge=purge)
        return policy.team, revoked

    team, revoked = await session.run(work)
    purged = f"; {counted(revoked.purged, 'published item')} purged" if purge else ""
    who = f"{revoked.member.name} ({revoked.member.key_id})"
    return session.templates.see_other(
        "/team/members", f"revoked {who} from team {team}: their key is refused from now on{purged}"
    )


async def promote(request: Request) -> Response:
    return await _change_role(request, admin=True)


async def demote(request: Request) -> Response:
    return await _change_role(request, admin=False)


async def _change_role(request: Request, *, admin: bool) -> Response:
    session = session_of(request)
    form = await read_form(request, session.token)
    member = rosters.checked_member(text(form, "member", most=64))

    def work() -> Any:
        policy, identity = load_policy(session.home), load_identity(session.home)
        with session.changing:
            changed = rosters.change_role(policy, identity, session.home, member, admin=admin)
        return policy.team, changed

    team, changed = await session.run(work)
    now = "now an admin" if admin else "no longer an admin"
    return session.templates.see_other(
        "/team/members", f"{changed.name} ({changed.key_id}) is {now} of team {team}"
    )


async def sources_page(request: Request) -> Response:
    session, stand = await _standing(request)
    if not stand.ready:
        return _render(request, stand, "team_sources.html", "sources")
    policy, identity = _keys(stand)
    contacts = contacts_of(session)
    try:
        view = await reach(_HEALTH_SECONDS, health, policy, identity, session.home, contacts)
    except MemmeshError as exc:
        return _render(request, stand, "team_sources.html", "sources", failure=failure(exc))
    return _render(request, stand, "team_sources.html", "sources", view=view, failure=None)


async def log_page(request: Request) -> Response:
    session, stand = await _standing(request)
    if not stand.ready:
        return _render(request, stand, "team_log.html", "log")

    def work() -> Any:
        return log_view(session.member(reconcile_first=False))

    return _render(request, stand, "team_log.html", "log", view=await session.run(work))


async def disclosures_page(request: Request) -> Response:
    session, stand = await _standing(request)
    params = request.query_params
    item = params.get("item", "").strip()
    limit = feeds.number(
        params.get("limit"), "limit", least=1, most=feeds.DISCLOSURES_MOST, default=100
    )
    per_asker = feeds.number(
        params.get("per_asker"), "per_asker", least=0, most=feeds.DISCLOSURES_MOST, default=10
    )
    asked = {"item": item, "limit": limit, "per_asker": per_asker}
    if not stand.ready:
        return _render(request, stand, "team_disclosures.html", "disclosures", asked=asked)
    policy, identity = _keys(stand)
    try:
        view = await reach(
            READ_SECONDS,
            feeds.disclosures,
            policy,
            identity,
            session.store,
            item=item,
            limit=limit,
            per_asker=per_asker,
        )
    except MemmeshError as exc:
        if exc.status == 400:
            raise  # an item id the store refuses: bad input, said as such
        context = {"failure": failure(exc), "asked": asked}
        return _render(request, stand, "team_disclosures.html", "disclosures", **context)
    context = {"view": view, "failure": None, "asked": asked}
    return _render(request, stand, "team_disclosures.html", "disclosures", **context)


async def ask_page(request: Request) -> Response:
    session = session_of(request)
    form = await read_form(request, session.token) if request.method == "POST" else None
    stand = await session.run(standing, session)
    projects = await session.run(lambda: sorted(session.store.counts()["by_project"]))
    context: dict[str, Any] = {
        "projects": projects,
        "question": asking.Asked(query=""),
        "answer": None,
        "failure": None,
        "fate_words": asking.cut_words,
    }
    if form is None or not stand.ready:
        return _render(request, stand, "team_ask.html", "ask", **context)
    policy, identity = _keys(stand)
    context["question"] = question = asking.asked(form)
    try:
        context["answer"] = await session.run(asking.ask, session.store, policy, identity, question)
    except MemmeshError as exc:
        context["failure"] = failure(exc)
    return _render(request, stand, "team_ask.html", "ask", **context)


routes: list[BaseRoute] = [
    Route("/team", status_page, methods=["GET"]),
    Route("/team/feed", feed_page, methods=["GET"]),
    Route("/team/members", members_page, methods=["GET"]),
    Route("/team/members/invite", invite, methods=["POST"]),
    Route("/team/members/revoke", revoke, methods=["POST"]),
    Route("/team/members/promote", promote, methods=["POST"]),
    Route("/team/members/demote", demote, methods=["POST"]),
    Route("/team/sources", sources_page, methods=["GET"]),
    Route("/team/log", log_page, methods=["GET"]),
    Route("/team/disclosures", disclosures_page, methods=["GET"]),
    Route("/team/ask", ask_page, methods=["GET", "POST"]),
]
