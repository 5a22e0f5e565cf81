"""Notes files cut into inbox candidates: exactly the bullets, short paragraphs and code blocks
of a CLAUDE.md, an AGENTS.md and a .cursorrules, each with its heading path, line and guessed
kind (the heading it is filed under first); and files that cannot be read, each named while
the others still go in."""

from pathlib import Path

import pytest

from memmesh.agents.notes import Report, filed_as, propose_notes
from memmesh.local import inbox
from memmesh.local.store import Store

NOTES = Path(__file__).parent / "notes"


def _proposed(store: Store, name: str) -> list[tuple[int | None, str, str, str]]:
    report = propose_notes(store, NOTES / name, "billing")
    assert report.error is None
    return [(c.source_line, c.kind, c.context, c.text) for c in report.proposed]


def test_a_claude_md_proposes_each_bullet_paragraph_and_code_block_with_its_headings(
    store: Store,
) -> None:
    staging = "Billing service > Deploys > Staging"
    assert _proposed(store, "CLAUDE.md") == [
        (7, "fact", "Billing service", "The billing service owns invoices and webhooks."),
        (12, "convention", staging, "Never deploy to staging on Fridays."),
        (13, "decision", staging, "We chose blue-green deploys because rollbacks take seconds."),
        (15, "fact", staging + " > Release steps", "tag the release"),
        (16, "fact", staging + " > Release steps", "wait for CI"),
        (17, "command", staging, "Build the image:\n```sh\ndocker build -t billing .\n```"),
        (24, "command", "Billing service > Commands", "```bash\nmake test\n```"),
    ]


def test_what_a_notes_file_leaves_out_is_counted_with_its_reason(store: Store) -> None:
    report = propose_notes(store, NOTES / "CLAUDE.md", "")
    assert [(s.line, s.reason) for s in report.skipped] == [
        (14, "introduces the bullets under it"),
        (28, "a table"),
    ]
    assert all(c.project == "" for c in report.proposed)


def test_an_agents_md_cuts_a_long_paragraph_into_sentences_and_leaves_out_a_long_one(
    store: Store,
) -> None:
    style = "Agent guide > Style"
    assert _proposed(store, "AGENTS.md") == [
        (3, "fact", "Agent guide", "Run `pytest -q` before every commit."),
        (4, "gotcha", "Agent guide", "Beware: the fixtures share one database. Reset it with "
         "the reset script."),
        (8, "convention", style, "Do not add dependencies without asking."),
        (9, "convention", style, "Line length is 100."),
        (11, "convention", style, "This paragraph is far too long to be one memory, so it is "
         "cut into its sentences."),
        (11, "convention", style, "The first sentence says what it is about and stays short "
         "enough."),
        (11, "convention", style, "The third sentence is short again."),
    ]  # fmt: skip
    report = propose_notes(store, NOTES / "AGENTS.md", "other")
    assert [(s.line, s.reason) for s in report.skipped] == [
        (11, "a sentence longer than 400 characters")
    ]


def test_a_plain_text_rules_file_proposes_each_line(store: Store) -> None:
    assert _proposed(store, "cursorrules") == [
        (1, "fact", "", "You are an expert in TypeScript and React."),
        (2, "convention", "", "Always use functional components."),
        (3, "fact", "", "Prefer named exports over default exports."),
        (5, "fact", "", "Run `npm run lint` before pushing"),
    ]


def test_a_notes_file_proposed_again_adds_nothing_and_says_it_is_pending(store: Store) -> None:
    first = propose_notes(store, NOTES / "cursorrules", "billing")
    inbox.reject(store, first.proposed[0].id)

    again = propose_notes(store, NOTES / "cursorrules", "billing")

    assert (again.proposed, again.already_pending) == ((), 3)
    assert [(s.line, s.reason) for s in again.skipped] == [(1, "rejected before")]
    assert len(inbox.pending(store)) == 3


def test_a_secret_in_a_notes_file_is_redacted_before_it_is_stored_in_the_inbox(
    store: Store, tmp_path: Path
) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    notes = tmp_path / "notes.md"
    notes.write_text(f"# CI\n- The CI token is {token} for now\n", encoding="utf-8")

    report = propose_notes(store, notes, "")

    assert report.redacted == ("github-token",)
    assert [c.text for c in inbox.pending(store)] == [
        "The CI token is [redacted: github-token] for now"
    ]
    assert token.encode() not in store.path.read_bytes()


