"""Child processes: `mem` started detached from a hook, and stopping the demo's daemons (and
the tests' ones)."""

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["start_detached", "stop_process"]


def start_detached(home: Path, *words: str, env: dict[str, str] | None = None) -> None:
    """Start `mem --home HOME WORDS...` in a process of its own session, detached from this
    one's standard streams (``env`` added to the environment), and return at once: what a hook
    does to leave work to a process that may outlive it. Raises ``OSError``."""
    argv = [sys.executable, "-m", "memmesh", "--home", str(home.expanduser().resolve())]
    subprocess.Popen(
        [*argv, *words],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
        env={**os.environ, **(env or {})},
    )


def stop_process(process: "subprocess.Popen[Any]", *, grace: float = 10.0) -> None:
    """SIGTERM ``process`` and wait for it; SIGKILL it when it has not ended within ``grace``
    seconds. A process that already ended is left be."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=grace)
