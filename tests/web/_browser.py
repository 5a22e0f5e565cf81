"""A real browser for the page's tests: Debian's chromium, driven by Playwright.

The browser is ``$MEMMESH_CHROMIUM`` (.ci/run sets it after installing Debian's chromium), else
``chromium`` on the PATH. Without either the browser tests are skipped, except where
``MEMMESH_CHROMIUM`` is set: there a missing browser fails them, so CI cannot pass without
having run them. Playwright downloads nothing: it is given the browser's path.

The browser resolves ``evil.example`` (and its subdomains) to 127.0.0.1, as a DNS-rebinding
attacker would make it, so that a test can load the page under a name that is not loopback.
"""

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Browser, BrowserContext, Dialog, Page, sync_playwright

REBOUND = "evil.example"


def chromium() -> str:
    """The chromium binary to drive, or a skip (a failure where CI asked for one)."""
    asked = os.environ.get("MEMMESH_CHROMIUM", "")
    found = shutil.which(asked or "chromium")
    if found:
        return found
    if asked:
        pytest.fail(f"MEMMESH_CHROMIUM names {asked}, which is not there: .ci/run installs it")
    pytest.skip("no chromium on this machine (apt-get install -y chromium)")


@contextmanager
def browser() -> Iterator[Browser]:
    """A headless chromium for the ``with``."""
    path = chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=path,
            args=[f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1, MAP *.{REBOUND} 127.0.0.1"],
        )
        try:
            yield launched
        finally:
            launched.close()


class Watched:
    """A browser tab that notes every dialog a script opens (and dismisses it) and every
    error a script throws, so that a test can assert that nothing ran."""

    def __init__(self, context: BrowserContext) -> None:
        self.context = context
        self.tab: Page = context.new_page()
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.tab.on("dialog", self._dialog)
        self.tab.on("pageerror", lambda error: self.errors.append(str(error)))

    def _dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def accept_confirms(self) -> None:
        """From now on, say yes to the page's own confirm() questions (a retraction asks)."""
        self.tab.remove_listener("dialog", self._dialog)
        self.tab.on("dialog", lambda dialog: dialog.accept())
