"""The work of the networked `mem team` commands (serve, peers, recall-team), registered in
:mod:`memmesh.cli.team`."""

import argparse
import contextlib
import time
from typing import TYPE_CHECKING, Any

import msgspec

from memmesh.cli._common import emit, home_of, note, open_store, warn
from memmesh.errors import ExitCode
from memmesh.local.project import resolve_project
from memmesh.net.settings import ServeSettings
from memmesh.policy import load_policy
from memmesh.registry import load_identity
from memmesh.team.member import Member
from memmesh.text import printable

if TYPE_CHECKING:
    from memmesh.team.recall import TeamAnswer

__all__ = ["answer_json", "run_peers", "run_recall_team", "run_serve"]


def run_serve(args: argparse.Namespace) -> int:
    # The server stack is imported only by the commands that use it.
    from memmesh.net.server import listen, serve
    from memmesh.peer.serve import peer_daemon

    # Bound before anything starts (heartbeats announce this address) or is said: a port in
    # use is one line, and exit 1.
    sock = listen(ServeSettings(host=args.host, port=args.port))
    with (
        contextlib.closing(sock),
        peer_daemon(
            home_of(args),
            lambda: open_store(args, serving=True),
            host=args.host,
            port=args.port,
            advertise=args.advertise,
            interfaces=args.interface,
            heartbeat=args.heartbeat,
            tls=args.tls,
        ) as daemon,
    ):
        heartbeats = f" (heartbeat to {daemon.coordinator})" if daemon.coordinator else ""
        note(f"memmesh peer {daemon.key_id} on {daemon.url}{heartbeats}")
        serve(daemon.app, daemon.settings, token=daemon.token, sock=sock)
    return ExitCode.OK


def run_peers(args: argparse.Namespace) -> int:
    from memmesh.team.recall import list_peers

    home = home_of(args)
    policy = load_policy(home)
    identity = load_identity(home)
    seen, problems = list_peers(policy, identity=identity, interfaces=args.interface, home=home)
    now = time.time()
    data = {"peers": [msgspec.to_builtins(p) for p in seen], "problems": problems}
    lines = [
        f"{printable(p.name):<12} {p.key_id}  {p.url:<28} via {p.learned_from:<9} "
        f"{printable(p.embedder)}  expires in {max(0, round(p.expires_at - now))}s"
        for p in seen
    ] or ["no peers online"]
    lines += [f"note: {printable(problem)}" for problem in problems]
    emit(args, data, "\n".join(lines))
    return ExitCode.OK


def run_recall_team(args: argparse.Namespace) -> int:
    home = home_of(args)
    policy = load_policy(home)
    identity = load_identity(home)
    project = resolve_project(args.project)
    with open_store(args) as store:
        member = Member(store, identity, policy, reconcile_first=False)
        answer = member.ask_team(
            args.query,
            k=args.k,
            project=project,
            author=args.author,
            timeout=args.timeout,
            interfaces=args.interface,
        )
    emit(args, answer_json(answer), _answer_text(answer))
    for warning in answer.warnings:
        warn(warning)
    return ExitCode.OK


def answer_json(answer: "TeamAnswer") -> dict[str, Any]:
    """The ``--json`` shape of recall-team."""
    return {
        "query": answer.query,
        "hits": [msgspec.to_builtins(hit) for hit in answer.hits],
        "abstained": answer.abstained,
        "sources": [msgspec.to_builtins(source) for source in answer.sources],
        "dropped": answer.dropped,
        "warnings": answer.warnings,
    }


def _answer_text(answer: "TeamAnswer") -> str:
    # Every field but the score comes from the network: each is shown on the hit's one line.
    lines = [
        f"{hit.score:.3f}  {printable(hit.author):<10} {printable(hit.id)}  "
        f"[{printable(hit.kind)}, {printable(hit.project)}] {printable(hit.text)}"
        f"  (via {printable(hit.source)})"
        for hit in answer.hits
    ] or ["nothing relevant from the team (abstained)"]
    parts = []
    for source in answer.sources:
        outcome = f"{source.status}, {source.hits} hits" if source.status == "ok" else source.status
        detail = f": {source.error}" if source.error else ""
        parts.append(printable(f"{source.name} {outcome}{detail}"))
    lines.append("sources: " + "; ".join(parts))
    if answer.dropped:
        lines.append("dropped: " + ", ".join(f"{n} {why}" for why, n in answer.dropped.items()))
    return "\n".join(lines)
