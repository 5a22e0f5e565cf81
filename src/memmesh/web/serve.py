"""Running the page (`mem ui`): one per home, on loopback, its token new on every start.

The page holds ``ui.lock`` in the member's home while it runs (:mod:`memmesh._daemon_lock`),
and writes into it, readable by the member alone (0600), where it listens and this run's
token: a second `mem ui` on the same home finds it there and prints the running page's
address instead of starting another (:func:`running_ui`). The token is made anew on each start,
so an address printed by an earlier run no longer signs anyone in.
"""

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from memmesh._daemon_lock import Held, hold, read_held
from memmesh.home import open_store
from memmesh.net.errors import CannotListen
from memmesh.net.server import Server, ServeSettings, listen
from memmesh.web import team
from memmesh.web.app import create_app
from memmesh.web.security import new_token

__all__ = ["LOCK_FILENAME", "UIRecord", "address_of", "running_ui", "serve_ui"]

LOCK_FILENAME = "ui.lock"
HOST = "127.0.0.1"


class UIRecord(msgspec.Struct, frozen=True, kw_only=True):
    """What the running page of a home says of itself: its pid, where it listens, and this
    run's sign-in token (``""`` while it is still starting)."""

    pid: int
    port: int
    started_at: float
    token: str = ""


def address_of(record: UIRecord) -> str:
    """The address that opens the page and signs in."""
    return f"http://{HOST}:{record.port}/?token={record.token}"


def running_ui(home: Path) -> UIRecord | None:
    """What the page running on ``home`` says of itself, or ``None`` when none runs (or one
    is still starting and has said nothing yet)."""
    running, record = read_held(home / LOCK_FILENAME, UIRecord)
    return record if running and record is not None and record.token else None


def serve_ui(home: Path, *, port: int, started: Callable[[UIRecord], None]) -> UIRecord | None:
    """Serve the page for ``home`` on ``127.0.0.1:port`` (0: a free port) until interrupted,
    calling ``started`` once it listens. Returns ``None`` when it served, or the running
    page's record when another process serves this home already.

    Raises :class:`CannotListen` when the port is taken, and what opening the store raises.
    """
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    record = UIRecord(pid=os.getpid(), port=port, started_at=time.time())
    try:
        with hold(home / LOCK_FILENAME, record) as held, contextlib.ExitStack() as stack:
            settings = ServeSettings(host=HOST, port=port)
            sock = stack.enter_context(contextlib.closing(listen(settings)))
            settings = msgspec.structs.replace(settings, port=sock.getsockname()[1])
            store = stack.enter_context(open_store(home, serving=True))
            token = new_token()
            app = create_app(store, token=token)
            team.warm(app)  # the team's standing counted before the first visit asks for it
            server = Server(app, settings)
            held.record(msgspec.structs.replace(record, port=settings.port, token=token))
            started(held.record_now)
            server.run(sockets=[sock])
            return None
    except Held as exc:
        found = exc.record if isinstance(exc.record, UIRecord) else None
        if found is None or not found.token:
            starting = "this home's page is starting in another process"
            raise CannotListen(HOST, port, starting) from None
        return found
    except OSError as exc:
        raise CannotListen(HOST, port, f"cannot hold {home / LOCK_FILENAME}: {exc}") from None
