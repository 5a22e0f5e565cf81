"""Stopping a child process: the demo's daemons, and the tests' ones."""

import subprocess
from typing import Any

__all__ = ["stop_process"]


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
