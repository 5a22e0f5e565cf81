"""deploy/Containerfile's image (``$MEMMESH_IMAGE``): its entrypoint serves a coordinator
from a read-only root as its own user, keeping everything in /data; a member on this machine
joins it with the join code it prints (TLS pin and all), publishes, and gets the item back
from recall-team through it; its health check tells it answering from not."""

import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from memmesh.cli._database import DATABASE_ENV
from tests.conftest import MemRunner
from tests.deploy._image import Image, Running, image_name, in_a_container, mounted
from tests.deploy._member import Answered, join_code_from, publish_and_ask

PORT = 8400  # The image's own (EXPOSE): its network namespace is its own here.
URL = f"https://127.0.0.1:{PORT}"


@pytest.fixture(scope="module")
def image() -> Iterator[Image]:
    with mounted(image_name()) as root:
        yield root


@pytest.fixture(scope="module")
def running(image: Image, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    started = Running(image, tmp_path_factory.mktemp("container"), ["--team", "acme", "--url", URL])
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def answered(running: Running, tmp_path_factory: pytest.TempPathFactory) -> Answered:
    code = join_code_from(running.output, alive=running.alive)
    folder = tmp_path_factory.mktemp("member")
    return publish_and_ask(MemRunner(folder / "ada", folder, running.in_its_network()), code)


def test_a_member_joins_publishes_and_gets_the_item_back_through_the_images_coordinator(
    answered: Answered, running: Running
) -> None:
    assert answered.coordinator_hits() == [answered.item]
    assert f"memmesh coordinator on https://0.0.0.0:{PORT} (data /data" in running.output()
    assert "TLS pin: sha256:" in running.output()


def test_the_images_coordinator_runs_as_its_own_user_and_keeps_everything_in_data(
    answered: Answered, running: Running, image: Image
) -> None:
    kept = {path.name: path.stat() for path in running.data.iterdir()}

    assert {"memory.db", "identity.key", "tls"} <= set(kept)
    assert image.user[0] != 0
    assert {(stat.st_uid, stat.st_gid) for stat in kept.values()} == {image.user}
    assert "Traceback" not in running.output()


def test_the_images_health_check_passes_while_its_coordinator_answers(
    answered: Answered, running: Running, image: Image
) -> None:
    assert image.healthcheck, "the image has no HEALTHCHECK (podman build --format docker)"

    checked = running.inside(*image.healthcheck)

    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_images_health_check_passes_over_plain_http_behind_a_proxy_that_ends_tls(
    image: Image, tmp_path: Path
) -> None:
    # As deploy/proxy/nginx-tls-terminate.conf has it: plain http on loopback, the proxy's
    # https address for the members.
    behind = ["--team", "acme", "--host", "127.0.0.1", "--insecure-http"]
    started = Running(image, tmp_path, [*behind, "--url", "https://memmesh.example.com"])
    try:
        join_code_from(started.output, alive=started.alive)

        checked = started.inside(*image.healthcheck)
    finally:
        started.stop()

    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"memmesh coordinator on http://127.0.0.1:{PORT}" in started.output()


def test_the_images_health_check_fails_where_nothing_answers(image: Image, tmp_path: Path) -> None:
    assert image.healthcheck, "the image has no HEALTHCHECK (podman build --format docker)"

    checked = subprocess.run(
        in_a_container(image, tmp_path, image.healthcheck),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert f"no answer from /healthz on port {PORT}" in checked.stderr


def test_the_image_holds_the_postgres_extra(running: Running) -> None:
    imported = running.inside("python3", "-c", "import psycopg, psycopg_pool, pgvector.psycopg")

    assert imported.returncode == 0, imported.stderr


def test_the_images_coordinator_serves_a_member_from_postgresql_with_pgvector(
    image: Image, database_url: str, tmp_path: Path
) -> None:
    # As deploy/compose.yaml gives it the database: by the environment. Here PostgreSQL's
    # socket is bound into the container's /tmp, which is its own.
    parts = urlsplit(database_url)
    (folder,) = parse_qs(parts.query)["host"]
    socket = Path(folder) / f".s.PGSQL.{parts.port or 5432}"
    inside = database_url.replace(f"host={folder}", "host=/tmp/postgres")
    started = Running(
        image,
        tmp_path / "container",
        ["--team", "acme", "--url", URL],
        environment={DATABASE_ENV: inside},
        sockets={socket: f"/tmp/postgres/{socket.name}"},
    )
    try:
        code = join_code_from(started.output, alive=started.alive)
        member = MemRunner(tmp_path / "ada", tmp_path, started.in_its_network())

        answered = publish_and_ask(member, code)

        assert answered.coordinator_hits() == [answered.item]
    finally:
        started.stop()
    with psycopg.connect(database_url) as conn:
        kept = conn.execute("SELECT count(*) FROM coord_vectors").fetchone()
    assert kept == (1,)
    assert not (started.data / "memory.db").exists()
