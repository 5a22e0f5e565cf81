"""The review page's actions, each a form post through the functions `mem resolve` and
`mem consolidate` call, so that each is written to the consolidation journal and can be taken
back:

* ``POST /review/resolve`` - ``a``, ``b``, ``keep`` (``a``, ``b`` or ``both``): `mem resolve
  A B --keep KEEP`;
* ``POST /review/merge`` - the group's items (``item``, each) and the one whose text it keeps
  (``keep``): `mem consolidate --apply` for that group alone;
* ``POST /review/archive`` - ``item``: `mem consolidate --apply --only decay` for that item
  alone, which must still be past its use;
* ``POST /review/undo`` - ``entry``: `mem consolidate --undo ENTRY`.

Each form carries ``seen``, the :func:`stamp` of the items as the page showed them: an item
changed since (by another tab, `mem`, an agent) refuses the action, which changes nothing, so
that nobody settles what they did not see. Each action then retracts the publications of
what it changed (:func:`memmesh.team.member.retract_changed`, as the commands do), all under
:attr:`Session.changing`. The answer is the review page with what happened in its notice.
"""

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from memmesh.consolidate.actions import Applied, Entry, apply, resolve, undo
from memmesh.consolidate.plan import DEFAULT_HALF_LIFE_DAYS, Duplicates, Plan
from memmesh.local import Item
from memmesh.local.aging import Aged, aged
from memmesh.local.store import Store
from memmesh.web.errors import BadForm
from memmesh.web.forms import choice, read_form, text, texts
from memmesh.web.session import Session, session_of

__all__ = ["routes", "stamp"]

Keep = Literal["a", "b", "both"]
_KEEPS: dict[str, Keep] = {"a": "a", "b": "b", "both": "both"}
_ID_MOST = 64
_GROUP_MOST = 100


def stamp(items: Sequence[Item]) -> str:
    """What the page saw of ``items``, in one short value: every change of an item moves
    its ``updated_at`` (or its status), and so its stamp."""
    seen = "\n".join(f"{item.id} {item.status} {item.updated_at!r}" for item in items)
    return hashlib.sha256(seen.encode()).hexdigest()[:16]


async def _resolve(request: Request) -> Response:
    session = session_of(request)
    form = await read_form(request, session.token)
    ids = [_item_id(form, "a"), _item_id(form, "b")]
    keep = _KEEPS[choice(form, "keep", _KEEPS)]
    seen = _seen(form)
    notice = await session.run(_resolved, session, ids, keep, seen)
    return session.templates.see_other("/review", notice)


def _resolved(session: Session, ids: list[str], keep: Keep, seen: str) -> str:
    store = session.store
    with session.changing:
        first, second = _unchanged(store, ids, seen)
        entry = resolve(store, first.id, second.id, keep)
        shown = store.short_ids([first.id, second.id])
        a, b = shown[first.id], shown[second.id]
        if keep == "both":
            said = f"kept both {a} and {b}: they are not raised again"
        else:
            said = f"kept {a}, archived {b}" if keep == "a" else f"kept {b}, archived {a}"
        return _after(session, said, entry)


async def _merge(request: Request) -> Response:
    session = session_of(request)
    form = await read_form(request, session.token)
    ids = _item_ids(form, "item")
    keep = _item_id(form, "keep")
    seen = _seen(form)
    if len(set(ids)) < 2:
        raise BadForm("item", "a merge takes at least two items")
    if keep not in ids:
        raise BadForm("keep", "must be one of the items merged")
    notice = await session.run(_merged, session, ids, keep, seen)
    return session.templates.see_other("/review", notice)


def _merged(session: Session, ids: list[str], keep: str, seen: str) -> str:
    store = session.store
    with session.changing:
        items = _unchanged(store, ids, seen)
        reason = f"{len(items)} items say the same (merged from the review page)"
        group = Duplicates(items=tuple(items), keep=items[ids.index(keep)].id, reason=reason)
        (entry,) = _done(apply(store, _plan(duplicates=(group,)), only=("duplicates",)))
        result = entry.result_id or ""
        shown = store.short_ids([*entry.item_ids, result])
        merged = ", ".join(shown[item_id] for item_id in entry.item_ids)
        said = f"merged {merged} into {shown.get(result, result)}"
        return _after(session, said, entry)


