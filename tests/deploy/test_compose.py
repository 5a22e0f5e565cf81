"""deploy/compose.yaml: the coordinator (the image deploy/Containerfile builds) on PostgreSQL
with pgvector. Its variables all have a value in the example environment file; the
coordinator's command line is one `mem` accepts, behind the image's entrypoint; it is given
only variables it reads, and a database URL without a password; it waits for a healthy
database, keeps its state in named volumes, and runs on a read-only root as the image test
runs it."""

import json
import re
from typing import Any
from urllib.parse import urlsplit

import yaml

from memmesh.cli._database import DATABASE_ENV
from memmesh.coordinator.storage import is_database_url
from tests.deploy._commands import (
    COORDINATOR_READS,
    DEPLOY,
    env_file,
    serve_arguments,
    substituted,
)

COMPOSE = DEPLOY / "compose.yaml"
ENV_EXAMPLE = DEPLOY / "compose.env.example"
CONTAINERFILE = DEPLOY / "Containerfile"


def _compose() -> dict[str, Any]:
    """compose.yaml as compose reads it, its variables from the example environment file."""
    text = substituted(COMPOSE.read_text(encoding="utf-8"), env_file(ENV_EXAMPLE))
    composed: dict[str, Any] = yaml.safe_load(text)
    return composed


def _instruction(name: str) -> str:
    """The Containerfile's (last) instruction ``name``, without its keyword."""
    found = re.findall(rf"^{name} (.+)$", CONTAINERFILE.read_text(encoding="utf-8"), re.M)
    assert found, f"the Containerfile has no {name}"
    return str(found[-1])


def test_every_variable_of_the_compose_file_has_a_value_in_the_example() -> None:
    # substituted() fails on a variable with neither a value in the example nor a default.
    assert set(_compose()["services"]) == {"postgres", "coordinator"}


def test_the_coordinators_command_line_is_mems_behind_the_images_entrypoint() -> None:
    coordinator = _compose()["services"]["coordinator"]
    entrypoint = json.loads(_instruction("ENTRYPOINT"))

    parsed = serve_arguments([*entrypoint[1:], *coordinator["command"]])

    assert entrypoint[0] == "mem"
    assert (parsed.data, parsed.team) == ("/data", "acme")
    assert parsed.url == "https://team-host.example.com:8400"
    assert parsed.database is None, "the database comes from the environment, not the command"


def test_the_coordinator_is_given_only_what_it_reads_and_no_password_in_a_url() -> None:
    services = _compose()["services"]
    given = services["coordinator"]["environment"]

    database = urlsplit(given[DATABASE_ENV])

    assert set(given) <= COORDINATOR_READS
    assert is_database_url(given[DATABASE_ENV])
    assert (database.hostname, database.password) == ("postgres", None)
    assert database.username == services["postgres"]["environment"]["POSTGRES_USER"]
    assert database.path == f"/{services['postgres']['environment']['POSTGRES_DB']}"
    assert given["PGPASSWORD"] == services["postgres"]["environment"]["POSTGRES_PASSWORD"]


def test_the_coordinator_waits_for_a_healthy_database_with_pgvector() -> None:
    services = _compose()["services"]

    postgres = services["postgres"]

    assert services["coordinator"]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert postgres["image"].startswith("docker.io/pgvector/pgvector:pg")
    assert postgres["healthcheck"]["test"][:2] == ["CMD", "pg_isready"]
    assert "HEALTHCHECK" in CONTAINERFILE.read_text(encoding="utf-8"), "the coordinator's own"


def test_state_lives_in_named_volumes_and_the_database_is_not_published() -> None:
    composed = _compose()
    services = composed["services"]

    mounted = {
        name: dict(volume.split(":", 1)[::-1] for volume in service["volumes"])
        for name, service in services.items()
    }

    assert mounted["coordinator"] == {"/data": "coordinator"}
    assert mounted["postgres"] == {"/var/lib/postgresql/data": "postgres"}
    assert set(composed["volumes"]) == {"coordinator", "postgres"}
    assert "ports" not in services["postgres"]
    assert services["coordinator"]["ports"] == [f"8400:{_instruction('EXPOSE')}"]


def test_the_coordinator_runs_on_a_read_only_root_with_no_privileges() -> None:
    coordinator = _compose()["services"]["coordinator"]

    held = {key: coordinator.get(key) for key in ("read_only", "tmpfs", "cap_drop")}

    # As tests/deploy/test_image.py runs the image: a read-only root, /data and /tmp writable.
    assert held == {"read_only": True, "tmpfs": ["/tmp"], "cap_drop": ["ALL"]}
    assert coordinator["security_opt"] == ["no-new-privileges:true"]
