"""`mem import` of a notes file through the real command line: the heading a bullet sits
under decides the kind proposed, which decides what the policy shares."""

from pathlib import Path

from tests.cli._output import json_of
from tests.conftest import MemRunner

CLAUDE_MD = """\
# Billing service

## Gotchas
- The staging database is shared with QA.
- Always use `--no-cache` when building the worker image.
- Webhook retries:
  - the first retry waits 30 seconds
  - payloads older than a day are dropped

### Known pitfalls
- Stripe test clocks do not advance on their own.

## ⚠️ Caveats:
- Invoices are rounded per line, not per total.

## Known issues
- The export times out above 10,000 invoices.

## Decisions
- Postgres for the ledger.

## ADR
- Webhooks are signed with HMAC-SHA256.

## Conventions
- Money is stored in cents.
- Gotcha: the linter does not see generated files.

## Code style
- Line length is 100.

## Rules
- Migrations go in a pull request of their own.

## Commands
- `make test` runs the unit tests and the linters.

## Scripts
- scripts/seed.sh fills the dev database.

## Incidents
- In March the webhook queue filled up and invoices went out a day late.

## Postmortems
- The ledger outage came from a missing index.

## Preferences
- Always answer in British English.

## Architecture
- The ledger is append-only because auditors ask for it.
- Never call the payment provider from a request handler.
- Reset the sandbox with:
  ```sh
  make sandbox-reset
  ```
"""

EXPECTED = [
    ("gotcha", "The staging database is shared with QA."),
    ("gotcha", "Always use `--no-cache` when building the worker image."),
    ("gotcha", "the first retry waits 30 seconds"),
    ("gotcha", "payloads older than a day are dropped"),
    ("gotcha", "Stripe test clocks do not advance on their own."),
    ("gotcha", "Invoices are rounded per line, not per total."),
    ("gotcha", "The export times out above 10,000 invoices."),
    ("decision", "Postgres for the ledger."),
    ("decision", "Webhooks are signed with HMAC-SHA256."),
    ("convention", "Money is stored in cents."),
    ("gotcha", "Gotcha: the linter does not see generated files."),
    ("convention", "Line length is 100."),
    ("convention", "Migrations go in a pull request of their own."),
    ("command", "`make test` runs the unit tests and the linters."),
    ("command", "scripts/seed.sh fills the dev database."),
    ("incident", "In March the webhook queue filled up and invoices went out a day late."),
    ("incident", "The ledger outage came from a missing index."),
    ("preference", "Always answer in British English."),
    ("decision", "The ledger is append-only because auditors ask for it."),
    ("convention", "Never call the payment provider from a request handler."),
    ("command", "Reset the sandbox with:\n```sh\nmake sandbox-reset\n```"),
]


def test_a_heading_decides_the_kind_of_the_bullets_under_it(mem: MemRunner, tmp_path: Path) -> None:
    notes = tmp_path / "CLAUDE.md"
    notes.write_text(CLAUDE_MD, encoding="utf-8")

    done = json_of(mem("import", str(notes), "--json"))

    (file,) = done["files"]
    assert [(c["kind"], c["text"]) for c in file["proposed"]] == EXPECTED
    pending = json_of(mem("inbox", "--json"))["candidates"]
    assert sorted((c["kind"], c["text"]) for c in pending) == sorted(EXPECTED)
    gotchas = {c["text"]: c["context"] for c in pending if c["kind"] == "gotcha"}
    assert gotchas["the first retry waits 30 seconds"] == (
        "Billing service > Gotchas > Webhook retries"
    )
    assert gotchas["Stripe test clocks do not advance on their own."] == (
        "Billing service > Gotchas > Known pitfalls"
    )
