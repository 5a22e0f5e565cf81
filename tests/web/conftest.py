"""Fixtures of the web tests: the page served for real on loopback."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.web._page import Page, serving


@pytest.fixture
def page(home: Path) -> Iterator[Page]:
    """The page for a fresh home, signed in."""
    with serving(home) as served:
        yield served
