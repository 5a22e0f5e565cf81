"""`mem ui`: the local page for memory and team, on loopback (docs/ui.md)."""

import argparse
import sys

from memmesh.cli._common import command_adder, home_of, port
from memmesh.errors import ExitCode

__all__ = ["register"]


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add `mem ui` to the parser."""
    parser = command_adder(commands)(
        "ui",
        _ui,
        "Open the local page: memory, inbox, team and health, in your browser.",
        "mem ui --no-browser",
        description="Serve the local page for this home on 127.0.0.1 (a free port unless "
        "--port) until interrupted, print its address with a sign-in token, and open it in "
        "your browser. The token is new on every start and becomes a cookie only this page "
        "reads; an address from an earlier run signs nobody in. A second `mem ui` on the same "
        "home prints the running page's address instead of starting another. The page "
        "listens on loopback only.",
        json_output=False,
    )
    parser.add_argument(
        "--port", type=port, default=0, help="port to listen on (default: a free one)"
    )
    parser.add_argument(
        "--no-browser", action="store_true", help="print the address, open no browser"
    )


def _ui(args: argparse.Namespace) -> int:
    from memmesh.web.serve import UIRecord, address_of, serve_ui

    def started(record: UIRecord) -> None:
        address = address_of(record)
        sys.stdout.write(f"memmesh ui: {address}\n(stop it with Ctrl-C)\n")
        sys.stdout.flush()
        if not args.no_browser:
            import webbrowser

            webbrowser.open(address)

    running = serve_ui(home_of(args), port=args.port, started=started)
    if running is not None:
        sys.stdout.write(f"memmesh ui already runs for this home: {address_of(running)}\n")
        if not args.no_browser:
            import webbrowser

            webbrowser.open(address_of(running))
    return ExitCode.OK
