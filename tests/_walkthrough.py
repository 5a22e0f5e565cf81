"""Running a README walk-through: its shell blocks, line by line, on the machines it names.

The README's conventions, which this module reads and nothing else:

* A block's first line says where it runs: ``# on the team host``, ``# on NAME's laptop`` or
  ``# on one machine`` (where members are homes of their own, ``--home DIR``). Each machine is
  a fresh home folder (``HOME``, so ``~/.memmesh`` is its memmesh home).
* Every other line that is not a comment is a command, run by bash with the venv's ``mem``
  first on the PATH; it must exit 0. Like a shell, a machine keeps the folder a ``cd`` went
  to for its next commands. A command ending in ``&``, or a coordinator, is a daemon: it is
  started, waited for until it answers, and stopped at the end.
* Each step knows the section (``##`` or ``###`` heading) it is under, so that a test can run
  one section's commands on their own (:func:`in_section`).
* ``#>`` lines show what the command above them prints on stdout: the whole of it, line by
  line. Placeholder ids (:data:`ITEM_PLACEHOLDER`) stand for the ids commands print, bound
  the first time shown output holds one; ``…`` stands for any text, a decimal number for any
  decimal number (scores), an ISO 8601 time for any time.

A line that cannot run here is in :data:`ALLOWED` with its reason; any other line runs, and a
line this module cannot place (a block naming no machine, an id used before any command
printed it) fails the walk-through.
"""

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import NoReturn

import httpx

from memmesh.net.server import free_port
from tests._servers import stop

# Lines that cannot run here, each with its reason. Each must still be in the README.
ALLOWED = {
    "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/mem demo": (
        "makes a venv and installs from the network; the demo itself: tests/cli/test_demo.py"
    ),
    "python3 -m venv .venv && .venv/bin/pip install -e '.[dev,model,mcp,static]' && "
    ".venv/bin/python -m pytest": "installs from the network, then runs this very suite",
    ".venv/bin/pip install -e '.[mcp]'": "installs from the network (the tests have the extra)",
}
MACHINE = re.compile(r"# on (?:the (team host)|(\w+)'s laptop|(one machine))\b")
HEADING = re.compile(r"^#{2,3} (.+)$", re.MULTILINE)
ONE_MACHINE = "Try a team on one machine"
# The fixed port of the one-machine trial, which the walk replaces with a free one.
ONE_MACHINE_RULES = ("--port 8400", "https://127.0.0.1:8400")
ITEM_PLACEHOLDER = re.compile(r"\b01J[0-9A-HJKMNP-TV-Z]{7}\b")  # 2024 ids: no real one now
ITEM_ID = "[0-9A-HJKMNP-TV-Z]{10,26}"
JOIN_PLACEHOLDER = "memmesh-join:eyJ1cmwi…"
JOIN_CODE = re.compile(r"memmesh-join:[A-Za-z0-9_-]+")
_ANY_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)"
_ANY_DECIMAL = r"\d+\.\d+"
_SHOWN = re.compile(rf"(?P<id>{ITEM_PLACEHOLDER.pattern})|(?P<time>{_ANY_TIME})|"
                    rf"(?P<decimal>{_ANY_DECIMAL})|(?P<any>…)")  # fmt: skip
_READY = re.compile(r"^memmesh (?:coordinator|peer \w+) on (\S+)", re.MULTILINE)
# The test's editor: the one change to team.yaml that the `$EDITOR` line's comment states.
_EDITOR = """import os, re, sys
from pathlib import Path
path, wanted = Path(sys.argv[1]), os.environ["README_EDIT"]
text = path.read_text(encoding="utf-8")
edited = re.sub(r"^  kinds: \\[\\]$", "  " + wanted, text, count=1, flags=re.MULTILINE)
if not wanted or edited == text:
    sys.exit(f"editor: cannot make the change {wanted!r} to {path}")
path.write_text(edited, encoding="utf-8")
"""


class WalkthroughError(AssertionError):
    """A README line that cannot be placed, or that did not do what the README shows."""


@dataclass
class Step:
    """One command of the README: where it runs, and what it shows it prints."""

    line: int
    machine: str
    command: str
    comment: str
    shown: list[str] = field(default_factory=list)
    section: str = ""

    def where(self) -> str:
        return f"README.md:{self.line} ({self.machine}): {self.command}"


def split_comment(line: str) -> tuple[str, str]:
    """A shell line's command and its trailing ``# comment`` (a ``#`` outside quotes, after a
    space)."""
    quote = ""
    for at, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (at == 0 or line[at - 1].isspace()):
            return line[:at].rstrip(), line[at + 1 :].strip()
    return line.rstrip(), ""


