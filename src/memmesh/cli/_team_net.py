"""The networked `mem team` commands: serve, peers and recall-team."""

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING, Any

import msgspec

from memmesh.cli._common import emit, home_of, open_store
from memmesh.local.project import resolve_project
from memmesh.net.settings import ServeSettings
from memmesh.policy import load_policy
from memmesh.registry import load_identity

if TYPE_CHECKING:
    from memmesh.team.recall import TeamAnswer

__all__ = ["add_network_commands"]


def add_network_commands(command: Any) -> None:
    """Register serve, peers and recall-team through the team group's ``command`` helper."""
    p = command(
        "serve",
        _serve,
        "Run this member's peer daemon: it answers teammates from your currently published "
        "items that still pass the policy, heartbeats to the coordinator and (with "
        "discovery) announces itself on the LAN. Refuses to start while team.yaml is invalid.",
        "mem team serve --port 8410",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    p.add_argument("--port", type=int, default=8410, help="port to listen on (8410)")
    p.add_argument("--advertise", metavar="URL", help="URL teammates reach this daemon at")
    p.add_argument(
        "--interface",
        action="append",
        metavar="IP",
        help="interface address for zeroconf (repeatable; default: the listen address)",
    )
    p.add_argument("--heartbeat", type=float, default=30.0, help="seconds between heartbeats")

    p = command(
        "peers",
        _peers,
        "Show teammates' peer daemons that are online: who, where, learned from where, "
        "which embedder, and until when their presence holds.",
        "mem team peers --json",
    )
    p.add_argument("--interface", action="append", metavar="IP", help="zeroconf interface")

    p = command(
        "recall-team",
        _recall_team,
        "Ask the whole team: the coordinator and every live peer at once. Answers are "
        "verified, attributed and ranked on one score; each source's outcome is reported. "
        "Exits 4 only when no source answered.",
        'mem team recall-team "how do we run database migrations" -k 5',
    )
    p.add_argument("query", help="what you want to know")
    p.add_argument("-k", type=int, default=5, metavar="N", help="at most N hits (1-100)")
    p.add_argument("--author", metavar="NAME", help="only items by this member")
    p.add_argument("--project", metavar="P", help="project to ask about (plus global)")
    p.add_argument("--timeout", type=float, default=2.0, metavar="S", help="per-source seconds")
    p.add_argument("--interface", action="append", metavar="IP", help="zeroconf interface")


def _serve(args: argparse.Namespace) -> int:
    # The server stack is imported only by the commands that use it.
    from memmesh.net.client import Client
    from memmesh.net.server import check_bind, serve
    from memmesh.peer.app import peer_app
    from memmesh.peer.discovery import Advertiser, local_address
    from memmesh.peer.heartbeat import Heartbeat
    from memmesh.peer.service import Peer

    home = home_of(args)
    policy = load_policy(home)  # invalid: exit 3, nothing starts
    identity = load_identity(home)
    token = os.environ.get(policy.token_env) or None
    check_bind(args.host, token)
    url = args.advertise or f"http://{local_address(args.host)}:{args.port}"
    store = open_store(args)
    peer = Peer(home, store, identity, url=url)
    peer.shareable()  # fail now, not on the first request, if anything is wrong
    heartbeat = None
    advertiser = None
    try:
        if policy.coordinator:
            client = Client(policy.coordinator, token=token, timeout=5.0)
            heartbeat = Heartbeat(peer, client, interval=args.heartbeat).start()
        if policy.discovery:
            interfaces = args.interface or [local_address(args.host)]
            name = policy.identity.name if policy.identity else store.author
            advertiser = Advertiser(
                interfaces=interfaces, name=name, key_id=identity.key_id, port=args.port
            ).start()
        print(
            f"memmesh peer {identity.key_id} on {url}"
            f"{' (heartbeat to ' + policy.coordinator + ')' if policy.coordinator else ''}",
            file=sys.stderr,
            flush=True,
        )
        settings = ServeSettings(host=args.host, port=args.port)
        serve(peer_app(peer, token=token), settings, token=token)
    finally:
        if advertiser is not None:
            advertiser.stop()
        if heartbeat is not None:
            heartbeat.stop()
        store.close()
    return 0


def _peers(args: argparse.Namespace) -> int:
    from memmesh.team.recall import list_peers

    home = home_of(args)
    policy = load_policy(home)
    identity = load_identity(home)
    seen, problems = list_peers(policy, own_key=identity.key_id, interfaces=args.interface)
    now = time.time()
    data = {"peers": [msgspec.to_builtins(p) for p in seen], "problems": problems}
    lines = [
        f"{p.name:<12} {p.key_id}  {p.url:<28} via {p.learned_from:<9} {p.embedder}  "
        f"expires in {max(0, round(p.expires_at - now))}s"
        for p in seen
    ] or ["no peers online"]
    lines += [f"note: {problem}" for problem in problems]
    emit(args, data, "\n".join(lines))
    return 0


def _recall_team(args: argparse.Namespace) -> int:
    from memmesh.team.recall import recall_team

    home = home_of(args)
    policy = load_policy(home)
    identity = load_identity(home)
    project = resolve_project(args.project)
    with open_store(args) as store:
        answer = recall_team(
            store,
            policy,
            args.query,
            k=args.k,
            project=project,
            author=args.author,
            timeout=args.timeout,
            deadline=args.timeout + 1.0,
            own_key=identity.key_id,
            interfaces=args.interface,
        )
    emit(args, answer_json(answer), _answer_text(answer))
    for warning in answer.warnings:
        print(f"mem: warning: {warning}", file=sys.stderr)
    return 0


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
    lines = [
        f"{hit.score:.3f}  {hit.author:<10} {hit.id}  [{hit.kind}, {hit.project}] {hit.text}"
        f"  (via {hit.source})"
        for hit in answer.hits
    ] or ["nothing relevant from the team (abstained)"]
    parts = []
    for source in answer.sources:
        outcome = f"{source.status}, {source.hits} hits" if source.status == "ok" else source.status
        detail = f": {source.error}" if source.error else ""
        parts.append(f"{source.name} {outcome}{detail}")
    lines.append("sources: " + "; ".join(parts))
    if answer.dropped:
        lines.append("dropped: " + ", ".join(f"{n} {why}" for why, n in answer.dropped.items()))
    return "\n".join(lines)
