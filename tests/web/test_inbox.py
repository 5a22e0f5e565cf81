"""The inbox section: candidates shown with where they came from, and accepted, edited then
accepted, or rejected from the page, one or many, exactly as `mem inbox` does it; a post
without the page's token, or naming a candidate that is not there, changes nothing."""

import json
import re
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from memmesh.local import inbox
from memmesh.local.inbox import Candidate, Proposal
from memmesh.local.store import Store
from memmesh.policy.redaction import redact_text
from memmesh.web.security import COOKIE
from tests.conftest import MemRunner
from tests.web._browser import Watched
from tests.web._page import Page

HOSTILE = '<script>alert("inbox")</script> <img src=x onerror=alert(1)>'


def _propose(store: Store, *texts: str, **fields: object) -> list[Candidate]:
    """Candidates put in the inbox as the transcript and notes readers put them."""
    proposals = [Proposal(text, **fields) for text in texts]  # type: ignore[arg-type]
    return [p.candidate for p in inbox.propose(store, proposals, redact=redact_text)]


def _texts(store: Store) -> set[str]:
    return {item.text for item in store.items()}


def _without_ids(said: str) -> str:
    """What a message says with every id in it replaced by ``ID``."""
    return re.sub(r"\b[0-9A-Z]{10,26}\b", "ID", said)


def _notice(page: Page, answer: object) -> str:
    """The notice the page shows after a change (which must have been a 303)."""
    shown = page.follow(answer)  # type: ignore[arg-type]
    match = re.search(r'<p class="notice" role="status">([^<]*)</p>', shown.text)
    assert match, shown.text
    return match.group(1)


def test_an_empty_inbox_says_how_candidates_arrive(page: Page) -> None:
    html = page.get("/inbox").text

    assert "Nothing waiting for review" in html
    assert "mem ingest" in html
    assert "mem hook install" in html
    assert "mem inbox add-notes" in html
    assert 'data-select-all="id"' not in html


def test_each_candidate_shows_where_it_came_from_and_what_it_proposes(page: Page) -> None:
    transcript = "/home/ana/.claude/projects/-home-ana-shop/4f1c2b.jsonl"
    (from_session,) = _propose(
        page.store, "Always run migrations before deploying", kind="convention",
        project="shop", source_path=transcript, source_line=42,
        session_id="4f1c2b9e-77aa-4f0e-9d3c-1b2a3c4d5e6f", context="fix the deploy script",
    )  # fmt: skip
    (from_notes,) = _propose(
        page.store, "Staging resets every night", kind="gotcha",
        source_path="/work/notes.md", source_line=7, context="Environments > Staging",
    )  # fmt: skip

    html = page.get("/inbox").text

    session_card = html.split(f'id="c-{from_session.id}"')[1].split("</article>")[0]
    assert "Claude Code transcript" in session_card
    assert "4f1c2b.jsonl:42" in session_card
    assert "fix the deploy script" in session_card
    assert "session <span" in session_card
    assert "4f1c2b9e-77a" in session_card
    assert ">convention<" in session_card
    assert ">shop<" in session_card
    assert "Always run migrations before deploying" in session_card
    assert inbox.short_ids(page.store, [from_session.id])[from_session.id] in session_card
    notes_card = html.split(f'id="c-{from_notes.id}"')[1].split("</article>")[0]
    assert "notes file" in notes_card
    assert "notes.md:7" in notes_card
    assert "Environments &gt; Staging" in notes_card
    assert "default project" in notes_card
    assert html.index(from_notes.id) < html.index(from_session.id)  # newest first
    assert 'data-select-all="id"' in html
    assert html.count('type="checkbox" name="id"') == 2
    assert 'data-pending="2"' in html


def test_candidates_ingested_by_the_command_line_show_up(page: Page, mem: MemRunner) -> None:
    notes = Path(mem.cwd) / "CLAUDE.md"
    notes.write_text("# Gotchas\n\n- The cache key includes the locale\n", encoding="utf-8")
    assert mem("inbox", "add-notes", str(notes)).returncode == 0

    html = page.get("/inbox").text

    assert "The cache key includes the locale" in html
    assert "CLAUDE.md:3" in html
    assert ">gotcha<" in html


