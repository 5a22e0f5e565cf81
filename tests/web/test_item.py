"""An item's page: its whole text, fields, track record and history, and the changes made
from it, each as the `mem` command makes it; a post without the page's token, or with a value
the command would refuse, changes nothing."""

import re
from pathlib import Path

import pytest

from memmesh.local.items import Item
from memmesh.local.store import Store
from tests.conftest import MemRunner
from tests.team._team import NOWHERE, Team
from tests.web._page import Page, serving

HOSTILE = '<script>alert(1)</script><img src=x onerror=alert(1)><a href="javascript:alert(1)">x</a>'
FREEZE = "Deploys freeze on Fridays after 15:00; the release train leaves on Thursday"
SECRET_TAG = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
PASSWORD = "the staging admin login is password=Sup3rS3cretValue42"


def _notice(page: Page, answer: object) -> str:
    """The notice the page shows after a change (which must have been a 303)."""
    shown = page.follow(answer)  # type: ignore[arg-type]
    match = re.search(r'<p class="notice" role="status">([^<]*)</p>', shown.text)
    assert match, shown.text
    return match.group(1)


def _problem(html: str) -> str:
    """The message of an error page."""
    match = re.search(r'<p class="problem" data-code="[a-z_]+">([^<]*)</p>', html)
    assert match, html
    return match.group(1)


def _history(html: str) -> list[str]:
    """The labels of the item's timeline, newest first."""
    return re.findall(r'<strong class="what">([^<]*)</strong>', html)


def _same(store: Store, item: Item) -> Item:
    """The item as the store holds it now."""
    return store.get(item.id)


def test_the_page_shows_the_whole_text_fields_and_track_record(page: Page) -> None:
    long_text = FREEZE + "\n\nSecond paragraph: hotfixes need two approvals.\n" + "x" * 400
    item, _ = page.store.remember(long_text, kind="convention", project="shop", tags=["deploy"])
    page.store.outcome(item.id, "worked")
    page.store.outcome(item.id, "failed")

    answer = page.get(f"/items/{item.id}")

    assert answer.status_code == 200
    html = answer.text
    assert f'<pre class="item-text">{long_text}</pre>' in html
    for shown in ("convention", "#deploy", ">shop<", "tester", "active", item.id):
        assert shown in html
    assert "worked" in html
    assert "failed" in html
    assert f"{_same(page.store, item).outcome_score:+.2f}" in html
    assert "Who was served it" in html
    assert "never published: nobody was served it" in html  # one line, no team needed


def test_a_unique_prefix_opens_the_item(page: Page) -> None:
    item, _ = page.store.remember(FREEZE)
    answer = page.get(f"/items/{item.id[:12]}")
    assert answer.status_code == 200
    assert f'data-id="{item.id}"' in answer.text


def test_an_unknown_id_is_a_404_page_and_an_ambiguous_prefix_names_its_items(page: Page) -> None:
    first, _ = page.store.remember(FREEZE)
    second, _ = page.store.remember("The staging database is reset every Monday")

    missing = page.get("/items/01ZZZZZZZZZZZZZZZZZZZZZZZZ")
    assert missing.status_code == 404
    assert "no item with id" in _problem(missing.text)
    hostile = page.get("/items/%3Cscript%3Ealert(1)%3C%2Fscript%3E")
    assert hostile.status_code == 404
    assert "<script>alert(1)</script>" not in hostile.text
    ambiguous = page.get(f"/items/{first.id[:4]}")
    assert ambiguous.status_code == 400
    assert first.id[:10] in ambiguous.text
    assert second.id[:10] in ambiguous.text
    assert page.get("/items/01").status_code == 400  # too short to name anything
    for action in ("forget", "outcome", "edit", "revise", "unforget", "retract"):
        posted = page.post(f"/items/01ZZZZZZZZZZZZZZZZZZZZZZZZ/{action}", _form(action))
        assert posted.status_code in (400, 404), (action, posted.text)
        assert "Traceback" not in posted.text


def _form(action: str) -> dict[str, str]:
    """A valid form for ``action``."""
    return {
        "outcome": {"result": "worked"},
        "edit": {"kind": "gotcha", "project": "shop", "tags": "deploy ci"},
        "revise": {"text": "Deploys freeze on Fridays after 14:00"},
    }.get(action, {})


