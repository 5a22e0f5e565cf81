"""One BLAS thread in the coordinator's process: the same products, computed on the caller."""

import sys

import numpy as np
import pytest

from memmesh.coordinator._blas import one_blas_thread


def test_products_are_the_same_on_one_blas_thread() -> None:
    rng = np.random.default_rng(7)
    matrix = rng.standard_normal((12_000, 384)).astype(np.float32)
    query = rng.standard_normal(384).astype(np.float32)
    before = matrix @ query

    one_blas_thread()

    assert np.array_equal(matrix @ query, before)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_numpy_s_openblas_is_found_and_set_on_linux() -> None:
    config = np.show_config(mode="dicts")
    if "openblas" not in str(config["Build Dependencies"]["blas"]["name"]).lower():
        pytest.skip("numpy is not built with OpenBLAS here")
    assert one_blas_thread() is True
