"""`mem ui` started for real: it prints its address with a token, one page runs per home,
its token is the member's alone and new on every start, and it listens on loopback only."""

import socket

import httpx

from memmesh.web.security import COOKIE
from tests.conftest import MemRunner, mode_of
from tests.web._launch import launched


def test_it_prints_an_address_whose_token_signs_in(mem: MemRunner) -> None:
    mem("remember", "deploys go out on Tuesdays")
    with launched(mem.home) as ui:
        signed_in = httpx.get(ui.address)
        assert signed_in.status_code == 200
        assert signed_in.cookies[COOKIE] == ui.token
        page = httpx.get(ui.url + "/", cookies={COOKIE: ui.token})
        assert page.status_code == 200
        assert "deploys go out on Tuesdays" in page.text


def test_a_second_ui_on_the_same_home_prints_the_running_one(mem: MemRunner) -> None:
    with launched(mem.home) as first:
        second = mem("ui", "--no-browser")
        assert second.returncode == 0, second.stderr
        assert first.address in second.stdout
        assert "already runs" in second.stdout


def test_the_token_is_kept_for_the_member_alone_and_rotates_on_every_start(
    mem: MemRunner,
) -> None:
    with launched(mem.home) as first:
        lock = mem.home / "ui.lock"
        assert mode_of(lock) == 0o600
        assert first.token in lock.read_text()
    with launched(mem.home) as second:
        assert second.token != first.token
        old = httpx.get(second.url + "/", cookies={COOKIE: first.token})
        assert old.status_code == 401
        assert httpx.get(second.url + "/", params={"token": first.token}).status_code == 401


def test_it_listens_on_loopback_only(mem: MemRunner) -> None:
    with launched(mem.home) as ui:
        with socket.create_connection(("127.0.0.1", ui.port), timeout=5):
            pass
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None)}
        for address in addresses - {"127.0.0.1", "::1", "127.0.1.1"}:
            try:
                refused = socket.create_connection((address, ui.port), timeout=2)
            except OSError:
                continue
            refused.close()
            raise AssertionError(f"the page answered on {address}")


def test_a_port_in_use_is_one_clear_line(mem: MemRunner) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = mem("ui", "--no-browser", "--port", str(port))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert str(port) in result.stderr
    assert "in use" in result.stderr
