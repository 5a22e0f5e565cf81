"""The vector space of the coordinator's cache, followed while it runs.

An admin switches the cache to another embedder with `mem coordinator reindex --embedder NAME`
while the coordinator serves; every route's handler runs under the coordinator's :class:`Space`,
which takes the new embedder up in place at the first request after the swap
(:mod:`memmesh.net.following`, shared with the peer), and says so in the coordinator's words.
"""

import logging

from memmesh.local.store import Store
from memmesh.net import following

__all__ = ["Space"]

WORDING = following.Wording(
    log=logging.getLogger("memmesh.coordinator"),
    followed="the cache was reindexed from {before} to {now}: searching with it",
    words_only="the cache was reindexed from {before} to {now}, which cannot be loaded here "
    "({why}): searching by words alone (lexical_only) until it can",
    unusable="this coordinator's cache was reindexed with an embedder it cannot use here; its "
    "admin must restart it where that embedder is installed ({reason})",
)


class Space(following.Space):
    """Runs the coordinator's handlers on ``store``, and switches its embedder between them."""

    def __init__(self, store: Store) -> None:
        super().__init__(store, WORDING)