def steps_of(text: str) -> tuple[list[Step], set[str]]:
    """The commands of every ```sh block in order, and the allowed lines that were met."""
    steps: list[Step] = []
    allowed: set[str] = set()
    for block in re.finditer(r"```sh\n(.*?)```", text, re.DOTALL):
        first = text.count("\n", 0, block.start(1)) + 1
        headings = HEADING.findall(text, 0, block.start())
        section = headings[-1] if headings else ""
        machine = ""
        for offset, raw in enumerate(block.group(1).splitlines()):
            number, line = first + offset, raw.strip()
            command, comment = split_comment(line)
            if placed := MACHINE.match(line):
                if offset:
                    raise WalkthroughError(f"README.md:{number}: a machine named mid-block")
                machine = placed.group(1) or placed.group(2) or placed.group(3)
            elif line.startswith("#>"):
                if not steps or steps[-1].line < first:
                    raise WalkthroughError(f"README.md:{number}: output shown under no command")
                steps[-1].shown.append(raw.strip()[3:] if raw.strip() != "#>" else "")
            elif command in ALLOWED:
                allowed.add(command)
            elif command:
                if not machine:
                    raise WalkthroughError(
                        f"README.md:{number}: its block names no machine (`# on NAME's "
                        f"laptop` first): {command}"
                    )
                steps.append(Step(number, machine, command, comment, section=section))
    return steps, allowed


def in_section(steps: list[Step], section: str) -> list[Step]:
    """The steps under the heading ``section``; fails when there are none."""
    chosen = [step for step in steps if step.section == section]
    if not chosen:
        raise WalkthroughError(f"README.md: no commands under the heading {section!r}")
    return chosen


def shown_pattern(shown: list[str], bound: dict[str, str]) -> tuple[re.Pattern[str], list[str]]:
    """The regular expression shown output stands for, and the placeholders its groups bind
    (``g0`` binds the first, ...)."""
    parts: list[str] = []
    binds: list[str] = []
    for line in shown:
        at = 0
        for token in _SHOWN.finditer(line):
            parts.append(re.escape(line[at : token.start()]))
            at = token.end()
            placeholder = token.group("id")
            if placeholder in bound:
                parts.append(re.escape(bound[placeholder]))
            elif placeholder in binds:
                parts.append(f"(?P=g{binds.index(placeholder)})")
            elif placeholder:
                parts.append(f"(?P<g{len(binds)}>{ITEM_ID})")
                binds.append(placeholder)
            elif token.group("time"):
                parts.append(_ANY_TIME)
            elif token.group("decimal"):
                parts.append(_ANY_DECIMAL)
            else:
                parts.append(r"[^\n]*?")
        parts.append(re.escape(line[at:]) + r"\n")
    return re.compile("".join(parts)), binds


@dataclass
class Machine:
    """A laptop or the team host: its own home, and a working folder outside any git
    repository (so the project is ``global``)."""

    home: Path
    cwd: Path