def test_accepting_one_candidate_makes_it_an_item_in_its_words(page: Page, mem: MemRunner) -> None:
    by_page, by_command = _propose(
        page.store, "Deploys run from main", "Staging resets every night", kind="decision",
        project="shop",
    )  # fmt: skip

    said = _notice(page, page.post("/inbox/accept", {"one": by_page.id, "id": by_command.id}))

    (item,) = page.store.items()
    assert (item.text, item.kind, item.project) == ("Deploys run from main", "decision", "shop")
    assert said == f"created item {page.store.short_ids([item.id])[item.id]}"
    assert inbox.find(page.store, by_page.id).status == "accepted"
    assert inbox.find(page.store, by_command.id).status == "pending"  # ticked, not pressed
    cli = mem("inbox", "accept", by_command.id)
    assert re.sub(r"[0-9A-Z]{10,}", "ID", said) == re.sub(
        r"[0-9A-Z]{10,}", "ID", cli.stdout.strip()
    )


def test_accepting_a_fact_the_store_knows_reinforces_it(page: Page) -> None:
    known, _ = page.store.remember("Deploys run from main", project="shop")
    (candidate,) = _propose(page.store, "Deploys run from main", kind="fact", project="shop")

    said = _notice(page, page.post("/inbox/accept", {"one": candidate.id}))

    shown = page.store.short_ids([known.id])[known.id]
    assert said == f"reinforced an existing item {shown} (1x)"
    assert page.store.get(known.id).reinforcements == 1
    assert len(page.store.items()) == 1


def test_accepting_several_ticked_candidates_accepts_each(page: Page) -> None:
    first, second, third = _propose(page.store, "One fact", "Two facts", "Three facts", kind="fact")

    said = _notice(page, page.post("/inbox/accept", {"id": [first.id, third.id]}))

    assert said == "created 2 items, reinforced 0"
    assert _texts(page.store) == {"One fact", "Three facts"}
    assert [c.id for c in inbox.pending(page.store)] == [second.id]


def test_every_pending_candidate_can_be_accepted_at_once(page: Page) -> None:
    _propose(page.store, "One fact", "Two facts", kind="fact")
    page.store.remember("Two facts")

    said = _notice(page, page.post("/inbox/accept", {"all": "pending"}))

    assert said == "created 1 item, reinforced 1"
    assert inbox.pending(page.store) == []


def test_accepting_every_candidate_says_what_mem_inbox_accept_all_says(
    page: Page, mem: MemRunner
) -> None:
    page.store.remember("Two facts")
    _propose(page.store, "One fact", "Two facts", kind="fact")
    said = _notice(page, page.post("/inbox/accept", {"all": "pending"}))
    page.store.remember("Four facts")
    _propose(page.store, "Three facts", "Four facts", kind="fact")

    cli = mem("inbox", "accept", "--all")

    assert cli.returncode == 0, cli.stderr
    assert said == cli.stdout.strip().splitlines()[-1] == "created 1 item, reinforced 1"


def test_an_edit_names_the_secrets_it_redacted_as_mem_inbox_edit_does(
    page: Page, mem: MemRunner
) -> None:
    by_page, by_command = _propose(page.store, "Use the token", "Use the key", kind="fact")
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    edit = {"text": f"Use the token {secret}", "kind": "fact", "project": "", "then": "save"}

    said = _notice(page, page.post(f"/inbox/{by_page.id}/edit", edit))
    cli = mem("--json", "inbox", "edit", by_command.id, f"Use the key {secret}")

    assert cli.returncode == 0, cli.stderr
    warned = json.loads(cli.stderr.strip().splitlines()[0])
    assert warned["code"] == "secret_redacted"
    assert warned["warning"].startswith("redacted a secret (")
    assert said.endswith(f"; {warned['warning']}")


def test_rejecting_one_or_many_leaves_no_item(page: Page, mem: MemRunner) -> None:
    one, two, three, four = _propose(page.store, "A", "B", "C", "D", kind="fact")

    said_one = _notice(page, page.post("/inbox/reject", {"one": one.id}))
    said_many = _notice(page, page.post("/inbox/reject", {"id": [two.id, three.id]}))

    assert said_one == f"rejected {inbox.short_ids(page.store, [one.id])[one.id]}"
    assert said_many == "rejected 2 candidates"
    assert page.store.items() == []
    assert [c.id for c in inbox.pending(page.store)] == [four.id]
    cli = mem("inbox", "reject", four.id)
    assert re.sub(r"[0-9A-Z]{10,}", "ID", said_one) == re.sub(
        r"[0-9A-Z]{10,}", "ID", cli.stdout.strip()
    )
    assert _notice(page, page.post("/inbox/reject", {"all": "pending"})) == "rejected 0 candidates"


