"""`mem` builds its parser from light modules: the heavy stacks load only in the commands that
use them, so every command (and a hook an agent runs on each prompt) starts fast."""

import subprocess
import sys

HEAVY = ("numpy", "cryptography", "httpx", "starlette", "uvicorn", "zeroconf", "tomlkit")


def test_help_imports_none_of_the_heavy_stacks() -> None:
    shown = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "memmesh", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in shown.stderr.splitlines()}
    assert sorted(name for name in HEAVY if name in imported) == []
