"""An optional static embedder: WordLlama's ``l2_supercat`` token vectors, 256-d, averaged.

The `wordllama` package ships its weights (a 32,000 x 256 float32 table, 16 MB) and its
tokenizer file inside the wheel, so nothing is downloaded at run time. Install it with
``pip install 'memmesh[static]'``. A text's vector is the mean of its tokens' rows, scaled to
unit length: what ``WordLlama.embed(norm=True)`` computes, without padding the batch to its
longest text. It needs no model run, so it embeds thousands of short texts per second on
one core, and it places words of related meaning near each other, which the hashing
embedder cannot. Its licence terms are in docs/licences.md: the table was trained from the
token embeddings of Llama 2 models among others.
"""

import importlib.metadata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memmesh.embed._pooling import summed_rows
from memmesh.embed.base import Vectors
from memmesh.embed.errors import EmbedderUnavailable

__all__ = ["WordLlamaEmbedder"]

_CONFIG = "l2_supercat"
_DIM = 256
_EXTRA = "static"
# Provisional gates (calibrating abstention per embedder is later work), by the rules that
# give the hashing embedder's own values back: a query's best cosine with an unrelated fact
# stays below this for 9 of 10 noise queries of teamdev's tuning half (hashing: 0.34 against
# its 0.35); and a text with one of its words dropped still reaches the duplicate gate 97
# times in 100, three dropped about 80 (hashing at 0.9: 99 and 76). Restatements in other
# words reach 0.51-0.79 here, so they stay two items, as they do with hashing.
_MIN_COSINE = 0.55
_DUPLICATE_COSINE = 0.92
# Median and spread of the cosine of two unrelated texts (bench/calibrate.py).
_UNRELATED = (0.086, 0.090)


class WordLlamaEmbedder:
    """WordLlama ``l2_supercat`` at 256 dimensions; query and stored vectors are alike."""

    # Fixed for this model: plain attributes serve the protocol's read-only properties.
    name = "wordllama"
    dim = _DIM
    min_cosine = _MIN_COSINE
    duplicate_cosine = _DUPLICATE_COSINE
    unrelated = _UNRELATED
    vector_weight = 0.25

    def __init__(self) -> None:
        try:
            import wordllama
        except ImportError:
            raise EmbedderUnavailable("wordllama", _EXTRA) from None
        # The weights ship in the package: any new release may move the vectors.
        self._version = _package_version()
        folder = Path(wordllama.__file__).parent
        try:
            # The loader looks for the tokenizer under ``tokenizer/`` beside the module, which
            # the wheel names ``tokenizers/``, and would then download it: pointing its cache
            # at the package's own folder finds both files there, and no download is allowed.
            model: Any = wordllama.WordLlama.load(
                config=_CONFIG, dim=_DIM, cache_dir=folder, disable_download=True
            )
        except FileNotFoundError:
            raise EmbedderUnavailable("wordllama", _EXTRA) from None
        self._table: Vectors = np.ascontiguousarray(model.embedding, dtype=np.float32)
        self._tokenizer: Any = model.tokenizer
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()

    @property
    def fingerprint(self) -> str:
        return f"wordllama-{_CONFIG}-{self._version}-d{_DIM}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, _DIM), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return summed_rows(self._table, [encoding.ids for encoding in encodings])

    def embed_query(self, query: str) -> Vectors:
        vector: Vectors = self.embed([query])[0]
        return vector

    def __repr__(self) -> str:
        return f"WordLlamaEmbedder({_CONFIG}, d{_DIM})"


def _package_version() -> str:
    """The installed version of ``wordllama``, which names the vectors' version."""
    try:
        return importlib.metadata.version("wordllama")
    except importlib.metadata.PackageNotFoundError:
        raise EmbedderUnavailable("wordllama", _EXTRA) from None
