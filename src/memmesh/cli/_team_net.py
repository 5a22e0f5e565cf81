"""The work of the networked `mem team` commands (serve, peers, feed, recall-team, and the
check of `status --check`), registered in :mod:`memmesh.cli.team`."""

import argparse
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from memmesh.cli._common import emit, home_of, note, open_store, shown_ids, warn
from memmesh.errors import ExitCode
from memmesh.local.items import GLOBAL, check_query, iso
from memmesh.local.project import resolve_project
from memmesh.net.settings import ServeSettings
from memmesh.policy import Policy, load_policy
from memmesh.registry import Identity, load_identity
from memmesh.team.status import embedder_mismatch
from memmesh.text import counted, printable
from memmesh.views import feed_entry_json, peer_json, team_answer_json, team_explanation_json

if TYPE_CHECKING:
    from memmesh.local.anchors import Staleness
    from memmesh.team.feed import FeedEntry
    from memmesh.team.recall import PeerSeen, TeamAnswer, TeamHit

__all__ = ["run_feed", "run_peers", "run_recall_team", "run_serve", "team_check"]

# Characters of an item's text a feed line shows at most (the rest is cut, with a marker).
_EXCERPT = 100


def run_serve(args: argparse.Namespace) -> int:
    # The server stack is imported only by the commands that use it.
    from memmesh.net.server import listen
    from memmesh.peer.lock import peer_lock
    from memmesh.peer.serve import peer_daemon

    home = home_of(args)
    team = load_policy(home).team  # missing or invalid: nothing starts, and no lock is taken
    # One daemon per home, refused at once naming the running one; then bound before
    # anything starts (heartbeats announce this address) or is said: a port in use is one
    # line, and exit 1.
    with peer_lock(home, host=args.host, port=args.port) as lock:
        sock = listen(ServeSettings(host=args.host, port=args.port))
        with (
            contextlib.closing(sock),
            peer_daemon(
                home,
                lambda: open_store(args, serving=True),
                host=args.host,
                port=args.port,
                advertise=args.advertise,
                interfaces=args.interface,
                heartbeat=args.heartbeat,
                tls=args.tls,
            ) as daemon,
        ):
            lock.record(url=daemon.url, pin=daemon.certificate.pin if daemon.certificate else "")
            heartbeats = f" (heartbeat to {daemon.coordinator})" if daemon.coordinator else ""
            note(f"memmesh peer {daemon.key_id} on {daemon.url}{heartbeats}")
            unreachable = daemon.reach_problem
            warn(unreachable.line if unreachable else None, "peer_unreachable")
            daemon.run(sock)
            revoked = daemon.revoked
    if revoked is not None:
        from memmesh.cli.errors import TeamRefused

        raise TeamRefused(
            f"this peer daemon stopped: an admin of team {team} revoked "
            f"this member's key {daemon.key_id} (the coordinator says: {revoked.message}), and "
            "a revoked key stays refused; to take part again, ask an admin for a new join code "
            "and join with a new key, from a new home: `mem --home NEW_HOME team join CODE`",
            revoked.http_status,
        )
    return ExitCode.OK


def run_peers(args: argparse.Namespace) -> int:
    home = home_of(args)
    policy = load_policy(home)
    identity = load_identity(home)
    seen, problems, silent = _peers(args, policy, identity)
    rows = [peer_json(p, silent) for p in seen]
    lines = []
    for peer, row in zip(seen, rows, strict=True):
        answers = "" if row["answers"] is None else f"  {_answer(row)}"
        lines.append(
            f"{printable(peer.name):<12} {peer.key_id}  {peer.url:<28} via "
            f"{peer.learned_from:<9} {printable(peer.embedder)}  "
            f"last seen {row['last_seen_s']}s ago{answers}"
        )
    lines = lines or ["no peers online"]
    lines += [f"note: {printable(problem)}" for problem in problems]
    emit(args, {"peers": rows, "problems": problems}, "\n".join(lines))
    return ExitCode.OK


