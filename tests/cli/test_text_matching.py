"""`mem recall` finds an accented word typed without its accent, in a hashing store, and a store
whose hashing vectors predate the tokens they are made from asks for a reindex."""

import sqlite3

from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner

HASHING = {"MEM_EMBEDDER": "hashing"}
CAFE = "the café on the corner serves ristretto"


def test_recall_cafe_finds_the_cafe_in_a_hashing_store(mem: MemRunner) -> None:
    item_id = json_of(mem("remember", CAFE, "--json", env=HASHING))["id"]

    found = mem("recall", "cafe", env=HASHING)

    assert (found.returncode, found.stderr) == (0, "")
    assert found.stdout == f"2.681  {item_id[:10]}  [fact, global]  {CAFE}\n"


def test_a_store_of_older_hashing_vectors_asks_for_a_reindex(mem: MemRunner) -> None:
    json_of(mem("remember", CAFE, "--json", env=HASHING))
    conn = sqlite3.connect(mem.home / "memory.db")
    with conn:  # as the hashing embedder's version 1 marked its vectors
        conn.execute("UPDATE meta SET value = 'hashing-v1-d384' WHERE key = 'embedder_fingerprint'")
    conn.close()

    doctor = mem("doctor")

    assert doctor.returncode == 1
    assert error_line(doctor) == (
        "mem: error: this store's vectors come from embedder 'hashing-v1-d384', not "
        "'hashing-v2-d384'; vectors from different embedders cannot be mixed (run `mem "
        "reindex` to rebuild the vectors, or `mem reindex --embedder NAME` to switch the store)"
    )
