"""`mem outcome`: an item's track record, by its id or for what the newest answer showed.

An id names one of the member's own items, or else a teammate's item this member was given
(by recall-team, or shown from the team cache): that one is credited as a tally, whose counts
(never text) reach its author with the next `mem team sync`. ``--last`` credits every item the
newest answer showed, whichever gave it: a recall (its trace in the journal), a recall-team
(:mod:`memmesh.team.last`: the member's own items it showed, and teammates' as tallies) or a
session hook (its row in the hooks' journal, with the teammates' items it showed). When the
newest showed nothing, nothing is credited, and the error says which answer that was: never
an older answer's items.
"""

import argparse
from typing import TYPE_CHECKING, Any, cast

from memmesh.cli._common import emit, home_of, open_store, shown_id, shown_ids, warn
from memmesh.cli.errors import UsageError
from memmesh.errors import ExitCode, MemmeshError
from memmesh.local import InvalidInput, outcomes
from memmesh.local.errors import ItemNotFound
from memmesh.local.ids import SHOWN_LENGTH
from memmesh.local.items import Item, iso

if TYPE_CHECKING:
    from memmesh.local.outcomes import Outcome
    from memmesh.local.store import Store
    from memmesh.team.tallies import Credited

__all__ = ["run_outcome"]


def run_outcome(args: argparse.Namespace) -> int:
    if args.last == (args.id is not None):
        raise UsageError("outcome", "give an item's id, or --last (not both)")
    with open_store(args) as store:
        if args.id is not None:
            try:
                item = store.outcome(args.id, args.result)
            except ItemNotFound:
                return _teammate_outcome(args, store)  # not ours: a teammate's item we were given?
            emit(args, _credited(item), _credited_line(item, shown_id(store, item.id)))
            return ExitCode.OK
        answered, item_ids, team_refs, what = _last_answer(args, store)
        items = [store.outcome(item_id, args.result) for item_id in item_ids]
        shown = shown_ids(store, [item.id for item in items])
        team = _credit_teammates(args, store, team_refs)
    data = {
        **answered,
        "credited": [_credited(item) for item in items],
        "teammates": [_teammate(credited) for credited in team],
    }
    lines = [_credited_line(item, shown[item.id]) for item in items]
    lines += [_teammate_line(args, credited) for credited in team]
    emit(args, data, f"{args.result}, for what {what} returned:\n" + "\n".join(lines))
    return ExitCode.OK


def _last_answer(
    args: argparse.Namespace, store: "Store"
) -> tuple[dict[str, Any], tuple[str, ...], tuple[str, ...], str]:
    """The newest answer: a recall's (its trace), a recall-team's, or a session hook's that
    showed items (the brief's or the prompt hook's); what it was, the member's item ids, the
    teammates' items it showed (``member id/item id``), and its name."""
    from memmesh.local import last_trace
    from memmesh.local.hooklog import last_run
    from memmesh.team.last import last_team_recall

    trace = last_trace(store)
    run = last_run(home_of(args), shown=True)
    team = last_team_recall(store)
    newest = max(
        (trace.at if trace else None, run.at if run else None, team.at if team else None),
        key=lambda at: -1.0 if at is None else at,
    )
    if team is not None and team.at == newest:
        what = f"recall-team `{team.query}`"
        if not team.showed:
            raise InvalidInput(
                f"the newest recall, {what}, returned nothing to credit; give the item's id instead"
            )
        answered = {"from": "recall-team", "query": team.query, "at": iso(team.at)}
        return answered, team.own, team.team, what
    if run is not None and run.at == newest:
        answered = {"from": run.hook, "at": iso(run.at)}
        return answered, run.local_ids, run.team_ids, f"the {run.hook} hook"
    if trace is None or not trace.item_ids:
        raise InvalidInput(
            "the newest recall returned nothing to credit; give the item's id instead"
        )
    answered = {"from": "recall", "trace": trace.id, "query": trace.query, "at": iso(trace.at)}
    return answered, trace.item_ids, (), f"`{trace.query}`"


def _credit_teammates(
    args: argparse.Namespace, store: "Store", refs: tuple[str, ...]
) -> list["Credited"]:
    """Each teammate's item of ``refs`` credited; one no longer known (retracted since) is
    said in a warning and left out."""
    from memmesh.team.tallies import credit_teammate

    credited = []
    for ref in refs:
        try:
            credited.append(
                credit_teammate(home_of(args), store, ref, cast("Outcome", args.result))
            )
        except MemmeshError as exc:
            warn(f"a teammate's item was not credited: {exc.message}", "teammate_not_credited")
    return credited


def _credited(item: Item) -> dict[str, Any]:
    return {"id": item.id, "outcome_score": round(item.outcome_score, 4), "item": item.to_dict()}


def _credited_line(item: Item, shown: str) -> str:
    line = f"{shown}: score {item.outcome_score:+.2f}"
    if item.outcome_score <= outcomes.EXCLUDE_AT:
        line += " (left out of recall until its failures fade)"
    return line


def _teammate_outcome(args: argparse.Namespace, store: "Store") -> int:
    from memmesh.team.tallies import credit_teammate

    credited = credit_teammate(home_of(args), store, args.id, args.result)
    warn(credited.warning)
    emit(args, _teammate(credited), _teammate_line(args, credited, full=True))
    return ExitCode.OK


def _teammate(credited: "Credited") -> dict[str, Any]:
    given = credited.item
    return {
        "id": given.item_id, "author": given.author, "author_id": given.author_key_id,
        "teammate": True, "sent": credited.sent,
        "tally": {"worked": given.worked, "failed": given.failed, "partial": given.partial},
    }  # fmt: skip


def _teammate_line(args: argparse.Namespace, credited: "Credited", *, full: bool = False) -> str:
    given = credited.item
    when = (
        f"sent to {given.author}"
        if credited.sent
        else f"it reaches {given.author} with the next `mem team sync`"
    )
    shown = given.item_id[:SHOWN_LENGTH]
    if full:
        return f"credited {given.author}'s item {shown}: {args.result}; {when}"
    return f"{given.author}'s {shown}: {when}"
