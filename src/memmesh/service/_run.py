"""Running a service manager's program (`systemctl`, `launchctl`) and saying why it failed."""

import shutil
import subprocess

import msgspec

from memmesh.service.plan import Command

# Seconds a manager's program may take: `enable --now` waits for the service to start.
TIMEOUT = 60.0


class Answer(msgspec.Struct, frozen=True, kw_only=True):
    """What a manager's program did: ``ok`` when it ran and exited 0; else ``problem`` says
    why, and ``unreachable`` whether it did not run at all (not on PATH, not executable, too
    slow)."""

    ok: bool
    code: int = 0
    out: str = ""
    problem: str = ""
    unreachable: bool = False


def run(command: Command) -> Answer:
    """Run ``command`` (its program looked up on PATH), its output captured."""
    program, *arguments = command.argv
    found = shutil.which(program)
    if found is None:
        return Answer(ok=False, problem=f"{program} was not found on PATH", unreachable=True)
    try:
        done = subprocess.run(
            [found, *arguments],
            capture_output=True,
            text=True,
            errors="replace",
            stdin=subprocess.DEVNULL,
            timeout=TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        problem = f"{program} did not run: {type(exc).__name__}"
        return Answer(ok=False, problem=problem, unreachable=True)
    if done.returncode == 0:
        return Answer(ok=True, out=done.stdout)
    said = (done.stderr.strip() or done.stdout.strip()).splitlines()
    what = " ".join(command.argv[:2]) if command.argv[1:2] == ("--user",) else program
    problem = f"{what} failed: {said[-1].strip() if said else f'exit {done.returncode}'}"
    return Answer(ok=False, code=done.returncode, out=done.stdout, problem=problem)
