"""The vector file is a cache: a process that starts answers from it exactly as from the store
file, and a file that is missing, behind, cut short, damaged, another store's or ahead of its
store is never believed. A purged item's vector does not stay in it.

Every answer is checked against the exact scan of the store file's own rows.
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import numpy as np
import pytest

from memmesh.local import _vector_file, _vectors
from memmesh.local._recall import recall
from memmesh.local.store import DB_FILENAME, Store
from tests.conftest import MemRunner, mode_of

sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))
import local_recall as bench

SCOPE = ["web", "global"]
QUERIES = ("why does numpy fail on staging", "how do I rotate the API keys", "E4211 root cause")


@pytest.fixture
def every_store_saves(monkeypatch: pytest.MonkeyPatch) -> None:
    """A vector file for a store of any size (one of 4,096 items is the real threshold)."""
    monkeypatch.setattr(_vectors, "SAVED_FROM", 1)


@pytest.fixture
def store(home: Path, every_store_saves: None) -> Iterator[Store]:
    """A store of 300 items whose vector file is written."""
    with Store(home, author="tester") as opened:
        _fill(opened, 300)
        _search(opened, QUERIES[0])
        yield opened


def _id(number: int) -> str:
    return f"01JC0PY{number:019d}"


def _fill(store: Store, count: int, first: int = 0) -> None:
    """``count`` developer memories in the projects web, api and global, in one transaction."""
    items = bench.Corpus(first + 5).items(count)
    vectors = store.embedder.embed([item.text for item in items])
    with store.transaction() as tx:
        for number, (item, vector) in enumerate(zip(items, vectors, strict=True), start=first):
            store.put(
                item_id=_id(number), text=item.text, kind=item.kind,
                project=("web", "api", "global")[number % 3], tags=(), author="bob",
                created_at=0.0, vector=vector, tx=tx,
            )  # fmt: skip


def _path(home: Path) -> Path:
    return home / "index" / f"{DB_FILENAME}.vectors"


def _search(store: Store, query: str, count: int = 10) -> list[tuple[int, float]]:
    """The vector index's answer, after bringing it up to date."""
    vector = store.embedder.embed_query(query)
    with store.searching(), store.index.lock:
        view = store.index.vectors.view()
    return view.search(vector, SCOPE, count)


def _exact(store: Store, query: str, count: int = 10) -> list[tuple[int, float]]:
    """The exact scan of the store file's active rows in scope, one product per row."""
    vector = store.embedder.embed_query(query)
    conn = sqlite3.connect(store.path)
    try:
        rows = conn.execute(
            "SELECT seq, vector FROM items WHERE status = 'active' AND project IN (?, ?)",
            SCOPE,
        ).fetchall()
    finally:
        conn.close()
    scored = [(-float(np.dot(np.frombuffer(blob, np.float32), vector)), seq) for seq, blob in rows]
    return [(seq, -score) for score, seq in sorted(scored)[:count]]


def _read_from_store(store: Store) -> int:
    """How many rows a process starting now reads from the store file (not from the vector
    file) as it loads its index."""
    index = _vectors.VectorIndex(store.embedder.dim)
    with store._db.reader() as conn:
        return index.refresh(conn)


def _answers_exactly(store: Store) -> bool:
    return all(_search(store, query) == _exact(store, query) for query in QUERIES)


@pytest.mark.usefixtures("usual_umask")
def test_the_file_is_private_and_a_new_process_reads_nothing_else(store: Store) -> None:
    assert mode_of(_path(store.home)) == 0o600
    assert mode_of(_path(store.home).parent) == 0o700
    assert _read_from_store(store) == 0
    with Store(store.home, author="tester") as cold:
        assert _answers_exactly(cold)


def test_a_small_store_keeps_no_file(home: Path) -> None:
    with Store(home, author="tester") as store:
        _fill(store, 30)
        assert _answers_exactly(store)
    assert not _path(home).exists()


def test_rows_written_since_the_file_are_read_from_the_store_file(store: Store) -> None:
    _fill(store, 5, first=300)
    store.forget(_id(3))
    assert _read_from_store(store) == 6
    with Store(store.home, author="tester") as cold:
        assert _answers_exactly(cold)


