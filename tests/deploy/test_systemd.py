"""deploy/systemd/: the coordinator's unit passes `systemd-analyze verify` and its security
review, holds the hardening it promises, runs a command line `mem` accepts with its data in
the state directory, and the sandbox it asks for lets the coordinator serve a member."""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memmesh.net.server import free_port
from tests._servers import stop
from tests.conftest import MemRunner
from tests.deploy._commands import (
    COORDINATOR_READS,
    DEPLOY,
    env_file,
    serve_arguments,
    substituted,
)
from tests.deploy._member import join_code_from, publish_and_ask

UNIT = DEPLOY / "systemd" / "memmesh-coordinator.service"
ENV_EXAMPLE = DEPLOY / "systemd" / "coordinator.env.example"
SYSUSERS = DEPLOY / "systemd" / "memmesh.sysusers"
MEM = Path(sys.executable).with_name("mem")
# What systemd itself gives ExecStart (StateDirectory=memmesh, as a system service).
SYSTEMD_GIVES = {"STATE_DIRECTORY": "/var/lib/memmesh"}
HARDENING = {
    "User": "memmesh",
    "Group": "memmesh",
    "StateDirectory": "memmesh",
    "StateDirectoryMode": "0700",
    "UMask": "0077",
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateMounts": "yes",
    "PrivateDevices": "yes",
    "PrivateUsers": "yes",
    "ProtectKernelTunables": "yes",
    "ProtectKernelModules": "yes",
    "ProtectKernelLogs": "yes",
    "ProtectControlGroups": "yes",
    "ProtectClock": "yes",
    "ProtectHostname": "yes",
    "ProtectProc": "invisible",
    "ProcSubset": "pid",
    "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
    "RestrictNamespaces": "yes",
    "RestrictRealtime": "yes",
    "RestrictSUIDSGID": "yes",
    "LockPersonality": "yes",
    "MemoryDenyWriteExecute": "yes",
    "RemoveIPC": "yes",
    "CapabilityBoundingSet": "",
    "AmbientCapabilities": "",
    "SystemCallArchitectures": "native",
    "SystemCallFilter": "@system-service ~@privileged",
    "Restart": "on-failure",
}
# PR_SET_MDWE with PR_MDWE_REFUSE_EXEC_GAIN (Linux 6.3): what MemoryDenyWriteExecute=yes
# asks of the kernel. The wrapper proves it holds (a writable, executable mapping is refused)
# before it becomes the command it is given.
_UNDER_MDWE = """import ctypes, mmap, os, sys
if ctypes.CDLL(None, use_errno=True).prctl(65, 1, 0, 0, 0) != 0:
    sys.exit("PR_SET_MDWE: not supported by this kernel")
try:
    mmap.mmap(-1, 4096, prot=mmap.PROT_WRITE | mmap.PROT_EXEC)
except PermissionError:
    os.execv(sys.argv[1], sys.argv[1:])
sys.exit("a writable, executable mapping was allowed")
"""
# ProcSubset=pid and ProtectProc=invisible: a /proc of processes only (no cpuinfo, meminfo,
# sys), in a mount namespace of the command's own.
_PROC_OF_PROCESSES_ONLY = [
    "unshare",
    "--mount",
    "--propagation",
    "private",
    "sh",
    "-c",
    'mount -t proc -o hidepid=invisible,subset=pid proc /proc && exec "$@"',
    "sh",
]


def _directives(path: Path) -> dict[str, list[str]]:
    """Each ``Key=value`` of the unit file, every value of a key repeated, in order."""
    found: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if "=" in line and not line.startswith(("#", ";", "[")):
            key, value = line.split("=", 1)
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def _systemd_analyze() -> str:
    found = shutil.which("systemd-analyze")
    if found is None:
        pytest.skip("no systemd-analyze on this machine (Debian: the systemd package)")
    return found


def _runnable_copy(tmp_path: Path) -> Path:
    """The unit, with ExecStart naming this venv's `mem` (verify wants it to exist)."""
    copy = tmp_path / UNIT.name
    copy.write_text(
        UNIT.read_text(encoding="utf-8").replace("/opt/memmesh/bin/mem", str(MEM)),
        encoding="utf-8",
    )
    return copy


def _exec_start(*, commented: bool = False) -> list[str]:
    """ExecStart's words, each variable replaced as systemd does (``${NAME}`` as one word,
    ``$NAME`` alone split at whitespace), from the example environment file (with
    ``commented``, its examples in comments too, the last of each name)."""
    (line,) = _directives(UNIT)["ExecStart"]
    values = {**env_file(ENV_EXAMPLE, commented=commented), **SYSTEMD_GIVES}
    words: list[str] = []
    for word in shlex.split(line):
        if word.startswith("$") and not word.startswith("${"):
            words += values.get(word[1:], "").split()
        else:
            words.append(substituted(word, values))
    return words