def test_code_fences_front_matter_and_comments_are_never_cut_into_lines(
    store: Store, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text(
        "---\ntitle: x\n---\n<!--\n- not a bullet\n-->\nTo reset the database:\n\n"
        "```\n- also not a bullet\nmake reset\n```\n# Heading alone\n",
        encoding="utf-8",
    )
    assert _texts(propose_notes(store, notes, "")) == [
        "To reset the database:\n```\n- also not a bullet\nmake reset\n```"
    ]


def _texts(report: Report) -> list[str]:
    return [c.text for c in report.proposed]


def test_files_that_cannot_be_read_are_each_named_and_add_nothing(
    store: Store, tmp_path: Path
) -> None:
    binary, latin, unclosed = tmp_path / "a.md", tmp_path / "b.md", tmp_path / "c.md"
    binary.write_bytes(b"# x\n\x00\x01")
    latin.write_bytes(b"caf\xe9 notes\n")
    unclosed.write_text("- a bullet\n\n```\nmake\n", encoding="utf-8")
    errors = [
        propose_notes(store, path, "").error
        for path in (binary, latin, unclosed, tmp_path / "missing.md", tmp_path)
    ]
    assert errors == [
        f"{binary}: a binary file, not notes; nothing of it was added to the inbox",
        f"{latin}: not UTF-8 text (byte 4); nothing of it was added to the inbox",
        f"{unclosed}: malformed: line 3 opens a code block that never ends; nothing of it "
        "was added to the inbox",
        f"{tmp_path / 'missing.md'}: No such file or directory; nothing of it was added to the "
        "inbox",
        f"{tmp_path}: a folder, not a notes file; nothing of it was added to the inbox",
    ]
    assert inbox.pending(store) == []


def _kinds(store: Store, tmp_path: Path, text: str) -> list[tuple[str, str]]:
    notes = tmp_path / "CLAUDE.md"
    notes.write_text(text, encoding="utf-8")
    report = propose_notes(store, notes, "")
    assert report.error is None
    return [(c.kind, c.text) for c in report.proposed]


def test_bullets_nested_under_a_gotchas_heading_are_all_gotchas(
    store: Store, tmp_path: Path
) -> None:
    notes = (
        "## Gotchas\n- Webhook retries:\n  - the first waits 30 seconds\n"
        "    - then it doubles\n- Always use `--no-cache` for the worker image.\n"
        "  - `make worker` does it for you\n"
    )
    assert _kinds(store, tmp_path, notes) == [
        ("gotcha", "the first waits 30 seconds"),
        ("gotcha", "then it doubles"),
        ("gotcha", "Always use `--no-cache` for the worker image."),
        ("gotcha", "`make worker` does it for you"),
    ]


@pytest.mark.parametrize(
    "heading",
    [
        "### Known pitfalls",
        "## ⚠️ Gotchas",
        "## Caveats:",
        "## 🐛 Known issues:",
        "## **Pitfalls**",
        "Gotchas\n=======",
        "## Deploys\n### Gotchas\n#### Staging",
        "## Conventions\n### Known pitfalls",
    ],
)
def test_a_heading_naming_gotchas_in_any_dress_files_a_rule_under_it_as_a_gotcha(
    store: Store, tmp_path: Path, heading: str
) -> None:
    notes = f"{heading}\n\n- Always use UTC in the reports.\n- The cache is per region.\n"
    assert _kinds(store, tmp_path, notes) == [
        ("gotcha", "Always use UTC in the reports."),
        ("gotcha", "The cache is per region."),
    ]


@pytest.mark.parametrize(
    ("heading", "kind"),
    [
        ("Decisions", "decision"),
        ("Architecture decision records (ADR)", "decision"),
        ("Conventions", "convention"),
        ("Code style", "convention"),
        ("Rules", "convention"),
        ("Useful commands", "command"),
        ("Scripts", "command"),
        ("Incidents", "incident"),
        ("Post-mortems", "incident"),
        ("Postmortems", "incident"),
        ("Preferences", "preference"),
    ],
)
def test_each_kind_a_heading_names_is_the_kind_of_the_bullets_under_it(
    store: Store, tmp_path: Path, heading: str, kind: str
) -> None:
    notes = f"# Billing\n## {heading}\n- Always use UTC in the reports.\n"
    assert _kinds(store, tmp_path, notes) == [(kind, "Always use UTC in the reports.")]


def test_a_piece_s_own_label_or_bare_code_wins_and_a_heading_ends_with_its_section(
    store: Store, tmp_path: Path
) -> None:
    notes = (
        "## Conventions\n```sh\nmake lint\n```\n- Gotcha: the linter skips generated files.\n"
        "- **Decision:** money is stored in cents.\n\n"
        "## Commands and conventions\n- We chose uv because pip is slow.\n"
        "## Architecture\n- The ledger is append-only.\n- Never call the provider inline.\n"
    )
    assert _kinds(store, tmp_path, notes) == [
        ("command", "```sh\nmake lint\n```"),
        ("gotcha", "Gotcha: the linter skips generated files."),
        ("decision", "**Decision:** money is stored in cents."),
        ("decision", "We chose uv because pip is slow."),
        ("fact", "The ledger is append-only."),
        ("convention", "Never call the provider inline."),
    ]


@pytest.mark.parametrize(
    "heading", ["Deploys", "Scriptorium", "Rulesets", "Styleguide notes", "Lifestyle"]
)
def test_a_heading_that_names_no_kind_as_a_word_files_nothing(heading: str) -> None:
    assert filed_as("The cache is per region.", ("Billing", heading)) is None
