"""The embedder protocol every vector source implements."""

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["Embedder", "Vectors", "closeness", "hinted", "unit_vector"]

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors.

    ``fingerprint`` names the exact vector space: two embedders with the same fingerprint
    produce comparable vectors, and vectors from different fingerprints must never be mixed.
    So it names the model or algorithm and its exact version (for a model, the version of the
    package that holds and runs it), and changes with anything else that could move a vector.
    """

    @property
    def name(self) -> str:
        """The short name a user types (``hashing``, ``e5-small``)."""

    @property
    def dim(self) -> int:
        """Length of every vector."""

    @property
    def fingerprint(self) -> str:
        """Identity of the vector space: model or algorithm, its exact version, dimension
        and parameters (a store refuses vectors made under any other)."""

    @property
    def min_cosine(self) -> float:
        """Cosine from which two texts are plausibly about the same thing, in raw cosine.

        Recall no longer gates on it (it reads cosines as :func:`closeness` against
        :attr:`unrelated`); corroboration's optional cosine check still does."""

    @property
    def unrelated(self) -> tuple[float, float]:
        """Median and spread of this embedder's cosine between two unrelated texts, as
        ``bench/calibrate.py`` measures them: recall reads every cosine in these units
        (:func:`closeness`), so that one gate means the same for every embedder."""

    @property
    def vector_weight(self) -> float:
        """What one spread of closeness weighs in recall's fused score, beside the relative
        BM25's weight: how much this embedder's cosine tells beyond the words themselves
        (chosen per embedder on teamdev's tuning half, docs/benchmarks.md)."""

    @property
    def duplicate_cosine(self) -> float:
        """Cosine from which two stored texts say the same thing (the novelty gate)."""

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed stored ``texts`` as an ``(len(texts), dim)`` array of unit (or zero) rows."""

    def embed_query(self, query: str) -> Vectors:
        """Embed one search query as a ``(dim,)`` vector comparable with :meth:`embed` rows."""


def unit_vector(vector: npt.NDArray[np.floating[Any]], dim: int) -> Vectors | None:
    """``vector`` scaled to unit length, or ``None`` if it cannot be (wrong size, zero, or not
    finite). Vectors from the network go through this before any cosine is taken."""
    if vector.shape != (dim,):
        return None
    wide = vector.astype(np.float64)
    if not np.all(np.isfinite(wide)):
        return None
    largest = float(np.max(np.abs(wide))) if wide.size else 0.0
    if largest == 0.0:
        return None
    wide = wide / largest  # now the norm cannot overflow, however large the values were
    norm = float(np.linalg.norm(wide))
    if not np.isfinite(norm) or norm == 0.0:
        return None
    unit: Vectors = (wide / norm).astype(np.float32)
    return unit


def hinted(embedder: Embedder, text: str, vector: npt.NDArray[np.floating[Any]] | None) -> Vectors:
    """The unit vector ``text`` is kept with: ``vector`` (a hint from elsewhere) scaled to unit
    length where it lies in ``embedder``'s space, else ``embedder``'s own embedding of it."""
    unit = None if vector is None else unit_vector(vector, embedder.dim)
    return embedder.embed([text])[0] if unit is None else unit


def closeness(cosine: float, unrelated: tuple[float, float]) -> float:
    """How far ``cosine`` stands above what two unrelated texts get from the same embedder,
    in spreads of that background (0: as close as unrelated texts usually are)."""
    median, spread = unrelated
    return (cosine - median) / spread