def team_check(
    args: argparse.Namespace, policy: Policy, identity: Identity
) -> tuple[dict[str, Any], list[str], ExitCode]:
    """`mem team status --check`: the ``check`` part of its JSON, its lines, its exit code.

    The peers are asked unless the coordinator refuses this member (they hold its roster)."""
    from memmesh.team.check import check_coordinator

    checked = check_coordinator(policy, identity, timeout=args.timeout, home=home_of(args))
    url = checked.url or "-"
    if checked.state == "accepted":
        who = f"{checked.name} in team {policy.team}" if checked.name else f"team {policy.team}"
        if not checked.roster:
            who += ", whose roster is empty: any key with the token is accepted"
        lines = [f"check: coordinator {url}: reachable, accepts this member ({who})"]
    elif checked.state == "refused":
        lines = [f"check: coordinator {url}: reachable, does not accept this member: "]
        lines[0] += checked.problem
    elif checked.state == "unreachable":
        lines = [f"check: coordinator {url}: not reachable: {checked.problem}"]
    else:
        lines = [f"check: coordinator {url}: {checked.problem}"]
    rows: list[dict[str, Any]] = []
    # A refused member, or a roster that does not verify: no peer is asked by it.
    if checked.state not in ("refused", "untrusted"):
        seen, _, silent = _peers(args, policy, identity, check=True)
        rows = [peer_json(p, silent) for p in seen]
        lines += [
            printable(f"check: peer {row['name']} ({row['key_id']}) {row['url']}: ")
            + printable(_answer(row))
            for row in rows
        ] or ["check: no teammate's peer is online"]
    data = {"coordinator": msgspec.to_builtins(checked), "peers": rows}
    return data, lines, ExitCode(checked.exit_code)


def _peers(
    args: argparse.Namespace, policy: Policy, identity: Identity, *, check: bool = False
) -> tuple[list["PeerSeen"], list[str], dict[str, str] | None]:
    """The peers listed, the problems met, and (with ``check`` or ``--check``) why each that
    does not answer now does not."""
    from memmesh.team.check import probe_peers
    from memmesh.team.recall import list_peers

    seen, problems = list_peers(
        policy,
        identity=identity,
        interfaces=getattr(args, "interface", None),
        home=home_of(args),
        timeout=args.timeout,
    )
    if not (check or args.check):
        return seen, problems, None
    return seen, problems, probe_peers(policy, identity, seen, timeout=args.timeout)


def _answer(row: dict[str, Any]) -> str:
    return "answers" if row["answers"] else f"not answering: {row['problem']}"


def run_feed(args: argparse.Namespace) -> int:
    from memmesh.team.feed import team_feed

    home = home_of(args)
    policy = load_policy(home)
    identity = load_identity(home)
    feed = team_feed(policy, identity, limit=args.limit, home=home)
    # The member's own items by the id the local commands show; a teammate's whole.
    own = [e.item_id for e in feed.entries if e.key_id == identity.key_id]
    with open_store(args) as store:
        shown = shown_ids(store, own, pad=False)
    rows = [feed_entry_json(e) for e in feed.entries]
    lines = [
        _feed_line(e, shown.get(e.item_id, e.item_id) if e.key_id == identity.key_id else None)
        for e in feed.entries
    ]
    lines = lines or [f"nothing shared in team {printable(policy.team)} yet"]
    if feed.dropped:
        lines.append("dropped: " + ", ".join(f"{n} {why}" for why, n in feed.dropped.items()))
    emit(
        args,
        {"entries": rows, "dropped": feed.dropped, "complete": feed.complete},
        "\n".join(lines),
    )
    if not feed.complete:
        warn(
            "the feed did not end where it should: these are the newest changes read",
            "feed_incomplete",
        )
    return ExitCode.OK


def _feed_line(entry: "FeedEntry", shown: str | None) -> str:
    """One entry on one line, its item by ``shown`` when it is the member's own: every field
    but the times, numbers and own ids comes from the network."""
    standing = f" ({entry.standing.replace('_', ' ')})" if entry.standing else ""
    head = f"{iso(entry.at)}  {printable(entry.author)}{standing}  {entry.action} v{entry.version}"
    head += f"  {shown or printable(entry.item_id)}"
    if entry.action == "retracted":
        return head
    text = entry.text if len(entry.text) <= _EXCERPT else entry.text[: _EXCERPT - 1] + "\u2026"
    where = printable(f"[{entry.kind}, {entry.project}]")
    return f"{head}  {where} {printable(text)}"


