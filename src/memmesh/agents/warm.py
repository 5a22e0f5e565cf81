"""The warm prompt server: `mem hook prompt` answered by a process that keeps the store open.

A prompt hook is a new process for every prompt; most of its time would go to importing
numpy and the store, reading every vector and loading the embedder. So the first prompt hook
that finds no server starts one (`mem hook warm`, detached) and answers by itself; the hooks
after it send the prompt to the server over a Unix socket and print its answer, paying only
for Python's start and one round trip. The server reads the store as the peer daemon does
(its indexes follow the file by ``rev``), so what was remembered a moment ago is found, and
keeps the team cache following the coordinator (:func:`memmesh.agents.freshness.follow_team`).

* The socket is ``prompt.sock`` in the memmesh home (or, when that path is too long for a
  socket, a file named by the home's hash in ``$TMPDIR/memmesh-<uid>``, a folder only this
  user can enter), and is the owner's alone (0600); on Linux the server also refuses a
  connection from another user id.
* One server per home (an ``flock`` on ``prompt.sock.lock``); it stops after
  :data:`IDLE_S` seconds without a prompt, when the store file is replaced or removed, when a
  hook of another memmesh version asks, and when it fails to answer (a reindex switched the
  store to another embedder, say): the hook then answers by itself and starts a new one.
* A request and an answer are one line of JSON each, at most :data:`MAX_LINE` bytes; a
  server that does not answer within the hook's time counts as none.
* ``MEM_HOOK_WARM=0`` turns it off (every hook answers by itself).
"""

import contextlib
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memmesh import __version__

# What only the server (or starting it) needs is imported there: a hook that asks the server
# imports no more than a socket and JSON.

__all__ = ["IDLE_S", "MAX_LINE", "ask", "enabled", "serve", "socket_path", "start", "stop"]

IDLE_S = 30 * 60.0
MAX_LINE = 1 << 20
WORKERS = 2
_SOCKET_NAME = "prompt.sock"
_MAX_SOCKET_PATH = 100  # sun_path holds 104 (macOS) or 108 (Linux) bytes


def enabled() -> bool:
    """Whether hooks may use (and start) a warm server: unless ``MEM_HOOK_WARM=0``."""
    return os.environ.get("MEM_HOOK_WARM", "1") != "0"


def idle_seconds() -> float:
    """:data:`IDLE_S`, or ``MEM_HOOK_WARM_IDLE`` seconds when set to a positive number."""
    with contextlib.suppress(ValueError):
        value = float(os.environ.get("MEM_HOOK_WARM_IDLE", ""))
        if value > 0:
            return value
    return IDLE_S


def socket_path(home: Path) -> Path:
    """Where the server of ``home`` listens (see the module docstring)."""
    home = home.expanduser().resolve()
    path = home / _SOCKET_NAME
    if len(os.fsencode(path)) <= _MAX_SOCKET_PATH:
        return path
    import hashlib  # here: its OpenSSL takes 2 ms to load, a hook's tenth

    digest = hashlib.sha256(os.fsencode(home)).hexdigest()[:24]
    return _private_folder() / f"{digest}.sock"


def _private_folder() -> Path:
    """``$TMPDIR/memmesh-<uid>``, made 0700; refused (``OSError``) when someone else owns it
    or others may enter it."""
    import tempfile

    folder = Path(tempfile.gettempdir()) / f"memmesh-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    found = folder.lstat()
    if found.st_uid != os.getuid() or found.st_mode & 0o077 or not folder.is_dir():
        from memmesh._files import unsafe_folder

        raise OSError(unsafe_folder(folder, found))
    return folder


def ask(home: Path, request: dict[str, Any], *, timeout: float) -> dict[str, Any] | None:
    """The server's answer to ``request`` (with this memmesh's version added), or ``None``
    when no server answered in ``timeout`` seconds, or it answered with an error."""
    try:
        path = socket_path(home)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(os.fspath(path))
            conn.sendall(_line({**request, "version": __version__}))
            answer = json.loads(_read_line(conn))
    except (OSError, ValueError):
        return None
    if not isinstance(answer, dict) or "error" in answer:
        return None
    return answer


def stop(home: Path, *, timeout: float = 5.0) -> bool:
    """Ask the server of ``home`` to stop; whether one answered."""
    return ask(home, {"stop": True}, timeout=timeout) is not None


