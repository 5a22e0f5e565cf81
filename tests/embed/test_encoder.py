"""The query encoder: the packed MiniLM weights read back whole, or refused as damaged."""

from pathlib import Path

import numpy as np
import pytest

from memmesh.embed import EmbedderDamaged
from memmesh.embed._encoder import CLS, MAX_TOKENS, SEP, encoder, load


@pytest.fixture(scope="module")
def arrays() -> dict[str, np.ndarray]:
    from importlib import resources

    folder = resources.files("memmesh.embed") / "weights"
    with resources.as_file(folder / "minilm-query.npz") as path, np.load(path) as packed:
        return {name: packed[name] for name in packed.files}


def test_a_query_reads_as_a_unit_vector_of_the_tables_width() -> None:
    vector = encoder()([2129, 2079, 1045, 3191])  # "how do i deploy" in word pieces
    assert vector.shape == (256,)
    assert float(np.linalg.norm(vector)) == pytest.approx(1.0, rel=1e-5)


def test_a_query_is_read_only_as_far_as_max_tokens() -> None:
    ids = list(range(2000, 2000 + 3 * MAX_TOKENS))
    assert np.array_equal(encoder()(ids), encoder()(ids[: MAX_TOKENS - 2]))
    assert not np.array_equal(encoder()(ids), encoder()(ids[: MAX_TOKENS - 3]))


def test_the_packed_file_is_refused_when_a_matrix_is_missing(
    tmp_path: Path, arrays: dict[str, np.ndarray]
) -> None:
    broken = {k: v for k, v in arrays.items() if not k.startswith("encoder.layer.3.output")}
    np.savez(tmp_path / "minilm-query.npz", **broken)  # type: ignore[arg-type]
    with pytest.raises(EmbedderDamaged, match=r"minilm-query\.npz"):
        load(tmp_path / "minilm-query.npz")


def test_the_packed_file_is_refused_when_a_shape_is_wrong(
    tmp_path: Path, arrays: dict[str, np.ndarray]
) -> None:
    np.savez(tmp_path / "minilm-query.npz", **(arrays | {"projection": np.eye(384, 128)}))  # type: ignore[arg-type]
    with pytest.raises(EmbedderDamaged, match="projection"):
        load(tmp_path / "minilm-query.npz")


def test_a_truncated_file_is_refused(tmp_path: Path) -> None:
    from importlib import resources

    with resources.as_file(resources.files("memmesh.embed") / "weights" / "minilm-query.npz") as p:
        (tmp_path / "minilm-query.npz").write_bytes(p.read_bytes()[:100_000])
    with pytest.raises(EmbedderDamaged):
        load(tmp_path / "minilm-query.npz")


def test_special_tokens_frame_every_query() -> None:
    # [CLS] and [SEP] are added by the encoder: a query given them again reads differently.
    assert not np.array_equal(encoder()([2129]), encoder()([CLS, 2129, SEP]))
