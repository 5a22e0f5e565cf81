"""One BLAS thread in every process that searches: the same products, computed on the caller.

The coordinator, the peer daemon, the MCP server and `mem recall` all search through a store's
vector index, which limits BLAS at its first view.
"""

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from memmesh.local import _vectors
from memmesh.local._recall import recall
from memmesh.local.store import Store


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.fixture
def several_blas_threads() -> Iterator[None]:
    """BLAS on two threads, as a process starts on a machine of two cores or more, and a
    process that has not limited it yet; everything is put back afterwards."""
    with threadpool_limits(limits=2, user_api="blas"):
        _vectors._one_blas_thread.cache_clear()
        if not _blas_threads() or max(_blas_threads()) < 2:
            pytest.skip("BLAS cannot run on more than one thread here")
        try:
            yield
        finally:
            _vectors._one_blas_thread.cache_clear()


@pytest.mark.usefixtures("several_blas_threads")
def test_a_store_that_searched_runs_blas_on_one_thread(home: Path) -> None:
    with Store(home, author="tester") as store:
        store.remember("webhooks retry five times with backoff")
        assert recall(store, "webhook retries", record=False).hits

        assert set(_blas_threads()) == {1}


@pytest.mark.usefixtures("several_blas_threads")
def test_products_are_the_same_on_one_blas_thread(home: Path) -> None:
    rng = np.random.default_rng(7)
    matrix = rng.standard_normal((12_000, 384)).astype(np.float32)
    query = rng.standard_normal(384).astype(np.float32)
    before = matrix @ query

    with Store(home, author="tester") as store:
        store.index.vectors.view()
    assert set(_blas_threads()) == {1}

    assert np.array_equal(matrix @ query, before)