def test_a_file_far_behind_is_written_again(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_vectors, "_TAIL_MIN", 10)
    _fill(store, 40, first=300)
    assert _answers_exactly(store)
    assert _read_from_store(store) == 0


@pytest.mark.parametrize("harm", ["missing", "truncated", "damaged", "garbage"])
def test_a_missing_or_broken_file_is_not_believed_and_is_written_again(
    store: Store, harm: str
) -> None:
    path = _path(store.home)
    data = path.read_bytes()
    if harm == "missing":
        path.unlink()
    elif harm == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif harm == "damaged":  # one byte of one vector (the matrix starts at 4096)
        at = 4096 + 150 * store.embedder.dim * 4 + 17
        path.write_bytes(data[:at] + bytes([data[at] ^ 0x40]) + data[at + 1 :])
    else:
        path.write_bytes(os.urandom(len(data)))

    assert _read_from_store(store) == 300
    with Store(store.home, author="tester") as cold:
        assert _answers_exactly(cold)
    assert _read_from_store(store) == 0


def test_another_stores_file_is_not_believed(store: Store, tmp_path: Path) -> None:
    with Store(tmp_path / "other", author="tester") as other:
        _fill(other, 300, first=1000)
        _search(other, QUERIES[0])
    shutil.copyfile(_path(tmp_path / "other"), _path(store.home))

    assert _read_from_store(store) == 300
    with Store(store.home, author="tester") as cold:
        assert _answers_exactly(cold)


def test_a_store_put_back_from_an_older_copy_is_not_answered_from_the_newer_file(
    home: Path, tmp_path: Path, every_store_saves: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_vectors, "_TAIL_MIN", 10)
    with Store(home, author="tester") as store:
        _fill(store, 300)
        _search(store, QUERIES[0])
    older = tmp_path / "older.db"
    shutil.copyfile(home / DB_FILENAME, older)
    with Store(home, author="tester") as store:
        _fill(store, 40, first=300)
        _search(store, QUERIES[0])  # the file is written again, ahead of the older copy
    shutil.copyfile(older, home / DB_FILENAME)  # in place: the same inode
    with Store(home, author="tester") as store:
        _fill(store, 60, first=2000)  # other items, and the revs pass the file's

        assert _read_from_store(store) == 360
        assert _answers_exactly(store)


def test_a_folder_that_cannot_hold_the_file_leaves_the_index_in_memory(
    home: Path, every_store_saves: None
) -> None:
    home.mkdir()
    (home / "index").write_text("not a folder")
    with Store(home, author="tester") as store:
        _fill(store, 300)
        assert _answers_exactly(store)
    assert (home / "index").read_text() == "not a folder"


def _seq_of(store: Store, item_id: str) -> int:
    with store._db.read() as conn:
        return int(conn.execute("SELECT seq FROM items WHERE id = ?", (item_id,)).fetchone()[0])


def _vector_bytes(store: Store, item_id: str) -> bytes:
    vector = store.vector_of(item_id)
    assert vector is not None
    return np.asarray(vector, dtype=np.float32).tobytes()


def test_a_purged_items_vector_is_zeroed_in_the_file_by_the_purge_itself(store: Store) -> None:
    gone = _vector_bytes(store, _id(7))
    assert gone in _path(store.home).read_bytes()
    store.purge(_id(7))  # its scrub, as the store file's leftovers are; no search comes after

    assert gone not in _path(store.home).read_bytes()
    assert _read_from_store(store) == 1  # the file is still sound
    with Store(store.home, author="tester") as cold:
        assert _answers_exactly(cold)
        assert _seq_of(cold, _id(7)) not in dict(_search(cold, "anything", 300))


def test_a_search_after_a_purge_zeroes_its_vector_in_the_file(store: Store) -> None:
    gone = _vector_bytes(store, _id(9))
    store.purge(_id(9))
    _search(store, QUERIES[1])
    assert gone not in _path(store.home).read_bytes()


