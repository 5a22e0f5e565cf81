"""The query encoder: the packed MiniLM weights mapped back whole, or refused as damaged."""

import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memmesh.embed import EmbedderDamaged
from memmesh.embed._encoder import CLS, FILES, MAX_TOKENS, SEP, encoder, forward, load, save


@pytest.fixture
def packed(tmp_path: Path) -> Path:
    """A copy of the package's packed encoder, to damage."""
    folder = resources.files("memmesh.embed") / "weights"
    for name in FILES:
        with resources.as_file(folder / name) as path:
            shutil.copy(path, tmp_path / name)
    return tmp_path


def test_a_query_reads_as_a_unit_vector_of_the_tables_width() -> None:
    vector = encoder()([2129, 2079, 1045, 3191])  # "how do i deploy" in word pieces
    assert vector.shape == (256,)
    assert float(np.linalg.norm(vector)) == pytest.approx(1.0, rel=1e-5)


def test_a_query_is_read_only_as_far_as_max_tokens() -> None:
    ids = list(range(2000, 2000 + 3 * MAX_TOKENS))
    assert np.array_equal(encoder()(ids), encoder()(ids[: MAX_TOKENS - 2]))
    assert not np.array_equal(encoder()(ids), encoder()(ids[: MAX_TOKENS - 3]))


def test_a_query_is_read_between_cls_and_sep_and_mean_pooled() -> None:
    packed = encoder()
    ids = [2129, 2079, 1045, 21296]
    framed = packed.rows(np.array([[CLS, *ids, SEP]]))
    hidden = forward(packed.weights, framed, np.ones((1, 6), np.float32))
    by_hand = hidden[0].mean(0) @ packed.projection
    np.testing.assert_allclose(packed(ids), by_hand / np.linalg.norm(by_hand), rtol=1e-5)


@pytest.mark.parametrize(
    "case", json.loads(Path(__file__).with_name("encoder_reference.json").read_text("utf-8"))
)
def test_the_packed_encoder_reads_a_query_as_the_float_teacher_does(case: dict[str, Any]) -> None:
    # The reference is the teacher's own reading in float32 (scripts/pack_query_encoder.py):
    # int8 weights may move it a little, never turn it.
    cosine = float(encoder()(case["ids"]) @ np.array(case["vector"]))
    assert cosine > 0.995, case["query"]


def test_saved_weights_load_back_as_the_same_encoder(packed: Path, tmp_path: Path) -> None:
    index = json.loads((packed / FILES[0]).read_text(encoding="utf-8"))
    arrays = {
        name: np.load(packed / f"minilm-query-{kind}.npy")[
            start : start + int(np.prod(shape))
        ].reshape(shape)
        for kind in ("int8", "float32")
        for name, (start, shape) in index[kind].items()
    }
    again = tmp_path / "again"
    again.mkdir()
    save(arrays, again)
    assert np.array_equal(load(again)([2129, 2079]), encoder()([2129, 2079]))


def test_an_index_of_the_wrong_shape_is_refused(packed: Path) -> None:
    (packed / FILES[0]).write_text(json.dumps({"int8": [], "float32": {}}), encoding="utf-8")
    with pytest.raises(EmbedderDamaged, match="the query encoder"):
        load(packed)


