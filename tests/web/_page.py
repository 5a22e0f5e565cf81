"""The page served for real, for the web tests: the app under uvicorn on 127.0.0.1, and a
client signed in as the member's browser is (the cookie, this page's Origin, the CSRF token in
every form)."""

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from memmesh.home import open_store
from memmesh.local.store import Store
from memmesh.web.app import create_app
from memmesh.web.security import COOKIE, csrf_token, new_token
from tests._servers import running


class Page:
    """The page at ``url`` for ``store``'s member; :meth:`get` and :meth:`post` as the
    member's own browser sends them."""

    def __init__(self, url: str, store: Store, token: str) -> None:
        self.url = url
        self.store = store
        self.token = token
        self.csrf = csrf_token(token)
        self.client = httpx.Client(
            base_url=url, cookies={COOKIE: token}, follow_redirects=False, timeout=30.0
        )

    def get(self, path: str, **params: Any) -> httpx.Response:
        """GET ``path`` signed in."""
        return self.client.get(path, params=params)

    def post(
        self,
        path: str,
        data: dict[str, Any] | None = None,
        *,
        csrf: bool = True,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        """POST the form ``data`` to ``path`` from the page itself (its Origin, unless
        ``headers`` says another, and, unless not ``csrf``, its CSRF token)."""
        form = {**(data or {}), **({"csrf": self.csrf} if csrf else {})}
        sent = {"origin": self.url, **(headers or {})}
        return self.client.post(path, data=form, headers=sent)

    def follow(self, response: httpx.Response) -> httpx.Response:
        """The page a change's answer (303) leads to."""
        assert response.status_code == 303, response.text
        return self.client.get(response.headers["location"])


@contextmanager
def serving(home: Path, store: Store | None = None) -> Iterator[Page]:
    """The page for ``home`` served on a free port while the ``with`` runs (on ``store``, or
    on the home's store opened as `mem ui` opens it)."""
    token = new_token()
    with contextlib.ExitStack() as held:
        if store is None:
            store = held.enter_context(open_store(home, serving=True))
        url = held.enter_context(running(create_app(store, token=token)))
        served = Page(url, store, token)
        held.callback(served.client.close)
        yield served