def run_recall_team(args: argparse.Namespace) -> int:
    from memmesh.cli._team_explain import explanation_lines, scope_json, scope_line
    from memmesh.team.contradictions import flag_answer
    from memmesh.team.recall import recall_team
    from memmesh.team.stale import stale_in_checkout
    from memmesh.team.tallies import note_answer

    check_query(args.query, args.k)  # a query no recall takes is refused before the policy
    home = home_of(args)
    policy = load_policy(home)
    identity = load_identity(home)
    project = GLOBAL if args.all_projects else resolve_project(args.project)
    with open_store(args) as store:
        warn(embedder_mismatch(store, policy), "embedder_mismatch")
        # As Member.ask_team asks (every source gets the timeout, the whole ask a second
        # more), with the scope it does not take.
        answer = recall_team(
            store, policy, args.query, identity=identity, k=args.k, project=project,
            all_projects=args.all_projects, author=args.author, timeout=args.timeout,
            deadline=args.timeout + 1.0, interfaces=args.interface,
        )  # fmt: skip
        note_answer(store, identity, answer)  # so that `mem outcome` can credit them
    answer = flag_answer(answer)  # a teammate who says otherwise is named
    stale = stale_in_checkout(answer, Path.cwd())  # what changed in the asker's own checkout
    data = {**team_answer_json(answer, stale), "scope": scope_json(args, answer)}
    lines = [_answer_text(answer, scope_line(args, answer), stale)]
    if args.explain and answer.explanation is not None:
        data["explanation"] = team_explanation_json(answer.explanation)
        lines += explanation_lines(answer.explanation, args.author)
    emit(args, data, "\n".join(lines))
    for warning in answer.warnings:
        warn(warning, "lexical_ranking")
    return ExitCode.OK


def _answer_text(
    answer: "TeamAnswer",
    searched: str,
    stale: "dict[tuple[str, str], list[Staleness]] | None" = None,
) -> str:
    # Every field but the score comes from the network: each is shown on the hit's one line,
    # and each teammate who says otherwise on one line under it.
    lines = []
    for hit in answer.hits:
        lines.append(
            f"{hit.score:.3f}  {printable(hit.author):<10} {printable(hit.id)}  "
            f"[{_labels(hit)}] {printable(hit.text)}"
            f"  (via {printable(hit.source)})" + _also_said(hit)
        )
        lines += [
            printable(f"   {other.author} says otherwise: {other.text} ({other.item_id})")
            for other in hit.contradicted_by
        ]
        changed = (stale or {}).get((hit.key_id, hit.id))
        if changed:
            from memmesh.local.anchors import note as stale_note

            lines.append(printable(f"   in your checkout, {stale_note(changed)}"))
    lines = lines or ["nothing relevant from the team (abstained)"]
    parts = []
    for source in answer.sources:
        ok = source.status == "ok"
        outcome = f"{source.status}, {counted(source.hits, 'hit')}" if ok else source.status
        detail = f": {source.error}" if source.error else ""
        parts.append(printable(f"{source.name} {outcome}{detail}"))
    lines += ["sources: " + "; ".join(parts), searched]
    if answer.dropped:
        lines.append("dropped: " + ", ".join(f"{n} {why}" for why, n in answer.dropped.items()))
    return "\n".join(lines)


def _labels(hit: "TeamHit") -> str:
    """``kind, project`` and, for an item published for some of the team, whom for."""
    from memmesh.text import audience_label

    labels = [hit.kind, hit.project, audience_label(hit.audience)]
    return printable(", ".join(label for label in labels if label))


def _also_said(hit: "TeamHit") -> str:
    """The other authors stating the hit's fact, each with their item's id."""
    if not hit.also:
        return ""
    return "  also said by: " + ", ".join(
        f"{printable(also.author)} {printable(also.id)}" for also in hit.also
    )
