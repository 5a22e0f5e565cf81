"""`mem ui` run for real, as a user starts it: a subprocess on a free port, read until it
prints its address."""

import os
import re
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memmesh._processes import stop_process

ADDRESS = re.compile(r"http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]+)")


class Launched:
    """A running `mem ui`: its process, the address it printed, and the parts of it."""

    def __init__(self, process: "subprocess.Popen[str]", line: str) -> None:
        self.process = process
        match = ADDRESS.search(line)
        assert match, line
        self.address = match.group(0)
        self.port = int(match.group(1))
        self.token = match.group(2)
        self.url = f"http://127.0.0.1:{self.port}"


def ui_command(home: Path, *words: str) -> list[str]:
    """The command line of `mem --home HOME ui --no-browser WORDS`."""
    return [sys.executable, "-m", "memmesh", "--home", str(home), "ui", "--no-browser", *words]


@contextmanager
def launched(home: Path, *words: str, timeout: float = 30.0) -> Iterator[Launched]:
    """`mem ui` for ``home`` while the ``with`` runs, stopped after."""
    process = subprocess.Popen(
        ui_command(home, *words),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        yield Launched(process, _first_line(process, timeout))
    finally:
        stop_process(process)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def _first_line(process: "subprocess.Popen[str]", timeout: float) -> str:
    """The first line ``process`` prints, within ``timeout`` seconds."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as waiting:
        waiting.register(process.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if waiting.select(timeout=0.2):
                line = process.stdout.readline()
                if line:
                    return line
            if process.poll() is not None:
                stderr = process.stderr.read() if process.stderr else ""
                raise AssertionError(f"mem ui ended ({process.returncode}): {stderr}")
    raise AssertionError("mem ui printed no address in time")
