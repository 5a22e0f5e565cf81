"""Pooling token rows into text vectors: what every static (table lookup) embedder does."""

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memmesh.embed.base import Vectors

__all__ = ["summed_rows"]


def summed_rows(
    table: npt.NDArray[Any],
    token_ids: Sequence[Sequence[int]],
    scales: npt.NDArray[np.float32] | None = None,
) -> Vectors:
    """One unit row per text: the sum of its tokens' rows of ``table``, scaled to length 1.

    ``scales``, when given, multiplies each row of a quantized table (int8 codes) by its own
    scale as it is read, so the table is never unpacked whole.

    A text with no tokens, or whose rows cancel out, gets a zero row. Ids beyond the table
    are clipped to its last row, as the tokenizers' own embedders do. (A mean scaled to unit
    length is the same vector as a sum, so this serves averaging embedders too.)
    """
    out = np.zeros((len(token_ids), table.shape[1]), dtype=np.float32)
    lengths = np.array([len(ids) for ids in token_ids], dtype=np.intp)
    rows = np.flatnonzero(lengths)
    if not rows.size:
        return out
    ids = np.concatenate([np.asarray(token_ids[int(row)], dtype=np.intp) for row in rows])
    np.clip(ids, 0, table.shape[0] - 1, out=ids)
    starts = np.concatenate(([0], np.cumsum(lengths[rows])[:-1]))
    picked = table[ids].astype(np.float64)
    if scales is not None:
        picked *= scales[ids, None]
    sums = np.add.reduceat(picked, starts, axis=0)
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    keep = norms[:, 0] > 0
    out[rows[keep]] = (sums[keep] / norms[keep]).astype(np.float32)
    return out