class Walk:
    """Runs steps in order on fresh machines under ``root``; :meth:`close` stops its daemons."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.machines: dict[str, Machine] = {}
        self.bound: dict[str, str] = {}
        self.join_code = ""
        self.daemons: list[tuple[Step, subprocess.Popen[bytes], Path]] = []
        self.editor = root / "editor.py"
        self.editor.write_text(_EDITOR, encoding="utf-8")
        port = free_port()
        # Explicit rewrites, applied in this order, each used at least once by the walk it
        # belongs to. The team host is this machine's loopback on a free port (serving https,
        # as its https --url says), a peer daemon listens on loopback on a free port, and the
        # coordinator's data folder is under the test's folder. The one-machine trial's
        # coordinator, on 127.0.0.1:8400 as written, is on the free port.
        one_port, one_url = ONE_MACHINE_RULES
        self.rules: dict[str, Callable[[Step], str]] = {
            one_port: lambda _: f"--port {port}",
            one_url: lambda _: f"https://127.0.0.1:{port}",
            "/var/lib/memmesh": lambda step: str(self.machine(step).home / "data"),
            "mem team serve --host 0.0.0.0": lambda _: f"mem team serve --port {free_port()}",
            "--host 0.0.0.0": lambda _: f"--host 127.0.0.1 --port {port}",
            "https://team-host:8400": lambda _: f"https://127.0.0.1:{port}",
            JOIN_PLACEHOLDER: lambda step: self.join_code or self.fail(step, "no join code yet"),
        }
        self.used: set[str] = set()

    def machine(self, step: Step) -> Machine:
        if step.machine not in self.machines:
            home = self.root / step.machine.replace(" ", "-")
            (home / "work").mkdir(parents=True)
            self.machines[step.machine] = Machine(home, home / "work")
        return self.machines[step.machine]

    def fail(self, step: Step, why: str) -> NoReturn:
        raise WalkthroughError(f"{step.where()}\n{why}")

    def env(self, step: Step) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEM_")}
        bin_folder = Path(sys.executable).parent
        env.update(HOME=str(self.machine(step).home), PATH=f"{bin_folder}:{env['PATH']}")
        wanted = re.search(r"kinds: \[[a-z, ]*\]", step.comment)
        env["EDITOR"] = f"{sys.executable} {self.editor}"
        env["README_EDIT"] = wanted.group() if wanted else ""
        return env

    def command(self, step: Step) -> str:
        """The step's command with every placeholder and rule applied."""
        command = step.command
        for placeholder in ITEM_PLACEHOLDER.findall(command):
            if placeholder not in self.bound:
                self.fail(step, f"{placeholder} is used before any shown output printed it")
            command = command.replace(placeholder, self.bound[placeholder])
        for old, new in self.rules.items():
            if old in command:
                command = command.replace(old, new(step))
                self.used.add(old)
        return command

    def run(self, step: Step) -> None:
        command = self.command(step)
        if command.endswith("&") or command.startswith("mem coordinator serve"):
            self.start(step, command.removesuffix("&").rstrip())
            return
        machine = self.machine(step)
        # The folder the command ends in is where the machine's next command starts.
        where = self.root / "last-cwd.txt"
        where.unlink(missing_ok=True)
        script = f'set -o pipefail; {command}\nstatus=$?; pwd > "{where}"; exit $status'
        result = subprocess.run(
            ["bash", "-c", script], cwd=machine.cwd, env=self.env(step),
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        if where.is_file():
            machine.cwd = Path(where.read_text(encoding="utf-8").strip())
        printed = f"exit {result.returncode}\nstdout:\n{result.stdout}stderr:\n{result.stderr}"
        if result.returncode != 0 or "Traceback" in result.stdout + result.stderr:
            self.fail(step, printed)
        self.note_join_codes(result.stdout + result.stderr)
        if step.shown:
            self.check_shown(step, result.stdout, printed)

    def check_shown(self, step: Step, stdout: str, printed: str) -> None:
        pattern, binds = shown_pattern(step.shown, self.bound)
        matched = pattern.fullmatch(stdout)
        if matched is None:
            self.fail(step, "shown:\n" + "\n".join(step.shown) + f"\nbut {printed}")
        for index, placeholder in enumerate(binds):
            value = matched.group(f"g{index}")
            if value in self.bound.values():
                self.fail(step, f"{placeholder} stands for {value}, which another id shown is")
            self.bound[placeholder] = value

    def note_join_codes(self, output: str) -> None:
        for code in JOIN_CODE.findall(output):
            self.join_code = code

    def start(self, step: Step, command: str) -> None:
        """Start a daemon and wait until it answers (a peer: until the coordinator lists it)."""
        log = self.root / f"daemon-{len(self.daemons)}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                ["bash", "-c", f"exec {command}"], cwd=self.machine(step).cwd, env=self.env(step),
                stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        self.daemons.append((step, process, log))
        url = self.wait(step, lambda: _ready(log, process, step))
        self.note_join_codes(log.read_text(encoding="utf-8"))
        if "team serve" in step.command:
            for name in self.machines.keys() - {step.machine, "team host"}:
                other = Step(step.line, name, "mem team peers --json", "")
                self.wait(step, partial(self.lists_peer, other, url))

    def lists_peer(self, step: Step, url: str) -> str | None:
        peers = subprocess.run(
            ["mem", "team", "peers", "--json"], cwd=self.machine(step).cwd, env=self.env(step),
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        return url if url in peers.stdout else None

    def wait(self, step: Step, ready: Callable[[], str | None]) -> str:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if found := ready():
                return found
            time.sleep(0.1)
        raise WalkthroughError(f"{step.where()}\nit did not answer within 20 s")

    def close(self) -> list[str]:
        """Stop the daemons; what each printed when it held a traceback."""
        broken = []
        for step, process, log in self.daemons:
            stop(process)
            if "Traceback" in (output := log.read_text(encoding="utf-8", errors="replace")):
                broken.append(f"{step.where()}\n{output}")
        return broken


def _ready(log: Path, process: subprocess.Popen[bytes], step: Step) -> str | None:
    """The URL a daemon serves at once it answers there; fails when it exited."""
    output = log.read_text(encoding="utf-8", errors="replace")
    if process.poll() is not None:
        raise WalkthroughError(f"{step.where()}\nexited with {process.returncode}:\n{output}")
    said = _READY.search(output)
    if said is None:
        return None
    try:
        # Only whether it answers: members check the certificate against its pin.
        answer = httpx.get(f"{said.group(1)}/healthz", timeout=1, verify=False)  # noqa: S501
    except httpx.TransportError:
        return None
    return said.group(1) if answer.status_code == 200 else None
