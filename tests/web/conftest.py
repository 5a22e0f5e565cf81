"""Fixtures of the web tests: the page served for real on loopback."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from tests.web._browser import Watched, browser
from tests.web._page import Page, serving


@pytest.fixture
def page(home: Path) -> Iterator[Page]:
    """The page for a fresh home, signed in."""
    with serving(home) as served:
        yield served


@pytest.fixture(scope="module")
def chromium_browser() -> Iterator[Browser]:
    """One headless chromium for a module's browser tests."""
    with browser() as launched:
        yield launched


@pytest.fixture
def tab(chromium_browser: Browser) -> Iterator[Watched]:
    """A fresh browser profile (no cookies) with one watched tab."""
    context = chromium_browser.new_context()
    try:
        yield Watched(context)
    finally:
        context.close()
