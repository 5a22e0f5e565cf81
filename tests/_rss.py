"""The peak memory of a real `mem` run, measured in a process of its own."""

import subprocess
import sys
from pathlib import Path

# Runs the command given as arguments and prints the peak resident size of its children in
# bytes: a fresh parent, so no earlier child of the test run is counted.
_MEASURE = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], capture_output=True, check=False)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
)


def peak_bytes(home: Path, cwd: Path, *args: str) -> int:
    """The peak resident memory of `mem --home HOME ARGS...` in bytes."""
    command = [sys.executable, "-m", "memmesh", "--home", str(home), *args]
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, *command],
        capture_output=True, text=True, cwd=cwd, timeout=120, check=True,
    )  # fmt: skip
    return int(done.stdout)