def test_a_candidate_can_be_edited_then_accepted_with_its_kind_project_and_tags(
    page: Page,
) -> None:
    (candidate,) = _propose(page.store, "deploys from mian", kind="fact")
    form = page.get(f"/inbox/{candidate.id}").text
    assert "deploys from mian</textarea>" in form
    assert '<option value="fact" selected>' in form

    said = _notice(page, page.post(f"/inbox/{candidate.id}/edit", {
        "text": "Deploys run from main", "kind": "decision", "project": "shop",
        "tags": "CI, deploy ci", "then": "accept",
    }))  # fmt: skip

    (item,) = page.store.items()
    assert (item.text, item.kind, item.project, item.tags) == (
        "Deploys run from main",
        "decision",
        "shop",
        ("ci", "deploy"),
    )
    shown = inbox.short_ids(page.store, [candidate.id])[candidate.id]
    assert said == (
        f"edited {shown}; created item {page.store.short_ids([item.id])[item.id]}; "
        "tagged ci, deploy"
    )
    assert inbox.find(page.store, candidate.id).item_id == item.id


def test_saving_an_edit_keeps_the_candidate_waiting_with_its_secret_redacted(page: Page) -> None:
    (candidate,) = _propose(page.store, "Use the deploy token", kind="fact")
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"

    said = _notice(page, page.post(f"/inbox/{candidate.id}/edit", {
        "text": f"Use the deploy token {secret}", "kind": "fact", "project": "global",
        "then": "save",
    }))  # fmt: skip

    edited = inbox.find(page.store, candidate.id)
    assert edited.status == "pending"
    assert secret not in edited.text
    assert "[redacted" in edited.text
    assert said.startswith(f"edited {inbox.short_ids(page.store, [candidate.id])[candidate.id]}")
    assert "redacted a secret (" in said
    assert page.store.items() == []


def test_a_tag_holding_a_secret_is_left_out_as_mem_edit_leaves_it_out(page: Page) -> None:
    (candidate,) = _propose(page.store, "Rotate the key monthly", kind="convention")
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"

    page.follow(page.post(f"/inbox/{candidate.id}/edit", {
        "text": "Rotate the key monthly", "kind": "convention", "project": "global",
        "tags": f"security {secret}", "then": "accept",
    }))  # fmt: skip

    (item,) = page.store.items()
    assert item.tags == ("security",)


@pytest.mark.parametrize(
    ("path", "form"),
    [
        ("/inbox/accept", {"id": "{id}"}),
        ("/inbox/reject", {"one": "{id}"}),
        ("/inbox/accept", {"all": "pending"}),
        ("/inbox/{id}/edit", {"text": "Changed", "kind": "fact", "project": "p", "then": "accept"}),
    ],
)
def test_a_post_without_the_page_s_token_is_refused_and_changes_nothing(
    page: Page, path: str, form: dict[str, str]
) -> None:
    (candidate,) = _propose(page.store, "Deploys run from main", kind="fact")
    data = {name: value.replace("{id}", candidate.id) for name, value in form.items()}

    answer = page.post(path.replace("{id}", candidate.id), data, csrf=False)
    forged = page.post(path.replace("{id}", candidate.id), {**data, "csrf": "0" * 64}, csrf=False)

    assert answer.status_code == forged.status_code == 403
    assert "CSRF" in answer.text
    assert inbox.pending(page.store) == [candidate]
    assert page.store.items() == []


@pytest.mark.parametrize(
    ("given", "status", "says"),
    [
        ("01ZZZZZZZZZZZZZZZZZZZZZZZZ", 404, "no inbox candidate"),
        ("nope!", 404, "no inbox candidate"),
        ("01", 400, "too short"),
        ("X" * 65, 400, "is 65 characters long"),
    ],
)
def test_a_candidate_that_is_not_there_is_a_clear_page_and_changes_nothing(
    page: Page, given: str, status: int, says: str
) -> None:
    (candidate,) = _propose(page.store, "Deploys run from main", kind="fact")

    for answer in (
        page.post("/inbox/accept", {"id": [candidate.id, given]}),
        page.post("/inbox/reject", {"one": given}),
        page.post(f"/inbox/{given}/edit", {"text": "t", "kind": "fact", "then": "accept"}),
        page.get(f"/inbox/{given}"),
    ):
        assert answer.status_code == status, answer.text
        assert says in answer.text
    assert inbox.pending(page.store) == [candidate]
    assert page.store.items() == []


