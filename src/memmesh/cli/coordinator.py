"""`mem coordinator serve`: run the passive team host."""

import argparse
import contextlib
import ipaddress
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, urlsplit

from memmesh._policy_names import DEFAULT_TOKEN_ENV
from memmesh.cli._common import (
    command_adder,
    command_group,
    lazy,
    member_name,
    nonempty,
    port,
    positive_float,
    positive_int,
    url,
)
from memmesh.cli._coordinator_items import register_items
from memmesh.cli._coordinator_migrate import register_migrate
from memmesh.cli._coordinator_quotas import quota_flags
from memmesh.cli._database import add_database_option, database_of
from memmesh.cli.errors import UsageError
from memmesh.errors import ExitCode
from memmesh.net.quotas import Quotas
from memmesh.net.settings import (
    DEFAULT_CLIENT_CONNECTIONS,
    DEFAULT_CONCURRENCY,
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_IDLE_CONNECTIONS,
    ServeSettings,
)

if TYPE_CHECKING:
    import socket

    from starlette.types import ASGIApp

    from memmesh.coordinator.serve import CoordinatorSettings
    from memmesh.net.tls import Certificate

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
    command = command_adder(sub)
    p = command(
        "serve",
        _serve,
        "Serve the coordinator until interrupted.",
        "MEM_TEAM_TOKEN=s3cret mem coordinator serve --data /var/lib/memmesh "
        "--host 0.0.0.0 --team acme --url https://team-host:8400",
        description="Serve the coordinator until interrupted. It stores only published, "
        "signed envelopes (with their vectors), tombstones and short-lived presence. "
        "It serves one team, named by --team, and refuses every other team's envelopes. "
        "Every request must be signed by a member's key; once the roster has a member, only "
        "members are served. A team token is optional (an outer gate), except over plain "
        "http beyond loopback (--insecure-http), which it refuses to serve without one. "
        "It serves https beyond loopback, and on loopback too when --url says https or with "
        "--tls, with a self-signed certificate kept in DATA/tls (its pin is printed, and "
        "goes into the join code). An https --url with --insecure-http means a reverse proxy "
        "in front of it serves the https; a --url whose scheme contradicts what it serves is "
        "refused. While the roster is empty it prints the join code that makes the first "
        "admin (also kept in DATA/admin-join-code).",
        json_output=False,
    )
    p.set_defaults(parser=p)
    p.add_argument("--data", required=True, type=nonempty, metavar="DIR", help="data folder")
    add_database_option(p)
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
        help=f"requests in flight at once before answering 503 ({DEFAULT_CONCURRENCY})",
    )
    p.add_argument(
        "--header-timeout",
        type=positive_float,
        default=DEFAULT_HEADER_TIMEOUT,
        metavar="SECONDS",
        help="seconds a connection has to send a whole request head, and a TLS handshake to "
        f"finish, before it is closed ({DEFAULT_HEADER_TIMEOUT:g})",
    )
    p.add_argument(
        "--idle-connections",
        type=positive_int,
        default=DEFAULT_IDLE_CONNECTIONS,
        metavar="N",
        help="connections without a request in flight kept at once; past it the one idle the "
        f"longest is closed ({DEFAULT_IDLE_CONNECTIONS})",
    )
    p.add_argument(
        "--client-connections",
        type=positive_int,
        default=DEFAULT_CLIENT_CONNECTIONS,
        metavar="N",
        help="connections one client address holds at once (raise it behind a proxy, where "
        f"every client has its address) ({DEFAULT_CLIENT_CONNECTIONS})",
    )
    p.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        help="processes answering on the one port (1); searches use about one core each",
    )
    p.add_argument(
        "--url",
        type=url,
        metavar="URL",
        help="where members reach it, for the join code (default: scheme://host:port; "
        "needed on 0.0.0.0 or :: while the roster is empty); an https URL is served over "
        "https, on loopback too",
    )
    transport = p.add_mutually_exclusive_group()
    transport.add_argument(
        "--tls",
        action="store_true",
        help="serve https on loopback too (the default beyond loopback, or with an https --url)",
    )
    transport.add_argument(
        "--tls-cert",
        metavar="FILE",
        help="serve https with this certificate (PEM) from an authority, with --tls-key",
    )
    transport.add_argument(
        "--insecure-http",
        action="store_true",
        help="serve plain http: beyond loopback (a team token is then required), or behind a "
        "reverse proxy that serves the https --url",
    )
    p.add_argument("--tls-key", metavar="FILE", help="the private key (PEM) of --tls-cert")
    p.add_argument(
        "--admin-name",
        type=member_name,
        default="admin",
        metavar="NAME",
        help="the name the first admin joins under, such as alice (admin)",
    )
    quota_flags(p)
    register_items(command)
    register_migrate(command)
    p = command(
        "reindex",
        lazy("memmesh.cli._reindex", "run_coordinator_reindex"),
        "Re-embed every item the coordinator keeps, with --embedder NAME switching it to that "
        "embedder; safe while it runs, which takes the new vectors up at once.",
        "mem coordinator reindex --data /var/lib/memmesh --embedder wordllama",
        description="Re-embed every item the coordinator keeps in its data folder: with "
        "--embedder NAME, switching its cache to that embedder (the team's, as team.yaml "
        "names it); without, with the one it has. Safe while the coordinator runs: the new "
        "vectors are staged beside the old ones, which it goes on searching with, then "
        "swapped in at once; its next request takes the new embedder up, without a restart "
        "(serve it with --embedder NAME from then on, or without --embedder). Progress goes "
        "to stderr; a killed reindex resumes where it stopped when run again.",
        json_shape='{"reindexed", "embedder"}',
    )
    p.add_argument("--data", required=True, type=nonempty, metavar="DIR", help="data folder")
    p.add_argument("--embedder", metavar="NAME", help="switch to this embedder")


