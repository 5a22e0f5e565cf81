"""Take the screenshots of the local page that docs/ui.md and the README show.

Run from the repository root (Debian's chromium must be installed: apt-get install chromium)::

    .venv/bin/python scripts/screenshots.py            # writes docs/ui/*.png

It builds a small team on this machine's loopback as the README's one-machine trial does (a
coordinator serving https, Alice and Bob as homes of their own, through the real `mem`
commands), gives Alice a memory worth looking at (decisions, gotchas and commands in three
projects, some published, outcomes, recalls, candidates in her inbox), starts `mem ui` for
her, and photographs each page in a headless chromium driven by Playwright. Everything lives
in a temporary folder, removed at the end with every process.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

from memmesh._processes import stop_process
from memmesh.net.server import free_port

OUT = Path(__file__).resolve().parent.parent / "docs" / "ui"
WIDTH, HEIGHT = 1280, 860

ALICE = [
    ("decision", "billing", "Store money as integer cents; never floats", "money"),
    ("decision", "billing", "Invoices are immutable once sent: corrections are credit notes", ""),
    ("gotcha", "billing", "Stripe webhooks can arrive twice: dedupe on the event id", "stripe"),
    ("command", "billing", "make seed-invoices loads 200 sample invoices into the dev DB", ""),
    ("gotcha", "web", "The staging database is reset every Sunday night", "staging"),
    ("convention", "web", "React components live in src/components, one per file", "react"),
    ("gotcha", "web", "Vite dev server needs --host to be reachable from the VM", "vite"),
    ("command", "web", "npm run e2e -- --headed runs the Playwright suite with a window", ""),
    ("decision", "infra", "Use Postgres advisory locks instead of Redis locks", "locks"),
    ("incident", "infra", "2026-11-02 outage: the connection pool was capped at 20", "postgres"),
    ("gotcha", "infra", "CI caches node_modules; bust it with CACHE_VERSION", "ci"),
    ("preference", "global", "Prefer small pull requests, one concern each", ""),
    ("fact", "global", "The on-call rotation changes on Mondays at 10:00", "oncall"),
    ("command", "infra", "kubectl rollout restart deploy/api restarts the API pods", "k8s"),
]
BOB = [
    ("gotcha", "global", "The VPN drops idle SSH sessions after 15 minutes", "vpn"),
    ("decision", "global", "Feature flags are removed within 30 days of full rollout", "flags"),
]


def mem(home: Path, *words: str, stdin: str | None = None) -> str:
    """Run `mem --home HOME WORDS`; its stdout."""
    command = [sys.executable, "-m", "memmesh", "--home", str(home), *words]
    done = subprocess.run(
        command, input=stdin, capture_output=True, text=True, check=False, timeout=120
    )
    if done.returncode != 0:
        raise SystemExit(f"mem {' '.join(words)}: {done.stderr.strip()}")
    return done.stdout


@contextmanager
def daemon(command: list[str], ready: str, timeout: float = 60.0) -> Iterator[str]:
    """Run ``command`` until the ``with`` ends; yields the first line matching ``ready``."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    try:
        deadline = time.monotonic() + timeout
        for line in process.stdout:
            if re.search(ready, line):
                yield line.strip()
                return
            if time.monotonic() > deadline:
                break
        raise SystemExit(f"{command[3:5]} did not start")
    finally:
        stop_process(process)
        process.stdout.close()


def build_team(root: Path, stack: ExitStack) -> Path:
    """The one-machine trial's team, with memories; Alice's home."""
    port = free_port()
    host = root / "team-host"
    serve = [
        *(sys.executable, "-m", "memmesh", "coordinator", "serve", "--data", str(host)),
        *("--port", str(port), "--url", f"https://127.0.0.1:{port}"),
        *("--team", "acme", "--admin-name", "alice"),
    ]
    stack.enter_context(daemon(serve, r"^memmesh coordinator on"))
    alice, bob = root / "alice", root / "bob"
    mem(alice, "team", "init", "--name", "alice", "--share", "gotcha", "--share", "decision")
    mem(alice, "team", "join", "-", stdin=(host / "admin-join-code").read_text())
    mem(bob, "team", "init", "--name", "bob", "--share", "gotcha", "--share", "decision")
    mem(bob, "team", "join", "-", stdin=mem(alice, "team", "invite", "bob"))
    ids = {}
    for kind, project, text, tag in ALICE:
        words = ["remember", text, "--kind", kind, "--project", project]
        ids[text] = mem(alice, *words, *(["--tag", tag] if tag else [])).split()[0]
    for kind, project, text, tag in BOB:
        shown = mem(bob, "remember", text, "--kind", kind, "--project", project, "--tag", tag)
        mem(bob, "team", "publish", shown.split()[0])
    for text in (ALICE[0][2], ALICE[2][2], ALICE[4][2], ALICE[8][2]):
        mem(alice, "team", "publish", ids[text])
    for home in (alice, bob):
        mem(home, "team", "sync")
    for query in ("how do we store money", "staging reset", "locks", "webhooks twice", "x"):
        mem(alice, "recall", query, "--project", "billing")
    mem(alice, "outcome", ids[ALICE[2][2]], "worked")
    mem(alice, "outcome", ids[ALICE[8][2]], "worked")
    notes = root / "NOTES.md"
    gotchas = (
        "- The test DB needs `make db-reset` after a schema change",
        "- Redis in CI listens on 6380, not 6379",
    )
    notes.write_text("# Gotchas\n\n" + "\n".join(gotchas) + "\n", encoding="utf-8")
    mem(alice, "inbox", "add-notes", str(notes))
    return alice


def photograph(page: Page, address: str) -> None:
    """Each page of the UI, into :data:`OUT`."""
    OUT.mkdir(parents=True, exist_ok=True)
    base = address.split("/?", 1)[0]
    page.goto(address)
    page.wait_for_load_state("networkidle")

    def shoot(name: str) -> None:
        page.screenshot(path=str(OUT / f"{name}.png"), full_page=False)
        print(f"docs/ui/{name}.png")

    for name, path in (
        ("memory", "/"),
        ("search", "/?q=how+do+we+store+money"),
        ("inbox", "/inbox"),
        ("team", "/team"),
        ("feed", "/team/feed"),
        ("members", "/team/members"),
        ("health", "/health"),
    ):
        page.goto(base + path)
        shoot(name)
    page.goto(base + "/")
    page.get_by_role("link", name=ALICE[2][2]).click()
    shoot("item")
    page.goto(base + "/")
    page.get_by_role("link", name=ALICE[1][2]).click()
    page.get_by_role("link", name="Publish…").click()
    shoot("publish")
    page.goto(base + "/team/ask")
    page.get_by_role("searchbox", name="question").fill("does the VPN drop ssh sessions")
    page.get_by_role("button", name="Ask").click()
    page.wait_for_load_state()
    shoot("ask")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memmesh-shots-"))
    try:
        with ExitStack() as stack:
            alice = build_team(root, stack)
            ui = [sys.executable, "-m", "memmesh", "--home", str(alice), "ui", "--no-browser"]
            line = stack.enter_context(daemon(ui, r"^memmesh ui: "))
            address = line.split(": ", 1)[1]
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=args.chromium)
                context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
                photograph(context.new_page(), address)
                browser.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.pop("MEM_HOME", None)
    raise SystemExit(main())