def test_a_decided_candidate_cannot_be_decided_again(page: Page) -> None:
    first, second = _propose(page.store, "One fact", "Two facts", kind="fact")
    page.follow(page.post("/inbox/reject", {"one": first.id}))

    answer = page.post("/inbox/accept", {"id": [second.id, first.id]})

    assert answer.status_code == 409
    assert "was rejected already" in answer.text
    assert inbox.find(page.store, second.id).status == "pending"
    decided = page.get(f"/inbox/{first.id}").text
    assert "Rejected" in decided
    assert "<textarea" not in decided


@pytest.mark.parametrize(
    "form",
    [
        {},
        {"id": ""},
        {"all": "everything"},
    ],
)
def test_a_form_naming_no_candidate_is_refused(page: Page, form: dict[str, str]) -> None:
    _propose(page.store, "Deploys run from main", kind="fact")

    for path in ("/inbox/accept", "/inbox/reject"):
        answer = page.post(path, form)
        assert answer.status_code == 400
    assert len(inbox.pending(page.store)) == 1


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"text": " "}, "text: is required"),
        ({"kind": "rumour"}, "kind: must be one of"),
        ({"project": "no spaces allowed"}, "is not a valid name"),
        ({"tags": "ok, not/ok"}, "is not a valid name"),
        ({"then": "publish"}, "then: must be one of"),
    ],
)
def test_a_bad_edit_is_refused_before_anything_changes(
    page: Page, change: dict[str, str], says: str
) -> None:
    (candidate,) = _propose(page.store, "Deploys run from main", kind="fact")
    form = {"text": "Deploys run from the release branch", "kind": "decision",
            "project": "shop", "tags": "", "then": "accept", **change}  # fmt: skip

    answer = page.post(f"/inbox/{candidate.id}/edit", form)

    assert answer.status_code == 400
    assert says in answer.text
    assert inbox.find(page.store, candidate.id) == candidate
    assert page.store.items() == []


def test_what_a_candidate_says_is_shown_as_text_never_as_markup(page: Page) -> None:
    (candidate,) = _propose(
        page.store, HOSTILE, kind="fact", source_path=f"/tmp/{HOSTILE}.md", source_line=1,
        session_id=HOSTILE, context=HOSTILE,
    )  # fmt: skip

    for html in (page.get("/inbox").text, page.get(f"/inbox/{candidate.id}").text):
        assert "<script>alert" not in html
        assert "<img src=x" not in html
        assert "&lt;script&gt;alert(&#34;inbox&#34;)&lt;/script&gt;" in html


def test_in_a_browser_a_card_s_button_and_select_all_decide_the_candidates_they_name(
    page: Page, tab: Watched
) -> None:
    _, second, _ = _propose(page.store, "One fact", "Two facts", "Three facts", kind="fact")
    tab.context.add_cookies([{"name": COOKIE, "value": page.token, "url": page.url}])
    tab.tab.goto(page.url + "/inbox")

    with tab.tab.expect_request(lambda sent: sent.method == "POST") as rejecting:
        tab.tab.locator(f"#c-{second.id}").get_by_role("button", name="Reject").click()
    tab.tab.wait_for_load_state()
    rejected = parse_qs(rejecting.value.post_data or "")
    assert rejected["one"] == [second.id]
    assert rejected["csrf"] == [page.csrf]
    assert inbox.find(page.store, second.id).status == "rejected"

    tab.tab.goto(page.url + "/inbox")
    tab.tab.locator("input[data-select-all]").check()
    assert tab.tab.locator("input.pick:checked").count() == 2
    tab.tab.get_by_role("button", name="Accept selected").click()
    tab.tab.wait_for_load_state()
    assert "created 2 items, reinforced 0" in tab.tab.content()
    assert sorted(item.text for item in page.store.items()) == ["One fact", "Three facts"]
    assert inbox.pending(page.store) == []
    assert tab.errors == []
