"""One peer daemon per home: real `mem team serve` processes on 127.0.0.1, one killed with
SIGKILL, and the lock read from this process."""

import fcntl
import os
import re
import subprocess
import threading
from pathlib import Path

import pytest

from memmesh.net.errors import CannotListen
from memmesh.net.server import free_port
from memmesh.peer.lock import LOCK_FILENAME, peer_lock, running_peer
from tests.conftest import MemRunner
from tests.team._team import PeerDaemon, Team


def test_a_second_serve_on_one_home_is_refused_naming_the_first_until_it_is_killed(
    loopback_team: Team,
) -> None:
    ada = loopback_team.add("ada")
    (first,) = loopback_team.serve(ada)
    assert first.process is not None
    mem = MemRunner(ada.home, Path.cwd())

    same_port = mem("team", "serve", "--port", str(first.port))
    other = PeerDaemon(ada)
    loopback_team.daemons.append(other)
    other.launch()
    assert other.process is not None
    try:
        other_port = other.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        other_port = None  # it started: the finding
    named = f"(pid {first.process.pid}, at {first.url})"

    assert same_port.returncode == 1, same_port.stderr
    assert same_port.stderr == (
        f"mem: error: cannot listen on 127.0.0.1:{first.port}: this home's peer daemon already "
        f"runs {named}: one home has one peer daemon; stop that one first\n"
    )
    assert other_port == 1
    assert named in other.log.read_text(encoding="utf-8")

    first.kill()  # SIGKILL: nothing is cleaned up, the kernel drops the lock
    assert running_peer(ada.home) is None
    (again,) = loopback_team.serve(ada, ports={"ada": first.port})
    assert again.process is not None
    record = running_peer(ada.home)
    assert record is not None
    assert (record.pid, record.url, record.port) == (again.process.pid, again.url, again.port)


def test_the_lock_names_the_running_daemon_and_goes_when_it_is_left(tmp_path: Path) -> None:
    port = free_port()
    assert running_peer(tmp_path) is None
    with peer_lock(tmp_path, host="127.0.0.1", port=port) as lock:
        started = running_peer(tmp_path)
        lock.record(url="https://ada.example:8410", pin="sha256:abc")
        assert started is not None
        assert (started.pid, started.url) == (os.getpid(), "")
        assert running_peer(tmp_path) == lock.record_now
        named = re.escape(f"(pid {os.getpid()}, at https://ada.example:8410)")
        with (
            pytest.raises(CannotListen, match=named),
            peer_lock(tmp_path, host="127.0.0.1", port=port + 1),
        ):
            pytest.fail("a second lock was taken")
    assert running_peer(tmp_path) is None
    assert (tmp_path / LOCK_FILENAME).exists()  # left behind, and meaningless unlocked


def test_a_daemon_starting_while_someone_reads_the_lock_starts_all_the_same(
    tmp_path: Path,
) -> None:
    # `mem doctor` reads the lock (a shared flock) for a moment; a daemon starting just then
    # waits it out rather than refusing in the name of a daemon that is long gone.
    with peer_lock(tmp_path, host="127.0.0.1", port=8410) as held:
        held.record(url="http://127.0.0.1:8410")
    reader = os.open(tmp_path / LOCK_FILENAME, os.O_RDONLY)
    fcntl.flock(reader, fcntl.LOCK_SH)
    threading.Timer(0.2, os.close, (reader,)).start()

    with peer_lock(tmp_path, host="127.0.0.1", port=8411) as held:
        assert held.record_now.port == 8411
