"""Whether a publication may go to a member: the one check whoever serves or keeps one makes.

A publication goes to a member only when its author may publish it (the signed roster makes
them no ``reader``, and the project's publish grant admits them) and its audience, narrowed by
the project's read grant, admits that member (:class:`~memmesh.registry.access.Access`, as the
verified roster stands now). A peer asks it of each of its owner's items for the member asking
(:meth:`~memmesh.peer.service.Peer.recall`, ``confirm``); a member asks it of each hit and each
copy a team source sends, for itself (recall-team, the team cache, the feed), so that a
coordinator or a peer that serves what it should not is not believed.
"""

from memmesh.registry.access import Access
from memmesh.registry.envelopes import Publication

__all__ = ["AUTHOR_MAY_NOT_PUBLISH", "NOT_IN_AUDIENCE", "REASONS", "unreadable"]

# Why a publication does not go to a member: its author may not publish it (a reader, or left
# out of the project's publish grant), or its audience does not admit the member.
AUTHOR_MAY_NOT_PUBLISH = "author_may_not_publish"
NOT_IN_AUDIENCE = "not_in_audience"
REASONS = (AUTHOR_MAY_NOT_PUBLISH, NOT_IN_AUDIENCE)


def unreadable(access: Access, reader: str, publication: Publication) -> str | None:
    """Why ``publication`` must not go to the member ``reader`` (a member id) by ``access``'s
    rules (one of :data:`REASONS`), or ``None`` when it may."""
    if access.publish_refusal(publication.key_id, publication.project) is not None:
        return AUTHOR_MAY_NOT_PUBLISH
    if not access.may_read_publication(reader, publication):
        return NOT_IN_AUDIENCE
    return None