def _serve(args: argparse.Namespace) -> int:
    # Imported here: the server stack is heavy, and every other command starts faster for it.
    from memmesh.net.server import check_bind, listen

    if bool(args.tls_cert) != bool(args.tls_key):
        args.parser.error("--tls-cert and --tls-key go together")
    _check_url_scheme(args)
    token = os.environ.get(args.token_env) or None
    data = Path(args.data).expanduser()
    certificate, pin = _certificate(args, data)
    settings = ServeSettings(
        host=args.host,
        port=args.port,
        limit_concurrency=args.concurrency,
        header_timeout=args.header_timeout,
        max_idle_connections=args.idle_connections,
        max_client_connections=args.client_connections,
        workers=args.workers,
        tls_cert=certificate.cert_path if certificate else None,
        tls_key=certificate.key_path if certificate else None,
    )
    check_bind(args.host, token, tls=certificate is not None)
    coordinator = _coordinator_settings(args, data, token=token, certificate=certificate)
    if args.url is None and _every_interface(args.host) and not _has_members(coordinator):
        raise UsageError(
            "coordinator serve",
            f"listening on {args.host}, give --url: the first admin's join code must hold an "
            "address members reach, as in --url https://team-host:8400",
        )
    # Bound before anything is set up or said: a port in use is one line, and exit 1.
    sock = listen(settings)
    try:
        _run(args, settings, sock, coordinator, pin=pin, certificate=certificate)
    finally:
        sock.close()
    return ExitCode.OK


def _coordinator_settings(
    args: argparse.Namespace, data: Path, *, token: str | None, certificate: "Certificate | None"
) -> "CoordinatorSettings":
    """What the coordinator is opened and served with, as the command line decides it."""
    from memmesh.coordinator.serve import CoordinatorSettings
    from memmesh.net.urls import is_loopback

    # Only this machine reaches it: it listens on loopback and no --url (a reverse proxy in
    # front of it, say) sends members from elsewhere.
    this_machine_only = is_loopback(args.host) and (
        args.url is None or is_loopback(urlsplit(args.url).hostname or "")
    )
    return CoordinatorSettings(
        data=data,
        team=args.team,
        embedder=args.embedder,
        token=token,
        url=args.url,
        database=database_of(args, "coordinator serve"),
        # Requests are signed for this coordinator by its --url and its certificate's pin.
        pin=certificate.pin if certificate else None,
        # Each quota's flag is named for its field (--member-items: member_items).
        quotas=Quotas(**{name: getattr(args, name) for name in Quotas.__struct_fields__}),
        # While the roster is empty, a signer is admitted only behind the team token or when
        # only this machine reaches it: otherwise the admin code is the only way in.
        open_without_roster=bool(token) or this_machine_only,
        # Reached from elsewhere, a presence on loopback would send teammates to their own
        # machine.
        loopback_peers=this_machine_only,
    )


