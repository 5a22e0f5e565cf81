"""A daemon's store, followed to the embedder a reindex switched it to while the daemon runs.

A reindex run beside a daemon (`mem reindex --embedder NAME` beside `mem team serve`, `mem
coordinator reindex` beside the coordinator) stages the new vectors beside the old ones (the
daemon goes on searching with the old) and swaps them in at once. The first request after the
swap finds the file's vectors are another embedder's
(:class:`~memmesh.local.errors.EmbedderMismatch`); the daemon then takes up the new embedder in
place (:meth:`Store.follow_embedder`), says so in one line of its log, and runs the request
again. Every handler that reads the store's vectors runs under :meth:`Space.guarded`, and the
switch waits until none is running: no search ever compares a query of one space with vectors
of the other. Where the new embedder cannot be loaded (its extra is missing here), a stand-in
takes its place: searches rank by words alone (``lexical_only``, said once in the log with
why), and a handler that must embed is answered 503 until the daemon is restarted where it can
be loaded. Where it cannot be taken up at all (another version of it is installed here), every
request it reaches is answered 503 saying why, said once in the log too.

Each daemon says all this in its own words (:class:`Wording`).
"""

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

from memmesh.embed import EmbedError, get_embedder
from memmesh.local.errors import EmbedderMismatch
from memmesh.local.store import Store
from memmesh.net.errors import Unavailable

__all__ = ["Space", "Wording"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


@dataclass(frozen=True, kw_only=True)
class Wording:
    """How a daemon says it followed a reindex, in ``log``; each text a format string.

    * ``followed`` - it searches with the new embedder now (``{before}``, ``{now}``: their
      fingerprints).
    * ``words_only`` - the new embedder cannot be loaded here, and it searches by words alone
      (``{before}``, ``{now}``, and ``{why}`` it cannot be loaded).
    * ``unusable`` - the message of the 503 it answers where the new embedder cannot be used
      here (``{reason}``); said once in the log too.
    """

    log: logging.Logger
    followed: str
    words_only: str
    unusable: str


class Space:
    """Runs a daemon's handlers on ``store``, and switches its embedder between them."""

    def __init__(self, store: Store, wording: Wording) -> None:
        self.store = store
        self.wording = wording
        self._turn = threading.Condition()
        self._running = 0  # handlers running now
        self._switching = False  # a switch waits for them, and holds new ones back
        self._unusable = ""  # the fingerprint it could not take up, said once in the log

    def guarded(self, handler: Callable[_P, _R]) -> Callable[_P, _R]:
        """``handler``, run while no switch is under way; after a reindex switched the
        store's vectors, the switch and then ``handler`` again."""

        def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            for attempt in (1, 2):
                try:
                    with self._handling():
                        return handler(*args, **kwargs)
                except EmbedderMismatch as exc:
                    if attempt == 2:
                        raise self._unavailable(exc.message) from None
                except EmbedError as exc:  # the stand-in of an embedder missing here
                    raise self._unavailable(exc.message) from None
                self.follow()
            raise AssertionError("not reached")

        return run

    def follow(self) -> None:
        """Take up the embedder the store's vectors come from now, once no handler runs.
        Raises :class:`Unavailable` where it cannot be taken up here."""
        with self._turn:
            while self._switching:
                self._turn.wait()
            self._switching = True
            while self._running:
                self._turn.wait()
        try:
            before = self.store.embedder.fingerprint
            if self.store.follow_embedder():
                self._said(before)
        except EmbedderMismatch as exc:
            unavailable = self._unavailable(exc.message)
            if self._unusable != exc.stored:
                self._unusable = exc.stored
                self.wording.log.warning("%s", unavailable.message)
            raise unavailable from None
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

    def _said(self, before: str) -> None:
        """Say in the log which embedder the store searches with now."""
        now = self.store.embedder
        wording = self.wording
        if not self.store.words_only:
            said = wording.followed.format(before=before, now=now.fingerprint)
            wording.log.warning("%s", said)
            return
        try:
            get_embedder(now.name)
            why = "another version of it is installed"
        except EmbedError as exc:
            why = exc.message
        said = wording.words_only.format(before=before, now=now.fingerprint, why=why)
        wording.log.warning("%s", said)

    def _unavailable(self, reason: str) -> Unavailable:
        return Unavailable(self.wording.unusable.format(reason=reason))