def start(home: Path) -> None:
    """Start `mem hook warm` for ``home`` in a process of its own session, detached from the
    hook's streams, and return at once (a second server exits at once). Raises ``OSError``."""
    from memmesh._processes import start_detached

    start_detached(home, "hook", "warm")


def serve(home: Path) -> bool:
    """Serve prompts for ``home`` until idle, the store is replaced, or a hook of another
    version asks; ``False`` at once when another server holds the home."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from memmesh.agents.freshness import follow_team
    from memmesh.agents.prompt import recall_lines
    from memmesh.home import open_store

    try:
        path = socket_path(home)
    except OSError as exc:
        from memmesh.agents.errors import AgentError

        raise AgentError(f"the warm prompt server cannot start: {exc}") from None
    with _only_one(path) as mine:
        if not mine:
            return False
        store_file = home / "memory.db"
        identity = _identity(store_file)
        with contextlib.ExitStack() as held:
            store = held.enter_context(open_store(home, serving=True))
            store.warm()  # before listening: a hook never waits on a server still loading
            listener = held.enter_context(_listening(path))
            stop = threading.Event()
            last = [time.monotonic()]

            def answer(conn: socket.socket) -> None:
                with conn:
                    try:
                        request = json.loads(_read_line(conn))
                        if request.get("version") != __version__:
                            conn.sendall(_line({"error": "another version"}))
                            stop.set()
                            return
                        if request.get("stop") is True:
                            conn.sendall(_line({"stopping": True}))
                            stop.set()
                            return
                        lines, note = recall_lines(
                            home, str(request["prompt"]), str(request["project"]), store=store
                        )
                        reply = {"lines": [line._asdict() for line in lines], "note": note}
                    except Exception as exc:
                        # The hook answers by itself instead, and the next one starts a
                        # server afresh: one that failed (a store switched to another
                        # embedder, say) would fail every prompt after.
                        reply = {"error": f"{type(exc).__name__}: {exc}"}
                        stop.set()
                    with contextlib.suppress(OSError):
                        conn.sendall(_line(reply))
                    last[0] = time.monotonic()

            idle = idle_seconds()
            # The team cache follows the coordinator while the server lives (freshness).
            follower = threading.Thread(
                target=follow_team, args=(home, stop), name="memmesh-team-poll", daemon=True
            )
            follower.start()
            held.callback(stop.set)
            with ThreadPoolExecutor(WORKERS, thread_name_prefix="memmesh-warm") as workers:
                while not stop.is_set():
                    if time.monotonic() - last[0] > idle or _identity(store_file) != identity:
                        break
                    try:
                        conn, _ = listener.accept()
                    except TimeoutError:
                        continue
                    if not _same_user(conn):
                        conn.close()
                        continue
                    conn.settimeout(5.0)
                    last[0] = time.monotonic()
                    workers.submit(answer, conn)
    return True


@contextlib.contextmanager
def _only_one(path: Path) -> Iterator[bool]:
    """Hold the home's server lock (``True``), or say another process holds it."""
    import fcntl

    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


@contextlib.contextmanager
def _listening(path: Path) -> Iterator[socket.socket]:
    """A socket listening at ``path`` (a stale one removed first), the owner's alone."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        old = os.umask(0o177)
        try:
            listener.bind(os.fspath(path))
        finally:
            os.umask(old)
        path.chmod(0o600)
        listener.listen(16)
        listener.settimeout(1.0)
        yield listener
    finally:
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _same_user(conn: socket.socket) -> bool:
    """Whether the connecting process runs as this user (Linux; elsewhere the socket's own
    permissions decide)."""
    import struct

    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    except OSError:
        return False
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def _identity(path: Path) -> tuple[int, int] | None:
    """The store file's device and inode (``None`` when it is gone)."""
    try:
        found = path.stat()
    except OSError:
        return None
    return (found.st_dev, found.st_ino)


def _line(data: dict[str, Any]) -> bytes:
    return json.dumps(data, ensure_ascii=False).encode("utf-8") + b"\n"


def _read_line(conn: socket.socket) -> bytes:
    """One line from ``conn``, at most :data:`MAX_LINE` bytes (``ValueError`` past that, or
    when the peer closes first)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            raise ValueError("closed before a whole line")
        chunks.append(chunk)
        size += len(chunk)
        if chunk.endswith(b"\n") or b"\n" in chunk:
            return b"".join(chunks).split(b"\n", 1)[0]
        if size > MAX_LINE:
            raise ValueError("line too long")
