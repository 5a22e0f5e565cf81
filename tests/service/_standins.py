"""Stand-ins for `systemctl` and `launchctl`, and `systemd-analyze verify` for unit files.

No test ever reaches a real service manager: each puts a stand-in first on the PATH of what
it runs. A stand-in is a small shell script that writes each command line it was given as
one line of ``NAME.log`` beside itself, fails (exit 1, with the lines of ``NAME.fail`` on
stderr) while ``NAME.fail`` exists, and answers a `show` or `print` with the lines of
``NAME.answer`` (exit 0), or exits 113 as launchctl does for a service it does not know.
"""

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

import pytest

_SCRIPT = """#!/bin/sh
printf '%s\\n' "$*" >> "$0.log"
if [ -f "$0.fail" ]; then
  while IFS= read -r line; do printf '%s\\n' "$line" >&2; done < "$0.fail"
  exit 1
fi
case "$1 $2" in
  "--user show"|print\\ *)
    [ -f "$0.answer" ] || exit 113
    while IFS= read -r line; do printf '%s\\n' "$line"; done < "$0.answer" ;;
esac
exit 0
"""

requires_systemd_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here"
)


class StandIn:
    """A stand-in program in ``folder`` (put the folder first on PATH)."""

    def __init__(self, folder: Path, name: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / name
        self.path.write_text(_SCRIPT, encoding="utf-8")
        self.path.chmod(0o755)

    def calls(self) -> list[str]:
        """Each command line it was given, in order."""
        log = self.path.with_name(f"{self.path.name}.log")
        return log.read_text(encoding="utf-8").splitlines() if log.exists() else []

    def fail_with(self, message: str) -> None:
        """Fail every call from now on, saying ``message`` on stderr."""
        self.path.with_name(f"{self.path.name}.fail").write_text(message + "\n", "utf-8")

    def answer(self, *lines: str) -> None:
        """Answer `show` and `print` with ``lines``."""
        self.path.with_name(f"{self.path.name}.answer").write_text(
            "".join(f"{line}\n" for line in lines), encoding="utf-8"
        )


def isolated_environ(user_home: Path, tools: Path, *, keep_path: bool = True) -> dict[str, str]:
    """The environment of a process that may run a service manager's program: HOME is the
    test's, the stand-ins in ``tools`` come first on PATH (``keep_path``: the usual PATH
    follows), and no session bus or runtime folder of the developer's is reachable."""
    environ = {
        name: value
        for name, value in os.environ.items()
        if name not in ("DBUS_SESSION_BUS_ADDRESS", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR")
    }
    runtime = user_home.parent / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    path = os.pathsep.join([str(tools), os.environ.get("PATH", "")] if keep_path else [str(tools)])
    return {**environ, "HOME": str(user_home), "PATH": path, "XDG_RUNTIME_DIR": str(runtime)}


def systemd_verify(units: Iterable[Path], user_home: Path) -> subprocess.CompletedProcess[str]:
    """`systemd-analyze --user verify` of ``units``, as the user manager of ``user_home``
    would load them (it needs a runtime folder of its own, and no manual pages). The folder
    has a short path: the user's socket units name sockets in it, and a socket's path is held
    to 107 bytes, which a test's own folder can pass."""
    with tempfile.TemporaryDirectory(prefix="run-") as runtime:
        environ = {
            **{k: v for k, v in os.environ.items() if k not in ("XDG_CONFIG_HOME",)},
            "HOME": str(user_home),
            "XDG_RUNTIME_DIR": runtime,
        }
        return subprocess.run(
            ["systemd-analyze", "--user", "--man=no", "verify", *map(str, units)],
            capture_output=True,
            text=True,
            env=environ,
            timeout=60,
            check=False,
        )
