"""Embedders: the protocol, the default minilm-static embedder, the hashing embedder, and
optional model embedders."""

from collections.abc import Callable

from memmesh._embedders import DEFAULT_EMBEDDER, EMBEDDER_NAMES
from memmesh.embed.base import Embedder, Vectors, closeness, hinted, unit_vector
from memmesh.embed.errors import (
    EmbedderDamaged,
    EmbedderUnavailable,
    EmbedError,
    UnknownEmbedder,
)
from memmesh.embed.hashing import HashingEmbedder

__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDER_NAMES",
    "EmbedError",
    "Embedder",
    "EmbedderDamaged",
    "EmbedderUnavailable",
    "HashingEmbedder",
    "UnknownEmbedder",
    "Vectors",
    "closeness",
    "get_embedder",
    "hinted",
    "unit_vector",
]


def _e5_small() -> Embedder:
    from memmesh.embed.model import E5SmallEmbedder

    return E5SmallEmbedder()


def _minilm_static() -> Embedder:
    from memmesh.embed.minilm_static import MiniLMStaticEmbedder

    return MiniLMStaticEmbedder()


def _wordllama() -> Embedder:
    from memmesh.embed.static import WordLlamaEmbedder

    return WordLlamaEmbedder()


_FACTORIES: dict[str, Callable[[], Embedder]] = {
    "hashing": HashingEmbedder,
    "minilm-static": _minilm_static,
    "e5-small": _e5_small,
    "wordllama": _wordllama,
}


def get_embedder(name: str = DEFAULT_EMBEDDER) -> Embedder:
    """The embedder registered as ``name``.

    Raises :class:`UnknownEmbedder` for a name nobody registered and
    :class:`EmbedderUnavailable` when its optional extra is not installed.
    """
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise UnknownEmbedder(name, list(_FACTORIES)) from None
    return factory()