def test_editing_changes_kind_project_and_tags_in_the_store(page: Page) -> None:
    item, _ = page.store.remember(FREEZE, kind="fact", tags=["deploy", "old"])

    answer = page.post(
        f"/items/{item.id}/edit", {"kind": "convention", "project": "shop", "tags": "deploy, ci"}
    )

    notice = _notice(page, answer)
    now = _same(page.store, item)
    assert (now.kind, now.project, now.tags) == ("convention", "shop", ("deploy", "ci"))
    assert now.id == item.id
    assert now.text == item.text
    assert notice.startswith(f"edited {item.id[:10]}: kind convention (was fact)")
    assert "tags deploy, ci (was deploy, old)" in notice
    again = page.post(
        f"/items/{item.id}/edit", {"kind": "convention", "project": "shop", "tags": "deploy ci"}
    )
    assert _notice(page, again) == f"unchanged {item.id[:10]}"
    assert "edited" in _history(page.get(f"/items/{item.id}").text)


def test_a_tag_holding_a_secret_is_left_out_as_mem_edit_leaves_it(
    page: Page, mem: MemRunner
) -> None:
    mine, _ = page.store.remember(FREEZE)
    theirs, _ = page.store.remember("The staging database is reset every Monday")

    notice = _notice(
        page,
        page.post(
            f"/items/{mine.id}/edit",
            {"kind": "fact", "project": "global", "tags": f"deploy {SECRET_TAG}"},
        ),
    )
    cli = mem("edit", theirs.id, "--tag", "deploy", "--tag", SECRET_TAG)

    assert cli.returncode == 0, cli.stderr
    assert _same(page.store, mine).tags == _same(page.store, theirs).tags == ("deploy",)
    assert "left out a secret (github-token) given as a tag" in notice
    assert "left out a secret (github-token) given as a tag" in cli.stderr


def test_the_history_shows_a_revision_an_outcome_a_forget_and_a_bring_back(page: Page) -> None:
    item, _ = page.store.remember(FREEZE, kind="convention")

    assert "worked" in _notice(page, page.post(f"/items/{item.id}/outcome", {"result": "worked"}))
    assert _notice(page, page.post(f"/items/{item.id}/forget")).startswith("archived")
    assert _same(page.store, item).status == "archived"
    assert _notice(page, page.post(f"/items/{item.id}/unforget")).startswith("restored")
    assert _same(page.store, item).status == "active"
    revised = page.post(f"/items/{item.id}/revise", {"text": "Deploys freeze after 14:00"})
    new_page = page.follow(revised)

    (new_id,) = re.findall(r'<section class="card item" data-id="([0-9A-Z]{26})"', new_page.text)
    new = page.store.get(new_id)
    assert new.text == "Deploys freeze after 14:00"
    assert new.supersedes == item.id
    assert _same(page.store, item).status == "superseded"
    assert _history(new_page.text) == [
        "revised: a new version replaces it", "brought back", "forgotten (archived)",
        "outcome: worked", "remembered",
    ]  # fmt: skip
    old_page = page.get(f"/items/{item.id}").text
    assert f'href="/items/{new.id}"' in old_page  # the old version names its replacement
    assert "Versions" in old_page
    assert "Versions" in new_page.text
    assert new.worked == pytest.approx(1.0)  # the track record went with the revision


def test_a_secret_in_a_revision_is_stored_redacted_as_mem_revise_stores_it(
    page: Page, mem: MemRunner
) -> None:
    mine, _ = page.store.remember(FREEZE)
    theirs, _ = page.store.remember("The staging database is reset every Monday")

    notice = _notice(page, page.post(f"/items/{mine.id}/revise", {"text": PASSWORD}))
    cli = mem("revise", theirs.id, PASSWORD)

    assert cli.returncode == 0, cli.stderr
    revised = {i.supersedes: i for i in page.store.items() if i.supersedes}
    assert revised[mine.id].text == revised[theirs.id].text
    assert "Sup3rS3cretValue42" not in revised[mine.id].text
    assert "[redacted: " in revised[mine.id].text
    assert "redacted a secret" in notice
    assert "redacted a secret" in cli.stderr