def test_the_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = _systemd_analyze()

    verified = subprocess.run(
        [analyze, "verify", "--man=no", _runnable_copy(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )

    assert verified.returncode == 0, verified.stderr
    assert UNIT.name not in verified.stdout + verified.stderr


def test_the_unit_holds_every_hardening_directive_it_promises() -> None:
    directives = _directives(UNIT)

    held = {key: " ".join(directives.get(key, ["(missing)"])) for key in HARDENING}

    assert held == HARDENING


def test_systemd_analyze_security_rates_the_unit_ok(tmp_path: Path) -> None:
    analyze = _systemd_analyze()

    # Exposure from 0 (best) to 10; systemd calls up to 1.9 "OK", up to 4.9 "MEDIUM".
    reviewed = subprocess.run(
        [analyze, "security", "--offline=yes", "--threshold=19", _runnable_copy(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )

    assert reviewed.returncode == 0, reviewed.stdout + reviewed.stderr
    level = re.search(rf"exposure level for {UNIT.name}: ([\d.]+) OK", reviewed.stdout)
    assert level, reviewed.stdout
    assert float(level.group(1)) < 2


def test_the_units_command_line_is_mems_with_its_data_in_the_state_directory() -> None:
    words = _exec_start()

    parsed = serve_arguments(words[1:])

    assert words[0] == "/opt/memmesh/bin/mem"
    assert parsed.data == SYSTEMD_GIVES["STATE_DIRECTORY"]
    assert (parsed.team, parsed.url) == ("acme", "https://team-host.example.com:8400")
    every = "0.0.0.0"  # noqa: S104 (only parsed)
    assert (parsed.host, parsed.port, parsed.workers) == (every, 8400, 2)


def test_the_environment_files_proxy_flags_serve_plain_http_on_loopback_to_the_proxy() -> None:
    parsed = serve_arguments(_exec_start(commented=True)[1:])

    assert (parsed.host, parsed.insecure_http, parsed.client_connections) == (
        "127.0.0.1",
        True,
        1024,
    )


def test_the_environment_files_names_are_the_coordinators_or_the_units_own() -> None:
    (line,) = _directives(UNIT)["ExecStart"]
    in_command = {name for name in env_file(ENV_EXAMPLE, commented=True) if name in line}

    named = set(env_file(ENV_EXAMPLE, commented=True))

    assert named - in_command <= COORDINATOR_READS
    assert named - in_command, "the example shows none of what the coordinator reads"
    assert _directives(UNIT)["EnvironmentFile"] == ["/etc/memmesh/coordinator.env"]


def test_the_sysusers_file_makes_the_memmesh_system_user(tmp_path: Path) -> None:
    sysusers = shutil.which("systemd-sysusers")
    if sysusers is None:
        pytest.skip("no systemd-sysusers on this machine (Debian: the systemd package)")
    (tmp_path / "etc").mkdir()

    made = subprocess.run(
        [sysusers, f"--root={tmp_path}", SYSUSERS], capture_output=True, text=True, check=False
    )

    assert made.returncode == 0, made.stderr
    entry = next(
        line.split(":")
        for line in (tmp_path / "etc" / "passwd").read_text(encoding="utf-8").splitlines()
        if line.startswith("memmesh:")
    )
    assert int(entry[2]) < 1000, "a system user"
    assert (entry[5], entry[6]) == ("/var/lib/memmesh", "/usr/sbin/nologin")


@pytest.mark.skipif(
    sys.platform != "linux" or os.geteuid() != 0,
    reason="mounting a proc that shows only processes, as ProcSubset=pid does, needs root",
)
def test_the_coordinator_serves_a_member_in_the_units_memory_and_proc_sandbox(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    log = tmp_path / "serve.log"
    port = str(free_port())
    serve = [
        str(MEM),
        "coordinator",
        "serve",
        "--data",
        str(data),
        "--team",
        "acme",
        "--port",
        port,
        "--url",
        f"https://127.0.0.1:{port}",
        "--workers",
        "2",
    ]
    with log.open("wb") as out:
        coordinator = subprocess.Popen(
            [*_PROC_OF_PROCESSES_ONLY, sys.executable, "-c", _UNDER_MDWE, *serve],
            stdout=subprocess.DEVNULL,
            stderr=out,
        )
    try:
        code = join_code_from(
            lambda: log.read_text(encoding="utf-8"), alive=lambda: coordinator.poll() is None
        )

        answered = publish_and_ask(MemRunner(tmp_path / "ada", tmp_path), code)

        assert answered.coordinator_hits() == [answered.item]
    finally:
        stop(coordinator)
    assert "Traceback" not in log.read_text(encoding="utf-8")