async def _archive(request: Request) -> Response:
    session = session_of(request)
    form = await read_form(request, session.token)
    item_id = _item_id(form, "item")
    notice = await session.run(_archived, session, item_id, _seen(form))
    return session.templates.see_other("/review", notice)


def _archived(session: Session, item_id: str, seen: str) -> str:
    store = session.store
    with session.changing:
        (item,) = _unchanged(store, [item_id], seen)
        shown = store.short_ids([item.id]).get(item.id, item.id)
        past = [
            a for a in aged(store, half_life_days=DEFAULT_HALF_LIFE_DAYS) if a.item.id == item.id
        ]
        if not past:
            raise BadForm("item", f"{shown} is not past its use now: there is nothing to archive")
        (entry,) = _done(apply(store, _plan(decay=(past[0],)), only=("decay",)))
        return _after(session, f"archived {shown}: {entry.reason}", entry)


async def _undo(request: Request) -> Response:
    session = session_of(request)
    form = await read_form(request, session.token)
    entry_id = text(form, "entry", most=_ID_MOST)
    notice = await session.run(_undone, session, entry_id)
    return session.templates.see_other("/review", notice)


def _undone(session: Session, entry_id: str) -> str:
    with session.changing:
        entry = undo(session.store, entry_id)
        shown = session.store.short_ids(list(entry.item_ids))
        again = ", ".join(shown.get(item_id, item_id) for item_id in entry.item_ids)
        return _after(session, f"took back {entry.id} ({entry.action} of {again})", None)


def _unchanged(store: Store, ids: list[str], seen: str) -> list[Item]:
    """The items ``ids`` name, as the page showed them (:func:`stamp`); an id that names no
    item is the store's refusal, an item changed since a :class:`BadForm`."""
    items = [store.get(item_id) for item_id in ids]
    if stamp(items) != seen:
        shown = ", ".join(store.short_ids([item.id for item in items]).values())
        problem = f"{shown} changed since the review page showed them (reload it to see them now)"
        raise BadForm("items", problem)
    return items


def _plan(*, duplicates: tuple[Duplicates, ...] = (), decay: tuple[Aged, ...] = ()) -> Plan:
    """A plan holding only the one action the page was asked for."""
    return Plan(
        duplicates=duplicates, contradictions=(), decay=decay, stale=(), compared=0, seconds=0.0
    )


def _done(applied: Applied) -> tuple[Entry, ...]:
    """What :func:`apply` did; what it skipped (an item changed by another process since it
    was read) is refused in its words, nothing having been changed."""
    for _, why in applied.skipped:
        raise BadForm("items", why)
    return applied.done


def _after(session: Session, said: str, entry: Entry | None) -> str:
    """The notice of an action: what it did, its journal entry, and the publications of what
    it changed taken back, as `mem forget` takes them back."""
    from memmesh.team.member import retract_changed

    retracted, warning = retract_changed(session.store, session.home)
    parts = [said + (f" (journal entry {entry.id})" if entry is not None else "")]
    if retracted:
        parts.append(
            "its publication is retracted"
            if len(retracted) == 1
            else f"{len(retracted)} publications are retracted"
        )
    return "; ".join(filter(None, [*parts, warning]))


def _item_id(form: FormData, name: str) -> str:
    return text(form, name, most=_ID_MOST)


def _item_ids(form: FormData, name: str) -> list[str]:
    """The ids of the field ``name`` (one value per item), at least one."""
    ids = texts(form, name, most=_GROUP_MOST)
    if not ids:
        raise BadForm(name, "is required")
    for item_id in ids:
        if len(item_id) > _ID_MOST:
            raise BadForm(name, f"is {len(item_id)} characters long; at most {_ID_MOST} are taken")
    return ids


def _seen(form: FormData) -> str:
    return text(form, "seen", most=_ID_MOST)


def _action(name: str, handler: Callable[[Request], Awaitable[Response]]) -> Route:
    return Route(f"/review/{name}", handler, methods=["POST"])


routes: list[BaseRoute] = [
    _action("resolve", _resolve),
    _action("merge", _merge),
    _action("archive", _archive),
    _action("undo", _undo),
]
