"""`mem demo`: a whole team on loopback, through the real command line, and nothing left behind."""

import os
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from memmesh.cli import _demo_team
from memmesh.cli.main import main
from memmesh.errors import ExitCode
from tests.conftest import MemRunner


def _port_is_closed(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        return probe.connect_ex(("127.0.0.1", port)) != 0


def test_demo_shows_the_team_at_work_and_leaves_nothing_behind(
    mem: MemRunner, tmp_path: Path
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    demo = mem("demo", env={"TMPDIR": str(scratch)})
    assert demo.returncode == 0, demo.stderr
    assert "Traceback" not in demo.stdout + demo.stderr
    out = demo.stdout
    lines = out.splitlines()
    assert lines[0].startswith(f"memmesh demo: a team of three on loopback, in {scratch}/")
    # Every daemon on https; the first member joins with the admin code, the others by invite.
    assert "--tls" in lines[2]
    joined = r"^\$ mem --home {} team join memmesh-join:\S+ +-> [a-z2-7]{{16}}{}$"
    assert re.search(joined.format("ada", r" \(admin\)"), out, re.M)
    assert "$ mem --home ada team invite bob" in out
    assert re.search(joined.format("carol", ""), out, re.M)
    assert out.count("team serve") == 3
    assert all("--tls" in line for line in lines if "team serve" in line)

    # A teammate's answer, attributed, from the live peer.
    scheduler = lines.index(
        '$ mem --home bob team recall-team "which lock does the job scheduler use?"'
    )
    assert re.match(r"  \d\.\d\d  ada +We chose Postgres advisory locks", lines[scheduler + 1])
    assert "[via peer ada]" in lines[scheduler + 1]
    # Private notes never leave.
    private = lines.index('$ mem --home bob team recall-team "my quarterly self-review"')
    assert lines[private + 1] == "  (nothing relevant from the team)"
    # The author sees that bob was served the answer, from both logs.
    disclosures = lines.index("$ mem --home ada team disclosures")
    served = lines[disclosures + 1 : disclosures + 3]
    assert all("served to bob" in line for line in served), served
    logs = {line.rsplit("(", 1)[1] for line in served}
    assert logs == {"logged by the peer)", "logged by the coordinator)"}
    # A secret is refused even with --force.
    assert "secret detected: password-in-url" in out
    # A retraction vanishes from every answer.
    asked = [i for i, line in enumerate(lines) if line.endswith('recall-team "node-gyp E1234"')]
    assert len(asked) == 2
    assert "node-gyp error E1234" in lines[asked[0] + 1]
    assert lines[asked[1] + 1] == "  (nothing relevant from the team)"
    # Carol offline: the coordinator's cache answers, and her source is reported failed.
    webhooks = lines.index(
        '$ mem --home bob team recall-team "how often are failed webhooks retried?"'
    )
    assert "carol" in lines[webhooks + 1]
    assert "[via coordinator]" in lines[webhooks + 1]
    assert "carol failed" in lines[webhooks + 2]
    # Revoked with --purge: carol's items vanish, her peer is no longer a source.
    revoked = lines.index("$ mem --home ada team revoke carol --purge --yes")
    assert lines[revoked + 1] == "  revoked carol; 2 published items purged"
    after = lines.index(
        '$ mem --home bob team recall-team "how often are failed webhooks retried?"', revoked
    )
    assert lines[after + 1] == "  (nothing relevant from the team)"
    assert "carol" not in lines[after + 2]

    assert lines[-1] == "done: every process stopped; the temporary homes are removed."
    assert list(scratch.iterdir()) == []
    assert not (mem.home / "memory.db").exists()  # the demo never touches the member's home
    ports = [int(p) for p in re.findall(r"--port (\d+)", out)]
    assert len(ports) == 4  # the coordinator and three peer daemons
    assert all(_port_is_closed(port) for port in ports)


def test_demo_cleans_up_when_its_reader_goes_away(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    # Close the pipe before the demo prints its first line, as `mem demo | head -0` would.
    process = subprocess.Popen(
        [sys.executable, "-m", "memmesh", "demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    assert process.stdout is not None
    assert process.stderr is not None
    process.stdout.close()
    stderr = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait(timeout=120) == ExitCode.CLOSED_PIPE
    assert stderr == ""
    assert list(scratch.iterdir()) == []


def test_demo_says_only_what_becomes_of_its_homes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The walk-through itself is the test above; here only what the command says at the end.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setattr(_demo_team, "run_demo", lambda root: (root / "ada").mkdir())

    assert main(["demo", "--keep"]) == 0
    (kept,) = scratch.iterdir()
    assert (kept / "ada").is_dir()
    said = capsys.readouterr().out
    assert said == f"\ndone: every process stopped; the demo's homes are kept in {kept}.\n"

    assert main(["demo"]) == 0
    assert list(scratch.iterdir()) == [kept]
    assert (
        capsys.readouterr().out
        == "\ndone: every process stopped; the temporary homes are removed.\n"
    )
