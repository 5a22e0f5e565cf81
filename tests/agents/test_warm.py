"""The warm prompt server: a real server on a real Unix socket over a real store, asked as the
prompt hook asks it; and the hook through the real command line starting one and using it."""

import json
import os
import socket
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memmesh.agents import warm
from memmesh.local.store import Store
from tests.conftest import MemRunner

VPN = "Staging deploys need the VPN: connect with wg-quick up staging first"
RELEASES = "Web releases are tagged vYYYY.MM.DD by the release script"
PROMPT = "How do I deploy to staging?"


def _serving(home: Path) -> Iterator[threading.Thread]:
    server = threading.Thread(target=warm.serve, args=(home,), daemon=True)
    server.start()
    deadline = time.monotonic() + 30
    while not warm.socket_path(home).exists():
        assert server.is_alive(), "the server stopped before it listened"
        assert time.monotonic() < deadline, "the server never listened"
        time.sleep(0.05)
    yield server
    warm.stop(home)
    server.join(10)
    assert not server.is_alive()


@pytest.fixture
def served(home: Path) -> Iterator[Path]:
    with Store(home) as store:
        store.remember(VPN, kind="gotcha", project="web")
    for _ in _serving(home):
        yield home


def _ask(home: Path, prompt: str = PROMPT, **extra: object) -> dict[str, object] | None:
    return warm.ask(home, {"prompt": prompt, "project": "web", **extra}, timeout=10)


def test_the_server_answers_a_prompt_with_the_items_relevant_to_it(served: Path) -> None:
    answer = _ask(served)

    assert answer is not None
    lines = answer["lines"]
    assert isinstance(lines, list)
    assert [(line["kind"], line["text"]) for line in lines] == [("gotcha", VPN)]
    assert _ask(served, "Write a haiku about autumn leaves") == {"lines": [], "note": ""}


def test_the_server_finds_what_was_remembered_after_it_started(served: Path) -> None:
    with Store(served) as store:
        store.remember(RELEASES, kind="convention", project="web")

    answer = _ask(served, "How are web releases tagged?")

    assert answer is not None
    lines = answer["lines"]
    assert isinstance(lines, list)
    assert [line["text"] for line in lines] == [RELEASES]


def test_the_socket_is_the_owners_alone(served: Path) -> None:
    mode = warm.socket_path(served).stat().st_mode
    assert stat.S_ISSOCK(mode)
    assert stat.S_IMODE(mode) == 0o600


def test_a_hook_of_another_version_gets_no_answer_and_the_server_stops(home: Path) -> None:
    with Store(home) as store:
        store.remember(VPN, kind="gotcha", project="web")
    for server in _serving(home):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(10)
            conn.connect(os.fspath(warm.socket_path(home)))
            request = {"prompt": PROMPT, "project": "web", "version": "0.0.0-other"}
            conn.sendall(json.dumps(request).encode() + b"\n")
            assert json.loads(conn.makefile("rb").readline()) == {"error": "another version"}
        server.join(10)
        assert not server.is_alive()


def test_a_second_server_for_the_same_home_exits_at_once(served: Path) -> None:
    assert warm.serve(served) is False
    assert _ask(served) is not None


