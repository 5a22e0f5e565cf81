"""The vector space of the coordinator's cache, followed while it runs.

An admin switches the cache to another embedder with `mem coordinator reindex --embedder NAME`
while the coordinator serves: the reindex stages the new vectors beside the old ones (searches
go on with the old) and swaps them in at once. The first request after the swap finds the
file's vectors are another embedder's (:class:`~memmesh.local.errors.EmbedderMismatch`); the
coordinator then takes up the new embedder in place (:meth:`Store.follow_embedder`), says so
in one line of its log, and runs the request again. Every handler runs under :meth:`Space.
guarded`, and the switch waits until none is running: no search ever compares a query of one
space with vectors of the other. Where the new embedder cannot be loaded (its extra is missing
here), a stand-in takes its place: searches rank by words alone (``lexical_only``), and a
publish whose vector is not in the new space is refused with 503 until the coordinator is
restarted where it can be loaded.
"""

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from memmesh.embed import EmbedError, get_embedder
from memmesh.local.errors import EmbedderMismatch
from memmesh.local.store import Store
from memmesh.net.errors import Unavailable

__all__ = ["Space"]

_P = ParamSpec("_P")
_R = TypeVar("_R")
_log = logging.getLogger("memmesh.coordinator")


class Space:
    """Runs the coordinator's handlers on ``store``, and switches its embedder between them."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._turn = threading.Condition()
        self._running = 0  # handlers running now
        self._switching = False  # a switch waits for them, and holds new ones back

    def guarded(self, handler: Callable[_P, _R]) -> Callable[_P, _R]:
        """``handler``, run while no switch is under way; after a reindex switched the
        cache's vectors, the switch and then ``handler`` again."""

        def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            for attempt in (1, 2):
                try:
                    with self._handling():
                        return handler(*args, **kwargs)
                except EmbedderMismatch as exc:
                    if attempt == 2:
                        raise Unavailable(_restart(exc.message)) from None
                except EmbedError as exc:  # the stand-in of an embedder missing here
                    raise Unavailable(_restart(exc.message)) from None
                self.follow()
            raise AssertionError("not reached")

        return run

    def follow(self) -> None:
        """Take up the embedder the cache's vectors come from now, once no handler runs."""
        with self._turn:
            while self._switching:
                self._turn.wait()
            self._switching = True
            while self._running:
                self._turn.wait()
        try:
            before = self.store.embedder.fingerprint
            if self.store.follow_embedder():
                _said(before, self.store)
        except EmbedderMismatch as exc:
            raise Unavailable(_restart(exc.message)) from None
        finally:
            with self._turn:
                self._switching = False
                self._turn.notify_all()

    @contextmanager
    def _handling(self) -> Iterator[None]:
        with self._turn:
            while self._switching:
                self._turn.wait()
            self._running += 1
        try:
            yield
        finally:
            with self._turn:
                self._running -= 1
                if not self._running:
                    self._turn.notify_all()


def _said(before: str, store: Store) -> None:
    """Say in the log which embedder the cache searches with now."""
    now = store.embedder
    if not store.words_only:
        _log.warning(
            "the cache was reindexed from %s to %s: searching with it", before, now.fingerprint
        )
        return
    try:
        get_embedder(now.name)
        why = "another version of it is installed"
    except EmbedError as exc:
        why = exc.message
    _log.warning(
        "the cache was reindexed from %s to %s, which cannot be loaded here (%s): searching "
        "by words alone (lexical_only) until it can", before, now.fingerprint, why,
    )  # fmt: skip


def _restart(reason: str) -> str:
    return (
        f"this coordinator's cache was reindexed with an embedder it cannot use here ({reason}); "
        "its admin must restart it where that embedder is installed"
    )
