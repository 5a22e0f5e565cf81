"""Several processes and several open stores sharing one home at the same time."""

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memmesh.local._recall import recall
from memmesh.local.store import Store

# Each worker waits for a "go" file so that all of them write at the same moment.
WRITER = """
import sys, time
from pathlib import Path
from memmesh.local.store import Store

home, worker, count, flags = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
with Store(home, author="worker-" + worker) as store:
    (flags / ("ready-" + worker)).touch()
    while not (flags / "go").exists():
        time.sleep(0.005)
    for i in range(count):
        _, status = store.remember(
            f"Worker {worker} fact {i}: cache key k{worker}x{i} belongs to job j{worker}n{i}"
        )
        assert status == "created", (i, status)
print("wrote", count)
"""

READER = """
import sys, time
from pathlib import Path
from memmesh.local._recall import recall
from memmesh.local.store import Store

home, flags = Path(sys.argv[1]), Path(sys.argv[2])
recalls = 0
with Store(home, author="reader") as store:
    (flags / "ready-reader").touch()
    while not (flags / "done").exists() or recalls < 20:
        result = recall(store, f"which job owns cache key k0x{recalls % 50}", k=5)
        assert result.hits or result.abstained
        recalls += 1
print("recalled", recalls)
"""

SAME_TEXTS = """
import sys, time
from pathlib import Path
from memmesh.local.store import Store

home, worker, flags = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
with Store(home, author="worker-" + worker) as store:
    (flags / ("ready-" + worker)).touch()
    while not (flags / "go").exists():
        time.sleep(0.005)
    statuses = [store.remember(f"Shared fact {i}: port 5{i:03d} belongs to service s{i}")[1]
                for i in range(40)]
print(statuses.count("created"), statuses.count("reinforced"))
"""


_started: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _no_worker_outlives_its_test() -> Iterator[None]:
    """A failed assertion leaves the other workers running: end them with the test that
    started them, not during a later test's garbage collection."""
    yield
    while _started:
        process = _started.pop()
        if process.poll() is None:
            process.kill()
        process.communicate()


def start(*args: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _started.append(process)
    return process


def wait_for(*files: Path, processes: list[subprocess.Popen[str]]) -> None:
    """Wait until every file exists; fail early if a process died first."""
    deadline = time.monotonic() + 60
    while not all(f.exists() for f in files):
        for process in processes:
            if process.poll() is not None:
                raise AssertionError(f"a worker exited early: {process.communicate()}")
        assert time.monotonic() < deadline, f"workers never got ready: {files}"
        time.sleep(0.01)


def finish(process: subprocess.Popen[str]) -> str:
    """The process's output; it must exit cleanly with nothing on stderr."""
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert err == ""
    return out.strip()


def test_two_processes_writing_at_once_lose_nothing(home: Path, tmp_path: Path) -> None:
    Store(home).close()  # both workers open an existing store
    flags = tmp_path / "flags"
    flags.mkdir()
    workers = [start(WRITER, str(home), str(n), "200", str(flags)) for n in (0, 1)]
    wait_for(flags / "ready-0", flags / "ready-1", processes=workers)
    (flags / "go").touch()
    assert [finish(w) for w in workers] == ["wrote 200", "wrote 200"]

    with Store(home) as store:
        items = store.items()
        assert len(items) == 400
        assert len({item.id for item in items}) == 400
        assert {item.author for item in items} == {"worker-0", "worker-1"}
        assert store.counts()["by_status"] == {"active": 400}
        assert recall(store, "which job owns cache key k1x137").hits[0].item.text == (
            "Worker 1 fact 137: cache key k1x137 belongs to job j1n137"
        )


def test_two_processes_opening_a_new_home_at_once_both_succeed(home: Path, tmp_path: Path) -> None:
    flags = tmp_path / "flags"
    flags.mkdir()
    workers = [start(WRITER, str(home), str(n), "5", str(flags)) for n in (0, 1)]
    (flags / "go").touch()
    assert [finish(w) for w in workers] == ["wrote 5", "wrote 5"]
    with Store(home) as store:
        assert len(store.items()) == 10


def test_the_same_texts_written_at_once_are_stored_once(home: Path, tmp_path: Path) -> None:
    Store(home).close()
    flags = tmp_path / "flags"
    flags.mkdir()
    workers = [start(SAME_TEXTS, str(home), str(n), str(flags)) for n in (0, 1)]
    wait_for(flags / "ready-0", flags / "ready-1", processes=workers)
    (flags / "go").touch()
    totals = [tuple(int(n) for n in finish(w).split()) for w in workers]
    assert sum(created for created, _ in totals) == 40
    assert sum(reinforced for _, reinforced in totals) == 40
    with Store(home) as store:
        items = store.items()
        assert len(items) == 40
        assert all(item.reinforcements == 1 for item in items)


def test_a_reader_recalling_while_a_writer_writes_never_errors(home: Path, tmp_path: Path) -> None:
    Store(home).close()
    flags = tmp_path / "flags"
    flags.mkdir()
    reader = start(READER, str(home), str(flags))
    writer = start(WRITER, str(home), "0", "150", str(flags))
    wait_for(flags / "ready-reader", flags / "ready-0", processes=[reader, writer])
    (flags / "go").touch()
    assert finish(writer) == "wrote 150"
    (flags / "done").touch()
    out = finish(reader)
    assert out.startswith("recalled ")
    assert int(out.split()[1]) >= 20
    with Store(home) as store:
        assert len(store.items()) == 150
        # The reader's recalls were journaled beside the writer's writes.
        with store._db.read() as conn:
            (recalls,) = conn.execute(
                "SELECT count(*) FROM events WHERE kind = 'recall'"
            ).fetchone()
        assert recalls == int(out.split()[1])


def test_a_write_in_one_open_store_is_recalled_by_another_without_reopening(home: Path) -> None:
    with Store(home, author="tester") as writer, Store(home, author="tester") as reader:
        writer.remember("Use pnpm, not npm, in the frontend monorepo")
        assert recall(reader, "which package manager does the frontend monorepo use").hits
        assert recall(reader, "staging cluster release branch").abstained

        item, _ = writer.remember("The staging cluster deploys from the release branch")
        hits = recall(reader, "staging cluster release branch").hits
        assert [hit.item.id for hit in hits] == [item.id]
        assert reader.get(item.id) == item

        writer.forget(item.id)
        assert recall(reader, "staging cluster release branch").abstained
        for mode in ("lexical", "vector"):
            assert recall(reader, "staging cluster release branch", mode=mode).abstained, mode


def test_a_near_duplicate_written_elsewhere_is_reinforced_not_copied(home: Path) -> None:
    with Store(home, author="tester") as first, Store(home, author="tester") as second:
        recall(second, "anything about webhooks")  # second's vector index is now loaded
        original, _ = first.remember("The billing service retries webhooks 5 times")
        again, status = second.remember("The billing service retries the webhooks 5 times")
        assert status == "reinforced"
        assert again.id == original.id
