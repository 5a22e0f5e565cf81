"""Socket attacks for ``bench/fuzz.py``: connections that send nothing, or a request head a byte
at a time, held open against a daemon while an authorised request is timed now and then.

Each attack is bounded: ``count`` connections, held ``seconds``. The scripts import this as
``_sockets`` (``bench/`` is on ``sys.path`` when one is run).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

# An authorised request: its status (-1: no answer) and milliseconds.
Ask = Callable[[], tuple[int, float]]
SLOW_HEAD = b"POST /v1/search HTTP/1.1\r\nhost: team-host\r\ncontent-type: application/json\r\n"
# What the slow ones send once the start above is sent: a header, or a body, a byte at a time.
MORE_HEAD = b"x-padding: 1\r\n"
SLOW_BODY = SLOW_HEAD + b"content-length: 60000\r\n\r\n"
MORE_BODY = b" "


@dataclass
class AttackResult:
    """What one attack did, and how the authorised requests made during it fared."""

    name: str
    sockets: int
    seconds: float
    answers: list[tuple[int, float]] = field(default_factory=list)
    closed: int = 0  # attack connections the server had closed when the attack ended

    @property
    def answered(self) -> int:
        return sum(1 for status, _ in self.answers if status == 200)

    def row(self) -> list[object]:
        times = sorted(ms for _, ms in self.answers)
        statuses = " ".join(str(status) for status, _ in self.answers)
        return [
            self.name,
            self.sockets,
            self.seconds,
            f"{self.answered}/{len(self.answers)}",
            times[len(times) // 2] if times else None,
            times[-1] if times else None,
            self.closed,
            statuses,
        ]


HEADERS = ["attack", "sockets", "held s", "answered", "p50 ms", "max ms", "closed", "statuses"]


def attack(
    name: str,
    port: int,
    ask: Ask,
    *,
    count: int,
    seconds: float,
    start: bytes = b"",
    drip: bytes = b"",
    asks: int = 6,
) -> AttackResult:
    """Hold ``count`` connections to 127.0.0.1:``port`` (opened 5 ms apart, before the
    ``seconds`` start) for ``seconds``: each sends ``start``,
    then ``drip`` over and over a byte at a time, one byte per connection every half second
    (no ``drip``: nothing more). ``ask`` is called ``asks`` times, spread over the attack."""
    socks: list[socket.socket] = []
    for _ in range(count):
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=2)
            sock.sendall(start)
        except OSError:
            break  # refused or timed out: the attack holds what it got
        socks.append(sock)
        time.sleep(0.005)  # one at a time: each is the server's before the next arrives
    result = AttackResult(name=name, sockets=len(socks), seconds=seconds)
    stop = threading.Event()
    broken: set[int] = set()
    dripper = threading.Thread(target=_drip, args=(socks, drip, stop, broken), daemon=True)
    if drip:
        dripper.start()
    started = time.monotonic()
    try:
        for turn in range(asks):
            due = started + seconds * (turn + 0.5) / asks
            time.sleep(max(0.0, due - time.monotonic()))
            result.answers.append(ask())
        time.sleep(max(0.0, started + seconds - time.monotonic()))
    finally:
        stop.set()
        if drip:
            dripper.join(timeout=5)
        result.closed = sum(
            1 for index, sock in enumerate(socks) if index in broken or _closed(sock)
        )
        for sock in socks:
            sock.close()
    return result


def baseline(ask: Ask, asks: int = 6) -> AttackResult:
    """The authorised request with no attack running, for comparison."""
    result = AttackResult(name="none", sockets=0, seconds=0.0)
    result.answers = [ask() for _ in range(asks)]
    return result


def _drip(socks: list[socket.socket], drip: bytes, stop: threading.Event, broken: set[int]) -> None:
    """Send ``drip`` over and over on every socket, a byte each half second."""
    at = 0
    while not stop.wait(0.5):
        byte = drip[at % len(drip) : at % len(drip) + 1]
        at += 1
        for index, sock in enumerate(socks):
            if index in broken:
                continue
            try:
                sock.sendall(byte)
            except OSError:
                broken.add(index)


def _closed(sock: socket.socket) -> bool:
    """Whether the server closed ``sock`` (end of stream or reset), without waiting."""
    sock.setblocking(False)
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        with contextlib.suppress(OSError):
            sock.setblocking(True)
