"""The default embedder: static token vectors distilled from all-MiniLM-L6-v2, 256-d, summed.

A text's vector is the sum of its WordPiece tokens' rows, scaled to unit length. The rows
were made once, offline, by ``scripts/distill_static.py`` (its docstring says how): each is
what the MiniLM sentence encoder makes of that token in context, then fitted so that the sum
of a sentence's rows points where the encoder's own sentence vector points. So it places
texts of related meaning near each other, as the encoder does, for the cost of a table lookup:
no model runs here and nothing is downloaded. The weights ship in this package
(``weights/minilm-static-codes.npy``: 30,522 rows of 256 int8 values, and a scale for each
row in ``minilm-static-scales.npy``), with the model's tokenizer; they are mapped, not read,
and only once a text is to be embedded, so a command that embeds nothing pays nothing. A
few ASCII texts (a question, a remembered fact) are read into word pieces in Python
(:mod:`._wordpiece`, the same ids), which spares a recall loading the tokenizers package.
Their licence is the teacher's, Apache-2.0 (docs/operations.md).

A query is one text per recall, so it is read by the teacher itself (:mod:`._encoder`, the
packed ``weights/minilm-query*`` files), projected into the table's space: stored vectors, and so
the fingerprint, are the same either way.
"""

from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memmesh.embed._encoder import encoder
from memmesh.embed._pooling import summed_rows
from memmesh.embed._wordpiece import LOOKUP_FILE, Vocabulary, word_pieces
from memmesh.embed._wordpiece import vocabulary as read_vocabulary
from memmesh.embed.base import Vectors
from memmesh.embed.errors import EmbedderDamaged

__all__ = ["QUERY_WEIGHTS_SHA256", "WEIGHTS_SHA256", "MiniLMStaticEmbedder"]

_NAME = "minilm-static"
# The weights' version, named in the fingerprint: raise it whenever the committed files change.
_VERSION = 1
# SHA-256 of the weight files that version stands for (a test holds the two together).
WEIGHTS_SHA256 = {
    "minilm-static-codes.npy": "7336da5d1892f50ea6fd1f2ca4d7d71a3b88126f0b60c03a27a6a81159966c22",
    "minilm-static-scales.npy": "a8c361073f0ddf1d03c7c7b2b3ceb457b80eafcc52a79cc22fddde832ae47ffd",
}
# The query encoder's packed weights: they embed questions only, never a stored vector, so a
# change to them moves no store and raises no version, but recalibrates ``_UNRELATED``.
QUERY_WEIGHTS_SHA256 = {
    "minilm-query.json": "5b0518f5926b8f00985ec9adcee4a0c7570a352089cbed26f22b473f673b6bbf",
    "minilm-query-int8.npy": "778c32a07cfbd09da362d9ca56651fa9765e2f9fb0385d1d2c1ca99f2625b8ee",
    "minilm-query-float32.npy": "a416ae383692c35d5b6e027e21820fe4cd7cdef562a68046547f0af7ae2794ea",
}
_DIM = 256
# The package's files, beside this module (the query encoder needs them as files too).
_WEIGHTS = Path(__file__).with_name("weights")
# Median and spread of the cosine of an unrelated question and text (bench/calibrate.py).
_UNRELATED = (0.151, 0.120)
# The novelty gate, by the rule that gives the hashing embedder's 0.9 back: a teamdev fact
# with one of its words dropped still reaches it 96 times in 100, three dropped 80 (hashing:
# 99 and 76); no two distinct facts and none of the restatement pairs reach it.
_DUPLICATE_COSINE = 0.94
# Raw-cosine "about the same thing" (unrelated + 3 spreads), for corroboration's optional
# cosine check; recall gates on closeness instead.
_MIN_COSINE = 0.48


# At most this many texts, all ASCII, are read into word pieces here (:mod:`._wordpiece`), a
# recall's question or a remembered text; a larger batch is read by the tokenizers package,
# whose load it repays (its Rust reads many texts at once, in parallel).
_PLAIN_TEXTS = 16


@cache
def _table() -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """The table's int8 codes and row scales (mapped from the package's files, not read into
    memory): loaded once per process, on the first text to embed."""
    try:
        codes = np.load(_WEIGHTS / "minilm-static-codes.npy", mmap_mode="r")
        scales = np.load(_WEIGHTS / "minilm-static-scales.npy")
    except (OSError, ValueError) as error:
        raise EmbedderDamaged(_NAME, str(error)) from None
    if codes.shape != (scales.shape[0], _DIM):
        raise EmbedderDamaged(_NAME, f"a table of shape {codes.shape}")
    return codes, scales


@cache
def _vocabulary() -> Vocabulary:
    """The tokenizer's ASCII word pieces, for the texts read in Python."""
    try:
        vocabulary = read_vocabulary(_WEIGHTS / LOOKUP_FILE)
    except (OSError, ValueError) as error:  # UnicodeDecodeError is a ValueError
        raise EmbedderDamaged(_NAME, f"vocabulary: {error}") from None
    if vocabulary.size > _table()[0].shape[0]:
        raise EmbedderDamaged(_NAME, f"a vocabulary of {vocabulary.size} tokens")
    return vocabulary


@cache
def _tokenizer() -> Any:
    """The tokenizers package's tokenizer, for every other text."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise EmbedderDamaged(_NAME, "the tokenizers package is missing") from None
    try:  # read and parsed by the tokenizers package itself, its quickest way
        tokenizer = Tokenizer.from_file(str(_WEIGHTS / "minilm-static-tokenizer.json"))
    except Exception as error:  # the tokenizers package raises a plain Exception
        raise EmbedderDamaged(_NAME, f"tokenizer: {error}") from None
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def _word_pieces(texts: Sequence[str]) -> list[list[int]]:
    """Each text's word-piece ids, without ``[CLS]`` and ``[SEP]``: the same whichever of
    the two readings gives them (tests/embed/test_wordpiece.py)."""
    if len(texts) <= _PLAIN_TEXTS and all(text.isascii() for text in texts):
        vocabulary = _vocabulary()
        return [word_pieces(text, vocabulary) for text in texts]
    encodings = _tokenizer().encode_batch(list(texts), add_special_tokens=False)
    return [encoding.ids for encoding in encodings]


class MiniLMStaticEmbedder:
    """Static MiniLM token vectors at 256 dimensions; query and stored vectors are alike."""

    name = _NAME
    dim = _DIM
    min_cosine = _MIN_COSINE
    duplicate_cosine = _DUPLICATE_COSINE
    unrelated = _UNRELATED
    vector_weight = 0.3
    fingerprint = f"{_NAME}-v{_VERSION}-d{_DIM}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, _DIM), dtype=np.float32)
        codes, scales = _table()
        return summed_rows(codes, _word_pieces(texts), scales)

    def embed_query(self, query: str) -> Vectors:
        """The query as the MiniLM encoder itself reads it (:mod:`._encoder`), in the table's
        space, and as its sum of rows, in equal parts. The encoder reads a question in
        context; the rows are what the stored texts are made of, so they keep matching where
        the table strays from the encoder (chat, an acronym or a code alone)."""
        codes, scales = _table()
        (ids,) = _word_pieces([query])
        if not ids:
            return np.zeros(_DIM, dtype=np.float32)
        rows = summed_rows(codes, [ids], scales)[0]
        vector = encoder()(ids) + rows
        norm = float(np.linalg.norm(vector))
        out: Vectors = (vector / norm if norm > 0 else vector).astype(np.float32)
        return out

    def __repr__(self) -> str:
        return f"MiniLMStaticEmbedder(v{_VERSION}, d{_DIM})"
