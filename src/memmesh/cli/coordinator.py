"""`mem coordinator serve`: run the passive team host."""

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from memmesh.cli._common import command_adder, command_group, nonempty, port, positive_int
from memmesh.errors import ExitCode
from memmesh.net.settings import DEFAULT_CONCURRENCY, ServeSettings
from memmesh.policy.config import DEFAULT_TOKEN_ENV

if TYPE_CHECKING:
    from starlette.types import ASGIApp

__all__ = ["register"]


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add `mem coordinator` to the `mem` parser."""
    sub = command_group(
        commands,
        "coordinator",
        "Run the team host's coordinator.",
        "mem coordinator serve --data /var/lib/memmesh --team acme",
        json_output=False,
    )
    p = command_adder(sub)(
        "serve",
        _serve,
        "Serve the coordinator until interrupted.",
        "MEM_TEAM_TOKEN=s3cret mem coordinator serve --data /var/lib/memmesh "
        "--host 0.0.0.0 --team acme",
        description="Serve the coordinator until interrupted. It stores only published, "
        "signed envelopes (with their vectors), tombstones and short-lived presence. "
        "It serves one team, named by --team, and refuses every other team's envelopes; "
        "it refuses to listen beyond loopback without a team token.",
        json_output=False,
    )
    p.add_argument("--data", required=True, type=nonempty, metavar="DIR", help="data folder")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    p.add_argument("--port", type=port, default=8400, help="port to listen on (8400)")
    p.add_argument(
        "--token-env",
        default=DEFAULT_TOKEN_ENV,
        metavar="VAR",
        help=f"environment variable holding the team token ({DEFAULT_TOKEN_ENV})",
    )
    p.add_argument(
        "--team",
        required=True,
        type=nonempty,
        metavar="NAME",
        help="the team it serves: envelopes of every other team are refused (required)",
    )
    p.add_argument(
        "--embedder", help="vector space to search in (default: the data folder's, else hashing)"
    )
    p.add_argument(
        "--concurrency",
        type=positive_int,
        default=DEFAULT_CONCURRENCY,
        help=f"requests at once before answering 503 ({DEFAULT_CONCURRENCY})",
    )
    p.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        help="processes answering on the one port (1); searches use about one core each",
    )


def _serve(args: argparse.Namespace) -> int:
    # Imported here: the server stack is heavy, and every other command starts faster for it.
    from memmesh.coordinator import Coordinator, coordinator_app
    from memmesh.net.server import check_bind, serve_processes

    token = os.environ.get(args.token_env) or None
    settings = ServeSettings(
        host=args.host,
        port=args.port,
        limit_concurrency=args.concurrency,
        workers=args.workers,
    )
    check_bind(settings.host, token)
    data = Path(args.data).expanduser()

    def open_coordinator() -> "Coordinator":
        return Coordinator(data, team=args.team, embedder=args.embedder)

    # Opened once here to check the data folder (and bring its schema up to date) before any
    # worker starts; each worker then opens its own.
    with contextlib.closing(open_coordinator()) as coordinator:
        fingerprint = coordinator.store.embedder.fingerprint
    workers = f", {settings.workers} workers" if settings.workers > 1 else ""
    print(
        f"memmesh coordinator on http://{settings.host}:{settings.port} "
        f"(data {args.data}, embedder {fingerprint}{workers}"
        f"{', no token: loopback only' if not token else ''})",
        file=sys.stderr,
        flush=True,
    )
    opened: list[Coordinator] = []

    def make_app() -> "ASGIApp":
        coordinator = open_coordinator()
        opened.append(coordinator)
        coordinator.store.warm()  # before it listens: no first search pays for the load
        return coordinator_app(coordinator, token=token)

    try:
        serve_processes(make_app, settings, token=token)
    finally:
        for coordinator in opened:
            coordinator.close()
    return ExitCode.OK
