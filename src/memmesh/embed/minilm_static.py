"""The default embedder: static token vectors distilled from all-MiniLM-L6-v2, 256-d, summed.

A text's vector is the sum of its WordPiece tokens' rows, scaled to unit length. The rows
were made once, offline, by ``scripts/distill_static.py`` (its docstring says how): each is
what the MiniLM sentence encoder makes of that token in context, then fitted so that the sum
of a sentence's rows points where the encoder's own sentence vector points. So it places
texts of related meaning near each other, as the encoder does, for the cost of a table lookup:
no model runs here and nothing is downloaded. The weights ship in this package
(``weights/minilm-static.npz``: 30,522 rows of 256 int8 values with a scale each), with the
model's tokenizer; their licence is the teacher's, Apache-2.0 (docs/operations.md).
"""

import json
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from memmesh.embed._pooling import summed_rows
from memmesh.embed.base import Vectors
from memmesh.embed.errors import EmbedderUnavailable

__all__ = ["WEIGHTS_SHA256", "MiniLMStaticEmbedder"]

_NAME = "minilm-static"
# The weights' version, named in the fingerprint: raise it whenever the committed files change.
_VERSION = 1
# SHA-256 of the weights file that version stands for (a test holds the two together).
WEIGHTS_SHA256 = "83d8c5c37d224d12d9962f3910f54ae3f52cb8e9a70b6ff0b68d0c3f544e16f7"
_DIM = 256
# Median and spread of the cosine of two unrelated texts (bench/calibrate.py).
_UNRELATED = (0.134, 0.116)
# The novelty gate, by the rule that gives the hashing embedder's 0.9 back: a teamdev fact
# with one of its words dropped still reaches it 96 times in 100, three dropped 80 (hashing:
# 99 and 76); no two distinct facts and none of the restatement pairs reach it.
_DUPLICATE_COSINE = 0.94
# Where the team path's gate starts (its own scoring, team/rank.py): unrelated + 3 spreads.
_MIN_COSINE = 0.48


@cache
def _weights() -> tuple[Vectors, Any]:
    """The table, dequantized once per process, and the tokenizer."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise EmbedderUnavailable(_NAME, "") from None
    folder = resources.files("memmesh.embed") / "weights"
    try:
        with (folder / "minilm-static.npz").open("rb") as handle, np.load(handle) as packed:
            table = packed["codes"].astype(np.float32) * packed["scale"][:, None]
        tokenizer = Tokenizer.from_str((folder / "minilm-static-tokenizer.json").read_text("utf-8"))
    except (OSError, KeyError, ValueError, json.JSONDecodeError):
        raise EmbedderUnavailable(_NAME, "") from None
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return np.ascontiguousarray(table), tokenizer


class MiniLMStaticEmbedder:
    """Static MiniLM token vectors at 256 dimensions; query and stored vectors are alike."""

    name = _NAME
    dim = _DIM
    min_cosine = _MIN_COSINE
    duplicate_cosine = _DUPLICATE_COSINE
    unrelated = _UNRELATED
    vector_weight = 0.25
    fingerprint = f"{_NAME}-v{_VERSION}-d{_DIM}"

    def __init__(self) -> None:
        self._table, self._tokenizer = _weights()

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, _DIM), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return summed_rows(self._table, [encoding.ids for encoding in encodings])

    def embed_query(self, query: str) -> Vectors:
        vector: Vectors = self.embed([query])[0]
        return vector

    def __repr__(self) -> str:
        return f"MiniLMStaticEmbedder(v{_VERSION}, d{_DIM})"