def test_a_file_written_from_rows_read_before_a_purge_never_holds_its_vector(
    store: Store,
) -> None:
    gone = _vector_bytes(store, _id(11))
    fingerprint = store.embedder.fingerprint
    with store._db.read() as conn:
        read = _vector_file.load(conn, fingerprint, store.embedder.dim)
        assert read is not None
        # Rows another process read before the purge, and writes out after it.
        before = msgspec.structs.replace(
            read, matrix=read.matrix.copy(), active=read.active.copy(), saved=False
        )
    store.purge(_id(11))
    with store._db.read() as conn:
        assert _vector_file.save(conn, before, fingerprint) is not None
    assert gone not in _path(store.home).read_bytes()


def test_rows_of_a_transaction_that_did_not_commit_are_forgotten(store: Store) -> None:
    def remember_twice_then_roll_back() -> None:
        with store.transaction() as tx:
            for number in (5, 6):
                text = f"The billing service retries webhooks {number} times"
                store.remember(text, project="web", tx=tx)
            raise RuntimeError("changed my mind")

    with pytest.raises(RuntimeError):
        remember_twice_then_roll_back()
    _fill(store, 1, first=500)  # a later write, so that the next search refreshes
    assert _answers_exactly(store)
    assert _search(store, "billing webhooks retries", 300) == _exact(
        store, "billing webhooks retries", 300
    )


# -- real processes, with the real threshold ---------------------------------------------


@pytest.fixture
def large_home(home: Path) -> Path:
    """A home whose store holds enough items for a vector file, none written yet."""
    with Store(home, author="tester") as store:
        _fill(store, _vectors.SAVED_FROM + 100)
    assert not _path(home).exists()
    return home


def _hits(mem: MemRunner, query: str) -> list[tuple[str, float]]:
    result = mem("recall", query, "-k", "10", "--project", "web", "--json")
    assert result.returncode == 0, result.stderr
    return [(hit["id"], hit["score"]) for hit in json.loads(result.stdout)["hits"]]


def test_mem_recall_from_the_file_answers_as_from_the_store_file(
    large_home: Path, mem: MemRunner
) -> None:
    before = [_hits(mem, query) for query in QUERIES[:2]]  # the first one writes the file
    assert _path(large_home).exists()
    after = [_hits(mem, query) for query in QUERIES[:2]]
    with Store(large_home, author="tester") as store:
        assert _read_from_store(store) == 0
        warm = [
            [
                (hit.item.id, round(hit.score, 4))
                for hit in recall(store, query, k=10, project="web").hits
            ]
            for query in QUERIES[:2]
        ]
    assert after == before == warm
    assert any(before)


_KILLED_WRITING = """
import os, signal, sys
from pathlib import Path
from memmesh.local.store import Store

opened = os.fdopen

class Dying:
    def __init__(self, handle): self.handle = handle
    def __getattr__(self, name): return getattr(self.handle, name)
    def __enter__(self): return self
    def __exit__(self, *exc): self.handle.close()
    def write(self, data):
        if self.handle.tell() > 1 << 20:  # a megabyte in: killed
            os.kill(os.getpid(), signal.SIGKILL)
        return self.handle.write(data)

os.fdopen = lambda fd, *args, **kwargs: Dying(opened(fd, *args, **kwargs))
with Store(Path(sys.argv[1]), author="tester") as store, store.searching():
    pass
"""


def test_a_process_killed_while_writing_the_file_leaves_no_file_to_believe(
    large_home: Path,
) -> None:
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITING, str(large_home)], check=False, timeout=60
    )
    assert killed.returncode == -9
    folder = _path(large_home).parent
    assert not _path(large_home).exists()
    assert [path for path in folder.iterdir() if path.name.startswith(".")]  # its leftover
    with Store(large_home, author="tester") as store:
        assert _answers_exactly(store)
        assert _read_from_store(store) == 0
    assert sorted(path.name for path in folder.iterdir()) == [
        f"{DB_FILENAME}.vectors",
        f"{DB_FILENAME}.vectors.lock",
    ]
