"""A vector search returns the exact scan's top 10: the same row numbers in the same order,
with the same float cosines, for every query asked (the bar is 99 in 100).

The rows are real vectors of the default embedder: the benchmark's synthetic developer
memories, asked the benchmark's queries, and teamdev's facts spread among those memories,
asked teamdev's queries. The exact scan scores every active row with one product per row and
sorts by cosine, then by row number.
"""

import json
import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from memmesh.embed import Embedder, Vectors, get_embedder
from memmesh.local._vector_base import Part, build
from memmesh.local._vectors import VectorIndex, View

# The scripts import each other as top-level modules (`python bench/<script>.py`); appended,
# so that none of their names hides an installed one.
sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))
import local_recall as bench

TEAMDEV = Path(__file__).resolve().parents[3] / "shared" / "eval" / "teamdev.json"
ROWS = 10_000
SHARE = 0.99


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return get_embedder()


@pytest.fixture(scope="module")
def memories(embedder: Embedder) -> Vectors:
    """The benchmark's memories, embedded as a store embeds them."""
    items = bench.Corpus(bench.SEED).items(ROWS)
    vectors: Vectors = embedder.embed([item.text for item in items])
    return vectors


def _active(matrix: Vectors) -> npt.NDArray[np.bool_]:
    """One row in seven is archived."""
    active: npt.NDArray[np.bool_] = np.arange(1, len(matrix) + 1) % 7 != 0
    return active


def _view(matrix: Vectors) -> View:
    """A vector index whose base holds ``matrix`` as rows 1, 2, … of one project."""
    seqs = np.arange(1, len(matrix) + 1, dtype=np.int64)
    part = Part(matrix=matrix, seqs=seqs, revs=seqs.copy(), active=_active(matrix))
    index = VectorIndex(matrix.shape[1])
    index._use(build({"web": [part]}, matrix.shape[1], len(matrix)))
    return index.view()


def _exact(matrix: Vectors, query: Vectors, count: int) -> list[tuple[int, float]]:
    seqs = np.arange(1, len(matrix) + 1, dtype=np.int64)[_active(matrix)]
    scores = np.array([np.dot(row, query) for row in matrix[_active(matrix)]], dtype=np.float32)
    order = np.lexsort((seqs, -scores))[:count]
    return list(zip(seqs[order].tolist(), scores[order].tolist(), strict=True))


def _share_identical(matrix: Vectors, queries: list[Vectors]) -> float:
    view = _view(matrix)
    same = [view.search(query, ["web"], 50)[:10] == _exact(matrix, query, 10) for query in queries]
    return sum(same) / len(same)


def test_the_top_10_is_the_exact_scans_on_the_benchmark_corpus(
    memories: Vectors, embedder: Embedder
) -> None:
    asked = bench.Corpus(bench.SEED + 1).queries(100)
    queries = [embedder.embed_query(query) for query, _ in asked]
    assert _share_identical(memories, queries) >= SHARE


@pytest.mark.skipif(not TEAMDEV.is_file(), reason=f"{TEAMDEV} is not here")
def test_the_top_10_is_the_exact_scans_on_teamdev_among_the_benchmark_corpus(
    memories: Vectors, embedder: Embedder
) -> None:
    data = json.loads(TEAMDEV.read_text(encoding="utf-8"))
    facts = embedder.embed([fact["text"] for fact in data["facts"]])
    # Teamdev's facts spread through the memories, as a team's notes sit among the rest.
    spread = np.arange(len(facts)) * (len(memories) // len(facts))
    matrix = np.insert(memories, spread, facts, 0)
    queries = [embedder.embed_query(query["q"]) for query in data["queries"]]
    assert _share_identical(matrix, queries) >= SHARE


def test_equal_cosines_rank_by_row_number(embedder: Embedder) -> None:
    matrix = embedder.embed(["webhooks retry five times"] * 3 + ["deploys use Argo CD"] * 3)
    query = embedder.embed_query("webhook retries")
    found = _view(matrix).search(query, ["web"], 2)
    assert [seq for seq, _ in found] == [1, 2]
    assert found[0][1] == found[1][1]
