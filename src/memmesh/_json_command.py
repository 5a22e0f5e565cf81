"""A program the user names (``MEM_EXTRACT_COMMAND``, ``MEM_JUDGE_COMMAND``) given JSON on its
standard input and read for JSON on its standard output, within a time limit."""

import json
import shlex
import subprocess
from typing import Any

__all__ = ["run_json"]


def run_json(command: str, data: object, limit: float) -> Any:
    """What ``command`` (split as a shell would, run without one) prints as JSON when given
    ``data`` as JSON; raises :class:`ValueError` saying what went wrong, in words that follow
    "the command" (``gave no answer within 10 s``)."""
    try:
        done = subprocess.run(
            shlex.split(command),
            input=json.dumps(data).encode(),
            capture_output=True,
            timeout=limit,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ValueError(f"gave no answer within {limit:g} s") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"could not be run ({exc})") from None
    if done.returncode != 0:
        raise ValueError(f"exited with status {done.returncode}")
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise ValueError("did not print JSON") from None
