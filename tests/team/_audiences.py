"""Publishing for an audience, and asking a peer as one member, for the tests of who is served
what: an item is published as `mem team publish --to` does, its audience inside the signed
publication; a peer is asked over HTTP with the asker's own signed requests."""

from memmesh.embed import get_embedder
from memmesh.net.client import Client
from memmesh.net.search import SearchRequest, SearchResponse
from memmesh.net.signing import peer_audience
from memmesh.peer.protocol import ConfirmRequest, ConfirmResponse
from memmesh.registry.envelopes import Audience, Publication, open_envelope, text_hash
from memmesh.registry.roster_chain import SignedStatement
from memmesh.registry.roster_chain import group as group_statement
from tests.team._signed import SignedTeam
from tests.team._team import Member

_embedder = get_embedder()


def publish_for(
    member: Member,
    text: str,
    audience: Audience | None,
    *,
    project: str = "global",
    kind: str = "decision",
) -> str:
    """``member`` remembers ``text`` and publishes it for ``audience`` (``None``: the whole
    team), signed as their memmesh signs it; returns the item id."""
    item_id = member.remember(text, kind=kind, project=project)
    publish_again_for(member, item_id, audience)
    return item_id


def publish_again_for(member: Member, item_id: str, audience: Audience | None) -> None:
    """``member`` publishes the item ``item_id`` (a new version of it) for ``audience``."""
    with member.registry() as registry, registry.store.transaction() as tx:
        item = registry.store.get(item_id, tx)
        registry.record(
            tx,
            Publication,
            team=member.team,
            item_id=item_id,
            version=registry.latest_version(tx, item_id) + 1,
            author=item.author,
            published_at=registry.store.clock(),
            text=item.text,
            kind=item.kind,
            project=item.project,
            tags=item.tags,
            content_hash=text_hash(item.text),
            embedder=registry.store.embedder.fingerprint,
            audience=audience,
        )


def regroup(
    signed: SignedTeam, name: str, *, add: tuple[Member, ...] = (), remove: tuple[Member, ...] = ()
) -> SignedStatement:
    """The team's first admin puts ``add`` into the group ``name`` and takes ``remove`` out."""
    assert signed.admin is not None
    added, removed = [m.key_id for m in add], [m.key_id for m in remove]
    statement = group_statement(
        signed.state, signed.admin.identity, name=name, add=added, remove=removed
    )
    signed.post(statement)
    return statement


def recalled(asker: Member, owner: Member, url: str, query: str, *, k: int = 5) -> list[str]:
    """The ids of the items ``owner``'s peer at ``url`` answers ``asker``'s recall with, each
    envelope verified as ``owner``'s."""
    vector = _embedder.embed_query(query).tolist()
    request = SearchRequest(
        query=query, k=k, vector=vector, embedder=_embedder.fingerprint, all_projects=True
    )
    with _client(asker, owner, url) as client:
        answer = client.post("/v1/recall", request, SearchResponse)
    ids = []
    for hit in answer.hits:
        body = open_envelope(hit.envelope)
        assert isinstance(body, Publication)
        assert body.key_id == owner.key_id
        ids.append(body.item_id)
    return ids


def confirmed(asker: Member, owner: Member, url: str, *item_ids: str) -> list[tuple[bool, int]]:
    """What ``owner``'s peer at ``url`` tells ``asker`` of each item: published, and at which
    version."""
    with _client(asker, owner, url) as client:
        answer = client.post(
            "/v1/confirm", ConfirmRequest(item_ids=list(item_ids)), ConfirmResponse
        )
    return [(c.published, c.version) for c in answer.items]


def _client(asker: Member, owner: Member, url: str) -> Client:
    return Client(url, token=None, identity=asker.identity, audience=peer_audience(owner.key_id))
