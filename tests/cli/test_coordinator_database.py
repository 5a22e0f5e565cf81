"""`mem coordinator serve --database`: two coordinator processes on one PostgreSQL database
serve one team, and a database that cannot be used is one clear line, never a traceback."""

import subprocess
import sys
from pathlib import Path

from memmesh.coordinator import Coordinator
from memmesh.coordinator.protocol import Info, PublishItem, PublishRequest, PublishResponse
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.server import free_port
from memmesh.registry import create_identity
from memmesh.registry.envelopes import open_envelope, seal
from tests._servers import CoordinatorProcess
from tests._signed import signed_client
from tests.registry._helpers import TEAM, publication

TOKEN = "t"


def test_two_serving_processes_on_one_database_answer_as_one_coordinator(
    tmp_path: Path, database_url: str
) -> None:
    ada = create_identity(tmp_path / "ada")
    processes = [
        CoordinatorProcess(tmp_path / "data", team=TEAM, token=TOKEN,
                           args=("--database", database_url)).start()
        for _ in range(2)
    ]  # fmt: skip
    try:
        first, second = (signed_client(p.url, ada, team=TEAM, token=TOKEN) for p in processes)
        body = publication(ada, text="The quokka ledger rotates its signing keys every Tuesday")
        with first, second:
            request = PublishRequest(items=[PublishItem(envelope=seal(body, ada))])
            answer = first.post("/v1/publish", request, PublishResponse)
            found = second.post(
                "/v1/search", SearchRequest(query="quokka ledger", project="billing"),
                SearchResponse,
            )  # fmt: skip
            info = second.get("/v1/info", Info)
    finally:
        for process in processes:
            process.stop()
    assert [o.status for o in answer.results] == ["accepted"]
    assert [open_envelope(h.envelope).item_id for h in found.hits] == [body.item_id]
    assert info.published == 1


def test_a_database_that_cannot_be_reached_is_one_line_and_exit_4(tmp_path: Path) -> None:
    url = f"postgresql://nobody:hunter2@/memmesh?host={tmp_path / 'nowhere'}"
    done = subprocess.run(
        [sys.executable, "-m", "memmesh", "coordinator", "serve", "--data",
         str(tmp_path / "data"), "--team", TEAM, "--port", str(free_port()), "--database", url],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    assert "cannot be used" in done.stderr
    assert "Traceback" not in done.stderr
    assert "hunter2" not in done.stderr


def test_a_database_url_that_is_not_postgresql_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memmesh", "coordinator", "items", "--data",
         str(tmp_path / "data"), "--database", "mysql://db/memmesh"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--database takes a PostgreSQL URL" in done.stderr


def test_reindexing_a_coordinator_on_postgresql_is_refused_and_says_why(
    tmp_path: Path, database_url: str
) -> None:
    Coordinator(tmp_path / "data", team=TEAM, database=database_url).close()
    done = subprocess.run(
        [sys.executable, "-m", "memmesh", "coordinator", "reindex", "--data",
         str(tmp_path / "data"), "--embedder", "hashing"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "keeps its state in PostgreSQL" in done.stderr
    assert not (tmp_path / "data" / "memory.db").exists()
