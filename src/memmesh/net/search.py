"""The search both daemons answer: its wire shapes, and the one way of answering it.

The coordinator answers from its cache of published items and a peer from its owner's
published items; both rank with the same recall over a store and answer with the signed
envelopes, so a client can check every hit whoever answered it.
"""

from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Annotated

import msgspec
import numpy as np

from memmesh.embed import Vectors, unit_vector
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


class SearchRequest(
    Request, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """``POST /v1/search`` (coordinator) and ``POST /v1/recall`` (peer): hybrid search over
    published items.

    ``vector`` is the query embedded by the client's embedder ``embedder``: a hint, used only
    when that is the answering store's embedder. Otherwise (or without one) the answering
    store embeds ``query`` itself, so that the answer never depends on the asker's embedder
    and vectors of two spaces are never compared.

    The search covers ``project`` plus ``global``, or, with ``all_projects``, every project
    the answering store holds (``project`` is then ignored). A field left at its default is
    not sent: a request without ``all_projects`` is one that daemons older than it accept,
    and one with it is refused by them (an unknown field, 400), never answered narrower.
    """

    query: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_QUERY_CHARS)]
    k: Annotated[int, msgspec.Meta(ge=1, le=MAX_K)] = 10
    project: Name = "global"
    authors: Annotated[list[Name], msgspec.Meta(max_length=32)] = msgspec.field(
        default_factory=list
    )
    vector: Vector | None = None
    embedder: Fingerprint | None = None
    all_projects: bool = False


class SearchHit(msgspec.Struct, frozen=True, kw_only=True):
    """A published item as its author signed it, with its score here."""

    envelope: Envelope
    score: float
    cosine: float
    lexical: float


class SearchResponse(msgspec.Struct, frozen=True, kw_only=True):
    """Ranked hits, in the vector space ``embedder`` names: the best ``k`` that pass recall's
    gate, which the asker scores and cuts itself (``abstained``: none passed); ``lexical_only``
    when the source could not rank by vectors at all (its store's embedder cannot be loaded
    where it runs)."""

    hits: list[SearchHit]
    abstained: bool
    lexical_only: bool
    embedder: str


def _scope(store: "Store", request: SearchRequest) -> list[str] | None:
    """The projects searched with ``all_projects``: every project holding an active item in
    ``store``, global included; else ``None`` (the request's project with global)."""
    from memmesh.local.items import GLOBAL

    if not request.all_projects:
        return None
    held: dict[str, int] = store.counts()["by_project"]
    return [*sorted(project for project in held if project != GLOBAL), GLOBAL]


def usable_vector(request: SearchRequest, fingerprint: str, dim: int) -> Vectors | None:
    """The request's query vector, scaled to unit length, if it lies in the answering store's
    space (its fingerprint, its size, finite and not zero), else ``None``: the answering store
    then embeds the query text itself."""
    if request.vector is None or request.embedder != fingerprint:
        return None
    return unit_vector(np.asarray(request.vector, dtype=np.float64), dim)


def answer_search(
    store: "Store",
    request: SearchRequest,
    envelopes: Callable[[list[str]], Mapping[str, Envelope]],
    *,
    restrict: Collection[str] | None = None,
    note_use: bool = False,
) -> SearchResponse:
    """Rank ``store``'s items for ``request`` and answer with their signed envelopes.

    ``envelopes`` gives the signed publication of each of the ids it is handed that is still
    published (the others are left out of the answer); ``restrict`` limits the candidates to
    those item ids (``None``: every item in the store). With ``note_use`` (a member's peer,
    answering from its owner's store) the items given are noted as in use
    (:func:`memmesh.local.journal.note_used`).

    The query is ranked in the store's own space: with the request's vector when it lies
    there, else with the store's embedding of the query text (bounded by
    :data:`MAX_QUERY_CHARS`, as every query is). Only a store whose embedder is missing here
    (:attr:`~memmesh.local.store.Store.words_only`) ranks by words alone, unless the request's
    vector lies in its space.

    The request's project is searched with global; with ``all_projects``, every project the
    store holds, in one recall.

    The hits are the best ``k`` candidates that pass recall's gate, without the floor and cut
    of a local answer: those are in units of this store's own BM25, and the asker scores every
    hit again in units that hold across sources, then answers (:mod:`memmesh.team.rank`). A
    floor here would drop what the asker would have kept.
    """
    from memmesh.local import recall  # the store's search stack, only where one answers

    embedder = store.embedder
    vector = usable_vector(request, embedder.fingerprint, embedder.dim)
    if vector is None and not store.words_only:
        vector = embedder.embed_query(request.query)
    lexical_only = vector is None
    hits: list[SearchHit] = []
    if restrict is None or restrict:
        # Asking for a few authors only leaves out the others' hits: ask for more to keep k.
        wanted = min(request.k * 3 if request.authors else request.k, MAX_K)
        found = recall(
            store,
            request.query,
            k=wanted,
            project=request.project,
            scope=_scope(store, request),
            mode="lexical" if lexical_only else "hybrid",
            record=False,
            query_vector=vector,
            restrict=restrict,
            answer=False,  # the asker scores these again and answers (memmesh.team.rank)
        ).hits
        authors = set(request.authors)
        chosen = [hit for hit in found if not authors or hit.item.author in authors]
        signed = envelopes([hit.item.id for hit in chosen])
        hits = [
            SearchHit(
                envelope=signed[hit.item.id], score=hit.score, cosine=hit.cosine,
                lexical=hit.lexical,
            )
            for hit in chosen
            if hit.item.id in signed
        ][: request.k]  # fmt: skip
        if hits and note_use:  # a teammate was given them: in use (memmesh.local.aging)
            from memmesh.local.journal import note_used

            with store.transaction() as tx:
                note_used(tx, [hit.item.id for hit in chosen[: request.k]], store.clock())
    return SearchResponse(
        hits=hits, abstained=not hits, lexical_only=lexical_only, embedder=embedder.fingerprint
    )