def _run(
    args: argparse.Namespace,
    settings: ServeSettings,
    sock: "socket.socket",
    coordinator: "CoordinatorSettings",
    *,
    pin: str | None,
    certificate: "Certificate | None",
) -> None:
    """Set the coordinator up, say where it serves, and serve on ``sock`` until interrupted."""
    from memmesh.coordinator.bootstrap import admin_join_code
    from memmesh.coordinator.membership import when
    from memmesh.coordinator.serve import CoordinatorApp, create_app, open_coordinator
    from memmesh.net.server import serve_processes
    from memmesh.net.urls import is_loopback

    host = f"[{args.host}]" if ":" in args.host else args.host
    served = f"{settings.scheme}://{host}:{sock.getsockname()[1]}"
    # Opened once here to check the data folder (and bring its schema up to date) before any
    # worker starts; each worker then opens its own.
    with contextlib.closing(open_coordinator(coordinator)) as opened:
        fingerprint = opened.store.embedder.fingerprint
        join_url = args.url or served
        code = admin_join_code(
            opened.membership, coordinator.data, url=join_url,
            pin=pin if join_url.startswith("https:") else None, name=args.admin_name,
        )  # fmt: skip
    workers = f", {settings.workers} workers" if settings.workers > 1 else ""
    lines = [
        f"memmesh coordinator on {served} "
        f"(data {args.data}, embedder {fingerprint}{workers}"
        f"{', no team token: every request is signed' if not coordinator.token else ''})"
    ]
    if certificate is not None:
        lines.append(f"TLS pin: {certificate.pin}")
    elif args.insecure_http and not is_loopback(args.host):
        lines.append("warning: plain http beyond loopback: anyone on the way can read what is sent")
    if code is not None:
        lines += [
            f"The roster is empty. Join code for the first admin ({code.name}; single use, until "
            f"{when(code.expires_at)}; also in {coordinator.data / 'admin-join-code'}):",
            code.encode(),
            "Join with: mem team join CODE",
        ]
    print("\n".join(lines), file=sys.stderr, flush=True)
    # Each app closes its coordinator as its server shuts down; those still open, here.
    apps: list[CoordinatorApp] = []

    def make_app() -> "ASGIApp":
        apps.append(create_app(coordinator))
        return apps[-1]

    try:
        serve_processes(make_app, settings, token=coordinator.token, sock=sock)
    finally:
        for app in apps:
            app.close()


def _check_url_scheme(args: argparse.Namespace) -> None:
    """Refuse (exit 2, before anything is written) a --url whose scheme contradicts what the
    coordinator serves: its join code would send members to a port that never answers them."""
    from memmesh.net.urls import is_loopback, serves_tls

    if args.url is None:
        return
    parts = urlsplit(args.url)
    if parts.scheme == "https" and args.insecure_http and _names_listener(args, parts):
        args.parser.error(
            f"--url {args.url} is this coordinator itself, which --insecure-http serves over "
            "plain http: drop --insecure-http to serve https, or give the https address of "
            "the reverse proxy in front of it"
        )
    https = serves_tls(args.host, tls=args.tls, insecure_http=args.insecure_http)
    serves_plain = not (args.tls_cert or https or args.insecure_http)
    if serves_plain and parts.scheme == "http" and not is_loopback(parts.hostname or ""):
        # Members never send plain http beyond loopback unless told the network is trusted.
        args.parser.error(
            f"--url {args.url} sends members over plain http beyond loopback, which they "
            "refuse: give --url https://… (the coordinator serves https on loopback too "
            "then), or --insecure-http for a network you trust"
        )
    if parts.scheme == "http" and (args.tls_cert or https):
        why = "--tls-cert" if args.tls_cert else "--tls" if args.tls else ""
        plain = is_loopback(args.host) or why
        args.parser.error(
            f"--url {args.url} says plain http, but it serves https "
            f"({why or 'the default beyond loopback'}): give --url https://…"
            f"{'' if plain else ', or serve plain http with --insecure-http'}"
        )


def _names_listener(args: argparse.Namespace, parts: SplitResult) -> bool:
    """Whether the URL ``parts`` reaches the address and port it listens on itself (rather
    than a reverse proxy in front of it)."""
    from memmesh.net.urls import is_loopback

    listened_port: int = args.port
    listened: str = args.host.strip("[]")
    if (parts.port or 443) != listened_port:
        return False
    host = parts.hostname or ""
    if is_loopback(host):
        return is_loopback(listened) or _every_interface(listened)
    return host == listened


def _every_interface(host: str) -> bool:
    """Whether ``host`` is 0.0.0.0 or ::, an address to listen on that nobody can reach."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def _has_members(settings: "CoordinatorSettings") -> bool:
    """Whether the coordinator ``settings`` describe has a member already (then it makes no
    join code)."""
    from memmesh.coordinator.serve import open_coordinator
    from memmesh.local.store import DB_FILENAME

    if not (settings.data / DB_FILENAME).is_file():
        return False
    with contextlib.closing(open_coordinator(settings)) as held:
        return held.membership.enforced()


def _certificate(args: argparse.Namespace, data: Path) -> "tuple[Certificate | None, str | None]":
    """The certificate to serve (``None``: plain http), and the pin members should hold
    (``None`` for one from an authority, which their system trusts)."""
    from memmesh.net.tls import ensure_certificate, load_certificate
    from memmesh.net.urls import serves_tls

    if args.tls_cert:
        return load_certificate(Path(args.tls_cert), Path(args.tls_key)), None
    if serves_tls(args.host, tls=args.tls, insecure_http=args.insecure_http, url=args.url):
        hosts = [args.host] + ([urlsplit(args.url).hostname or ""] if args.url else [])
        certificate = ensure_certificate(data / "tls", [h for h in hosts if h])
        return certificate, certificate.pin
    return None, None