def test_keeping_a_secret_in_a_revision_says_it_can_never_be_published(page: Page) -> None:
    item, _ = page.store.remember(FREEZE)
    answer = page.post(f"/items/{item.id}/revise", {"text": PASSWORD, "keep_secret": "yes"})
    notice = _notice(page, answer)
    assert "can never be published" in notice
    assert any(i.text == PASSWORD for i in page.store.items())


@pytest.mark.parametrize("action", ["edit", "revise", "forget", "outcome", "retract", "publish"])
def test_a_post_without_the_csrf_token_is_refused_and_changes_nothing(
    page: Page, action: str
) -> None:
    item, _ = page.store.remember(FREEZE, kind="fact")

    answer = page.post(f"/items/{item.id}/{action}", _form(action), csrf=False)

    assert answer.status_code == 403
    assert "CSRF" in answer.text
    assert _same(page.store, item) == item
    assert len(page.store.items(status=None)) == 1


def test_unforget_without_the_csrf_token_changes_nothing(page: Page) -> None:
    item, _ = page.store.remember(FREEZE)
    page.store.forget(item.id)
    assert page.post(f"/items/{item.id}/unforget", csrf=False).status_code == 403
    assert _same(page.store, item).status == "archived"


@pytest.mark.parametrize(
    ("action", "form", "field"),
    [
        ("outcome", {"result": "maybe"}, "result"),
        ("outcome", {}, "result"),
        ("edit", {"kind": "rumour", "project": "shop", "tags": ""}, "kind"),
        ("edit", {"kind": "fact", "project": "no such project", "tags": ""}, "project"),
        ("edit", {"kind": "fact", "project": "shop", "tags": "fine b@d!"}, "tag"),
        ("edit", {"kind": "fact", "project": "p" * 65, "tags": ""}, "project"),
        ("revise", {"text": "   "}, "text"),
        ("revise", {"text": "x" * 9000}, "text"),
        ("revise", {"text": FREEZE}, "same as the old one"),
    ],
)
def test_a_bad_form_value_is_a_400_page_and_changes_nothing(
    page: Page, action: str, form: dict[str, str], field: str
) -> None:
    item, _ = page.store.remember(FREEZE, kind="fact")

    answer = page.post(f"/items/{item.id}/{action}", form)

    assert answer.status_code == 400, answer.text
    assert field in _problem(answer.text)
    assert _same(page.store, item) == item
    assert len(page.store.items(status=None)) == 1


def test_a_change_an_item_s_state_does_not_allow_is_refused_with_the_command_s_reason(
    page: Page, mem: MemRunner
) -> None:
    item, _ = page.store.remember(FREEZE)
    refused = page.post(f"/items/{item.id}/unforget")
    cli = mem("unforget", item.id)
    assert refused.status_code == 409
    assert cli.returncode != 0
    assert cli.stderr.strip() == f"mem: error: {_problem(refused.text)}"
    page.store.forget(item.id)
    assert page.post(f"/items/{item.id}/forget").status_code == 409
    assert page.post(f"/items/{item.id}/outcome", {"result": "worked"}).status_code == 303


def test_hostile_text_is_escaped_on_the_item_page(page: Page) -> None:
    item, _ = page.store.remember(HOSTILE, project="shop", tags=["xss"])
    html = page.get(f"/items/{item.id}").text
    assert "<script>alert(1)</script>" not in html
    assert "<img src=x" not in html
    assert 'href="javascript:' not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_a_published_item_shows_its_live_version_and_what_the_policy_now_withholds(
    tmp_path: Path,
) -> None:
    ada = Team(tmp_path, NOWHERE).add("ada")
    shared = ada.remember("Staging deploys need a green pipeline", kind="convention")
    again = ada.remember("We chose Postgres advisory locks for the job scheduler")
    ada.publish(shared, again)
    ada.retract(again)
    ada.publish(again, again=True)
    with serving(ada.home) as page:
        shown = page.get(f"/items/{shared}").text
        assert "Published v1" in shown
        assert "now withholds" not in shown
        ada.write_policy(share={"kinds": ["decision"]})
        shown = page.get(f"/items/{shared}").text
        assert "Published v1" in shown
        assert "The policy now withholds it (share.kinds: convention is not shared)" in shown
        other = page.get(f"/items/{again}").text
    assert "Published v2" in other
    assert "now withholds" not in other
    assert _history(other)[:3] == ["published v2", "retracted v1", "published v1"]
