"""The search both daemons answer: its wire shapes, and the one way of answering it.

The coordinator answers from its cache of published items and a peer from its owner's
published items; both rank with the same recall over a store and answer with the signed
envelopes, so a client can check every hit whoever answered it.
"""

from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Annotated

import msgspec
import numpy as np
from numpy.typing import NDArray

from memmesh.net.wire import Request
from memmesh.registry.envelopes import Envelope

if TYPE_CHECKING:
    from memmesh.local.store import Store

__all__ = [
    "MAX_DIM",
    "MAX_K",
    "MAX_QUERY_CHARS",
    "Fingerprint",
    "Name",
    "SearchHit",
    "SearchRequest",
    "SearchResponse",
    "Vector",
    "answer_search",
    "usable_vector",
]

MAX_DIM = 4096
MAX_QUERY_CHARS = 8192
MAX_K = 100

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
Fingerprint = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
Vector = Annotated[list[float], msgspec.Meta(min_length=1, max_length=MAX_DIM)]


class SearchRequest(Request, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/search`` (coordinator) and ``POST /v1/recall`` (peer): hybrid search over
    published items.

    ``vector`` is the query embedded by the client's embedder ``embedder``; when that is not
    the answering store's embedder, the answer is ranked lexically and says so.
    """

    query: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_QUERY_CHARS)]
    k: Annotated[int, msgspec.Meta(ge=1, le=MAX_K)] = 10
    project: Name = "global"
    authors: Annotated[list[Name], msgspec.Meta(max_length=32)] = msgspec.field(
        default_factory=list
    )
    vector: Vector | None = None
    embedder: Fingerprint | None = None


class SearchHit(msgspec.Struct, frozen=True, kw_only=True):
    """A published item as its author signed it, with its score here."""

    envelope: Envelope
    score: float
    cosine: float
    lexical: float


class SearchResponse(msgspec.Struct, frozen=True, kw_only=True):
    """Ranked hits; ``lexical_only`` when the query vector could not be used."""

    hits: list[SearchHit]
    abstained: bool
    lexical_only: bool
    embedder: str


def usable_vector(request: SearchRequest, fingerprint: str, dim: int) -> NDArray[np.float64] | None:
    """The request's query vector if it lies in the answering store's space, else ``None``
    (the answer is then ranked by words and says ``lexical_only``)."""
    if request.vector is None or request.embedder != fingerprint:
        return None
    vector = np.asarray(request.vector, dtype=np.float64)
    return vector if vector.shape == (dim,) else None


def answer_search(
    store: "Store",
    request: SearchRequest,
    envelopes: Callable[[list[str]], Mapping[str, Envelope]],
    *,
    restrict: Collection[str] | None = None,
) -> SearchResponse:
    """Rank ``store``'s items for ``request`` and answer with their signed envelopes.

    ``envelopes`` gives the signed publication of each of the ids it is handed that is still
    published (the others are left out of the answer); ``restrict`` limits the candidates to
    those item ids (``None``: every item in the store).
    """
    from memmesh.local import recall  # the store's search stack, only where one answers

    fingerprint = store.embedder.fingerprint
    vector = usable_vector(request, fingerprint, store.embedder.dim)
    lexical_only = vector is None
    hits: list[SearchHit] = []
    if restrict is None or restrict:
        # Asking for a few authors only leaves out the others' hits: ask for more to keep k.
        wanted = request.k * 3 if request.authors else request.k
        answer = recall(
            store,
            request.query,
            k=min(wanted, MAX_K),
            project=request.project,
            mode="lexical" if lexical_only else "hybrid",
            record=False,
            query_vector=vector,
            restrict=restrict,
        )
        authors = set(request.authors)
        chosen = [hit for hit in answer.hits if not authors or hit.item.author in authors]
        signed = envelopes([hit.item.id for hit in chosen])
        hits = [
            SearchHit(
                envelope=signed[hit.item.id], score=hit.score, cosine=hit.cosine,
                lexical=hit.lexical,
            )
            for hit in chosen
            if hit.item.id in signed
        ][: request.k]  # fmt: skip
    return SearchResponse(
        hits=hits, abstained=not hits, lexical_only=lexical_only, embedder=fingerprint
    )