def test_a_number_that_is_not_finite_is_refused(packed: Path) -> None:
    floats = np.load(packed / FILES[2])
    floats[len(floats) // 2] = np.nan
    np.save(packed / FILES[2], floats)
    with pytest.raises(EmbedderDamaged, match="not finite"):
        load(packed)


def test_threads_asking_at_once_load_the_encoder_once() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from memmesh.embed import _encoder

    _encoder._packaged.cache_clear()
    with ThreadPoolExecutor(8) as pool:
        loaded = list(pool.map(lambda _: _encoder.encoder(), range(8)))
    assert all(one is loaded[0] for one in loaded)
    assert _encoder._packaged.cache_info().misses == 1


def test_a_missing_tensor_is_refused(packed: Path) -> None:
    index = json.loads((packed / FILES[0]).read_text(encoding="utf-8"))
    del index["int8"]["encoder.layer.3.output.dense.weight.codes"]
    (packed / FILES[0]).write_text(json.dumps(index), encoding="utf-8")
    with pytest.raises(EmbedderDamaged, match=r"encoder\.layer\.3\.output\.dense\.weight"):
        load(packed)


def test_a_tensor_beyond_the_end_of_its_file_is_refused(packed: Path) -> None:
    index = json.loads((packed / FILES[0]).read_text(encoding="utf-8"))
    index["float32"]["projection"][0] = 10**9
    (packed / FILES[0]).write_text(json.dumps(index), encoding="utf-8")
    with pytest.raises(EmbedderDamaged, match="beyond the end"):
        load(packed)


@pytest.mark.parametrize("name", FILES)
def test_a_truncated_or_missing_file_is_refused(packed: Path, name: str) -> None:
    (packed / name).write_bytes((packed / name).read_bytes()[:1000])
    with pytest.raises(EmbedderDamaged, match="the query encoder"):
        load(packed)
    (packed / name).unlink()
    with pytest.raises(EmbedderDamaged, match="the query encoder"):
        load(packed)


def test_loading_checks_the_tensors_without_reading_a_query(
    packed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memmesh.embed import _encoder

    def no_query(*_: object) -> None:
        raise AssertionError("the encoder ran at load")

    monkeypatch.setattr(_encoder, "forward", no_query)
    loaded = load(packed)
    assert loaded.projection.shape == (384, 256)


def test_a_tensor_of_the_wrong_shape_is_refused_by_its_name(packed: Path) -> None:
    index = json.loads((packed / FILES[0]).read_text(encoding="utf-8"))
    index["float32"]["encoder.layer.2.intermediate.dense.bias"][1] = [1535]
    (packed / FILES[0]).write_text(json.dumps(index), encoding="utf-8")
    with pytest.raises(EmbedderDamaged, match=r"encoder\.layer\.2\.intermediate\.dense\.bias"):
        load(packed)


def test_weights_that_overflow_make_a_query_refused_not_a_vector(packed: Path) -> None:
    index = json.loads((packed / FILES[0]).read_text(encoding="utf-8"))
    start, shape = index["float32"]["projection"]
    floats = np.load(packed / FILES[2])
    floats[start : start + int(np.prod(shape))] = np.float32(3e38)  # finite, and huge
    np.save(packed / FILES[2], floats)
    with pytest.raises(EmbedderDamaged, match="not finite"):
        load(packed)([2129, 2079])


@pytest.mark.parametrize(
    "ids", [[2129, 2079, 1045, 21296], [101, 102, 0, 30521], list(range(3000, 3000 + 70))]
)
def test_a_query_is_the_same_to_the_bit_as_one_read_through_the_whole_unpacked_weights(
    packed: Path, ids: list[int]
) -> None:
    loaded = load(packed)
    pieces = np.array([[CLS, *ids[: MAX_TOKENS - 2], SEP]])
    hidden = forward(loaded.weights, loaded.rows(pieces), np.ones(pieces.shape, np.float32))
    whole = (hidden[0].mean(0) @ loaded.projection).astype(np.float32)
    assert loaded(ids).tobytes() == (whole / np.linalg.norm(whole)).tobytes()
    assert encoder()(ids).tobytes() == loaded(ids).tobytes()


def test_loading_and_reading_a_query_unpack_no_more_than_one_matrix_at_a_time(
    packed: Path,
) -> None:
    # The 36 matrices unpacked whole are 42 MB of float32; a query unpacks each in turn into
    # one block the size of the largest (2.4 MB), so a one-query process never writes 42 MB.
    import tracemalloc

    tracemalloc.start()
    try:
        loaded = load(packed)
        assert tracemalloc.get_traced_memory()[1] < 8 << 20
        tracemalloc.reset_peak()
        loaded([2129, 2079, 1045, 21296])
        assert tracemalloc.get_traced_memory()[1] < 8 << 20
    finally:
        tracemalloc.stop()
