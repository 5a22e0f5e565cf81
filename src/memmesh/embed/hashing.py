"""The default embedder: deterministic feature hashing, no model and no download.

Each text becomes a bag of features (stemmed content words, adjacent word pairs, the
character trigrams of each word, and exact tokens such as ``E1234``) hashed into a fixed
number of signed buckets, with sub-linear term frequency, then scaled to unit length. It
captures lexical and sub-word overlap only, which is why recall fuses it with BM25; its
strength is that it is instant, reproducible on every machine, and free of dependencies.
"""

import itertools
import math
from collections import defaultdict
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from memmesh import text as _text
from memmesh.embed.base import Vectors

__all__ = ["DEFAULT_DIM", "HashingEmbedder"]

DEFAULT_DIM = 384
# The algorithm's version, named in the fingerprint: raise it with any change that moves a
# vector (features, weights, hashing, or the tokens of `memmesh.text` they are made from).
# Version 2: tokens fold accents and width, and CJK runs become their character pairs.
_VERSION = 2
_WORD_WEIGHT = 1.0
_PAIR_WEIGHT = 0.5
_GRAM_WEIGHT = 0.6
_EXACT_WEIGHT = 1.5
# Median and spread of the cosine of two unrelated texts at 384 dimensions (bench/calibrate.py).
_UNRELATED = (0.017, 0.051)


@lru_cache(maxsize=1 << 18)
def _bucket(feature: str, dim: int) -> tuple[int, float]:
    """Bucket index and sign of a feature, stable across processes and machines."""
    import hashlib  # here: its OpenSSL takes 2 ms to load, which `mem` mostly does without

    digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
    return digest % dim, (1.0 if digest >> 63 else -1.0)


def _features(text: str) -> dict[str, float]:
    """Weighted features of one text."""
    feats: dict[str, float] = defaultdict(float)
    toks = _text.tokens(text)
    words = [t for t in toks if t.isalnum()]
    for tok in toks:
        if tok.isalnum():
            feats["w:" + tok] += _WORD_WEIGHT
            padded = f"#{tok}#"
            grams = [padded[i : i + 3] for i in range(len(padded) - 2)]
            share = _GRAM_WEIGHT / math.sqrt(len(grams))
            for gram in grams:
                feats["g:" + gram] += share
        else:
            feats["x:" + tok] += _EXACT_WEIGHT
    for first, second in itertools.pairwise(words):
        feats[f"p:{first} {second}"] += _PAIR_WEIGHT
    return feats


class HashingEmbedder:
    """Feature-hashing embedder; see the module docstring."""

    def __init__(self, dim: int = DEFAULT_DIM) -> None:
        if dim < 16:
            raise ValueError("dim must be at least 16")
        self._dim = dim

    @property
    def name(self) -> str:
        return "hashing"

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def fingerprint(self) -> str:
        return f"hashing-v{_VERSION}-d{self._dim}"

    @property
    def min_cosine(self) -> float:
        return 0.35

    @property
    def unrelated(self) -> tuple[float, float]:
        return _UNRELATED

    @property
    def vector_weight(self) -> float:
        # 0.15 ranked a little better locally but left the team path's floor out of reach.
        return 0.25

    @property
    def duplicate_cosine(self) -> float:
        return 0.9

    def embed_query(self, query: str) -> Vectors:
        vector: Vectors = self.embed([query])[0]
        return vector

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            feats = _features(text)
            if not feats:
                continue
            index = np.empty(len(feats), dtype=np.intp)
            weight = np.empty(len(feats), dtype=np.float64)
            for i, (feature, value) in enumerate(feats.items()):
                bucket, sign = _bucket(feature, self._dim)
                index[i] = bucket
                weight[i] = sign * (1.0 + math.log(value)) if value >= 1 else sign * value
            vec = np.bincount(index, weights=weight, minlength=self._dim)
            norm = float(np.linalg.norm(vec))
            if norm > 0:
                out[row] = vec / norm
        return out

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self._dim})"
