"""Reading what the real `mem` command printed."""

import json
import subprocess
from typing import Any


def json_of(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The one JSON object a successful ``--json`` command printed."""
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") == 1, result.stdout
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The single line a refused command printed on stderr (and it printed no traceback)."""
    assert "Traceback" not in result.stdout + result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def json_error(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The one JSON object a failed ``--json`` command printed on stderr (nothing on stdout,
    no traceback), which names the exit code the command exited with."""
    error: dict[str, Any] = json.loads(error_line(result))
    assert set(error) == {"error", "code", "exit"}
    assert error["exit"] == result.returncode
    return error
