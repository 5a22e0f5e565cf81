"""`mem` defers the collector's first run: a command on a small store ends before it would
run at all (the modules it loads are objects that live to the end, which collecting 60 times
as they load cost a `mem recall` some 7 ms), and a command that makes many more objects is
collected as usual once it has."""

import gc
import subprocess
import sys
from pathlib import Path

from memmesh.cli.main import main

# `mem` on its own command line, counting the collector's runs; then, as a long command
# would, 300,000 objects in cycles. Prints the runs during `mem`, the threshold it left, the
# runs after, and the threshold then.
_RUN = """
import gc, sys
runs = []
gc.callbacks.append(lambda phase, info: phase == "start" and runs.append(info["generation"]))
default = gc.get_threshold()
from memmesh.cli.main import main
before = len(runs)
code = main()
during, left = len(runs) - before, gc.get_threshold()
for _ in range(300_000):
    cycle = []
    cycle.append(cycle)
print(during, left == default, len(runs) - before - during, gc.get_threshold() == default)
sys.stdout.flush()
raise SystemExit(code)
"""


def test_a_recall_on_a_small_store_runs_no_collection_and_a_long_command_collects(
    tmp_path: Path,
) -> None:
    home = str(tmp_path / "home")
    for n in range(20):
        remembered = subprocess.run(
            [sys.executable, "-m", "memmesh", "--home", home, "remember", "--global", f"fact {n}"],
            capture_output=True,
            check=False,
        )
        assert remembered.returncode == 0, remembered.stderr

    ran = subprocess.run(
        [sys.executable, "-c", _RUN, "--home", home, "recall", "fact 7"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )

    assert ran.returncode == 0, ran.stderr
    *shown, counts = ran.stdout.splitlines()
    assert "fact 7" in "\n".join(shown)
    during, left_default, after, then_default = counts.split()
    assert (during, left_default) == ("0", "False")
    # Past the deferred threshold, the collector runs, and on its usual schedule from then.
    assert int(after) > 100
    assert then_default == "True"


def test_a_command_run_in_process_leaves_the_threshold_as_it_was() -> None:
    threshold, callbacks = gc.get_threshold(), list(gc.callbacks)

    assert main(["--help"]) == 0
    assert (gc.get_threshold(), gc.callbacks) == (threshold, callbacks)