def test_an_idle_server_stops_by_itself(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM_HOOK_WARM_IDLE", "1")
    with Store(home) as store:
        store.remember(VPN)

    started = time.monotonic()
    assert warm.serve(home) is True

    assert time.monotonic() - started < 30
    assert not warm.socket_path(home).exists()


def test_a_home_too_deep_for_a_socket_path_listens_in_a_folder_only_its_user_enters(
    tmp_path: Path,
) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    path = warm.socket_path(deep)

    assert len(os.fsencode(path)) <= 100
    folder = path.parent
    assert folder.name == f"memmesh-{os.getuid()}"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert warm.socket_path(deep) == path


def test_the_prompt_hook_starts_a_server_and_the_next_prompt_is_answered_by_it(
    mem: MemRunner, home: Path
) -> None:
    env = {"MEM_HOOK_WARM": "1", "MEM_HOOK_WARM_IDLE": "60", "MEM_PROJECT": "web"}
    assert mem("remember", VPN, "--kind", "gotcha", "--project", "web").returncode == 0
    hook_input = json.dumps({"prompt": PROMPT, "session_id": "s1"})

    try:
        cold = mem("hook", "prompt", "--client", "claude", stdin=hook_input, env=env)
        deadline = time.monotonic() + 30
        while _ask(home) is None:
            assert time.monotonic() < deadline, "the hook started no server"
            time.sleep(0.1)
        with Store(home) as store:  # a server's answer follows the store: so does the hook's
            store.remember("Staging deploys are frozen on Fridays", kind="gotcha", project="web")
        warm_answer = mem("hook", "prompt", "--client", "claude", stdin=hook_input, env=env)
    finally:
        warm.stop(home)

    assert (cold.returncode, cold.stderr) == (0, "")
    assert (warm_answer.returncode, warm_answer.stderr) == (0, "")
    first = json.loads(cold.stdout)["hookSpecificOutput"]["additionalContext"]
    second = json.loads(warm_answer.stdout)["hookSpecificOutput"]["additionalContext"]
    assert f"- [gotcha] {VPN}" in first.splitlines()
    assert f"- [gotcha] {VPN}" in second.splitlines()
    assert "- [gotcha] Staging deploys are frozen on Fridays" in second.splitlines()


@pytest.mark.skipif(
    os.getuid() != 0 or not Path("/usr/bin/python3").exists(),
    reason="needs root (to run a process as another user) and a system Python",
)
def test_another_local_user_cannot_ask_the_server(served: Path) -> None:
    path = os.fspath(warm.socket_path(served))
    probe = (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n"
        f"    s.connect({path!r})\n"
        "except OSError as e:\n"
        "    sys.exit(type(e).__name__)\n"
        "s.sendall(b'{}\\n'); print(s.recv(100))\n"
    )
    done = subprocess.run(
        ["/usr/bin/python3", "-c", probe],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        user=65534,
        cwd="/",
    )

    assert done.stderr.strip().splitlines()[-1] == "PermissionError"
    assert done.stdout == ""


def test_the_session_start_brief_starts_the_server_for_the_session_s_first_prompt(
    mem: MemRunner, home: Path
) -> None:
    env = {"MEM_HOOK_WARM": "1", "MEM_HOOK_WARM_IDLE": "60"}
    assert mem("remember", VPN, "--kind", "gotcha", "--project", "web").returncode == 0
    hook_input = json.dumps({"session_id": "s1", "source": "startup"})

    try:
        brief = mem("hook", "brief", "--client", "claude", stdin=hook_input, env=env)
        deadline = time.monotonic() + 30
        while _ask(home) is None:
            assert time.monotonic() < deadline, "the brief started no server"
            time.sleep(0.1)
    finally:
        warm.stop(home)

    assert (brief.returncode, brief.stderr) == (0, "")


def test_a_server_whose_store_was_switched_to_another_embedder_stops_for_a_fresh_one(
    home: Path,
) -> None:
    with Store(home) as store:
        store.remember(VPN, kind="gotcha", project="web")
    for server in _serving(home):
        assert _ask(home) is not None
        with Store(home) as store:
            store.reindex("hashing")

        assert _ask(home) is None  # the hook answers by itself
        server.join(10)
        assert not server.is_alive()

    for _ in _serving(home):  # the next one serves the store as it is now
        answer = _ask(home)
        assert answer is not None
        lines = answer["lines"]
        assert isinstance(lines, list)
        assert [line["text"] for line in lines] == [VPN]


def test_a_prompt_the_server_answers_starts_without_msgspec_or_numpy(
    served: Path, mem: MemRunner
) -> None:
    # The hook runs before every prompt: what the server answers costs only Python's start,
    # the hook's own modules and one round trip (docs/benchmarks.md, "the prompt hook").
    hook_input = json.dumps({"prompt": PROMPT, "session_id": "s1"})
    env = {"MEM_HOOK_WARM": "1", "MEM_PROJECT": "web"}

    # The first hook of a home makes the hooks' journal file, with every table it holds.
    assert mem("hook", "prompt", "--client", "claude", stdin=hook_input, env=env).returncode == 0
    timed = env | {"PYTHONPROFILEIMPORTTIME": "1"}
    result = mem("hook", "prompt", "--client", "claude", stdin=hook_input, env=timed)

    assert result.returncode == 0
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert f"- [gotcha] {VPN}" in context.splitlines()
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()}
    assert "memmesh.agents.prompt" in imported  # the import times were written
    assert sorted({"msgspec", "numpy", "memmesh.local.store"} & imported) == []
