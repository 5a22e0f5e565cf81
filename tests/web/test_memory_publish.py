"""Publishing and retracting from an item's page, with a real coordinator on loopback: the dry
run shows the deciding rule and exactly what would leave, nothing leaves until it is
confirmed, and a refusal is the message `mem team publish` prints, with nothing published."""

import re
import socket
from pathlib import Path

from memmesh.local.store import Store
from memmesh.registry import Registry
from memmesh.web._item import DISCLOSURES_SECONDS
from tests.conftest import MemRunner
from tests.team._team import LOCKS, LOCKS_QUERY, NOWHERE, Member, Team, ask
from tests.web._page import Page, serving

SECRET = "The deploy bot logs in with password=Sup3rS3cretValue42 on the staging box"


def notice_of(page: Page, answer: object) -> str:
    """The notice the page shows after a change (which must have been a 303)."""
    shown = page.follow(answer)  # type: ignore[arg-type]
    match = re.search(r'<p class="notice" role="status">([^<]*)</p>', shown.text)
    assert match, shown.text
    return match.group(1)


def problem_of(html: str) -> str:
    """The message of an error page."""
    match = re.search(r'<p class="problem" data-code="[a-z_]+">([^<]*)</p>', html)
    assert match, html
    return match.group(1)


def _log(store: Store, member: Member) -> list[tuple[str, str, int, bool]]:
    """The member's registry log: kind, item, version, acknowledged by the coordinator."""
    registry = Registry(store, member.identity, member.team)
    return [(e.kind, e.item_id, e.version, e.acked) for e in registry.entries()]


def _cli(member: Member, tmp_path: Path) -> MemRunner:
    return MemRunner(member.home, tmp_path / "cwd")


def test_the_dry_run_shows_the_deciding_rule_and_what_would_leave_and_sends_nothing(
    loopback_team: Team,
) -> None:
    ada = loopback_team.add("ada", auto_sync=True)
    with serving(ada.home) as page:
        item, _ = page.store.remember(LOCKS, kind="decision", project="jobs", tags=["scheduler"])

        plan = page.get(f"/items/{item.id}/publish")

        assert plan.status_code == 200
        html = plan.text
        assert "would publish v1" in html
        assert '<code class="rule">share.kinds: decision</code>' in html
        for field in (f"<pre class=\"item-text envelope-text\">{LOCKS}</pre>", ">jobs<",
                      "#scheduler", "decision", item.id, "acme"):  # fmt: skip
            assert field in html, field
        assert 'action="/items/' + item.id + '/publish"' in html
        assert _log(page.store, ada) == []  # a dry run records nothing and sends nothing

        done = page.post(f"/items/{item.id}/publish")

        assert notice_of(page, done).startswith(f"published v1 {item.id[:10]} [share.kinds")
        assert _log(page.store, ada) == [("publication", item.id, 1, True)]
        item_page = page.get(f"/items/{item.id}").text
        assert "published v1" in item_page
        assert "acknowledged by the coordinator" in item_page


def test_an_item_with_a_secret_is_refused_with_the_command_s_message_even_forced(
    loopback_team: Team, tmp_path: Path
) -> None:
    ada = loopback_team.add("ada", auto_sync=True)
    with serving(ada.home) as page:
        item, _ = page.store.remember(SECRET, kind="decision")  # stored as written

        plan = page.get(f"/items/{item.id}/publish", force="yes").text
        assert "refused" in plan
        assert "secret detected: " in plan
        assert "this rule is never overridden" in plan
        assert f'action="/items/{item.id}/publish"' not in plan  # nothing to confirm

        for form in ({}, {"force": "yes"}):
            refused = page.post(f"/items/{item.id}/publish", form)
            assert refused.status_code == 403
            argv = ["team", "publish", item.id, *(["--force"] if form else [])]
            cli = _cli(ada, tmp_path)(*argv)
            assert cli.returncode == 3
            assert cli.stderr.strip() == f"mem: error: {problem_of(refused.text)}"
            assert "nothing was published" in cli.stderr
        assert _log(page.store, ada) == []


def test_a_rule_of_the_member_s_own_is_overridden_only_when_forced_and_recorded(
    loopback_team: Team,
) -> None:
    ada = loopback_team.add("ada")
    with serving(ada.home) as page:
        item, _ = page.store.remember(LOCKS, kind="fact")  # team.yaml shares no facts

        plan = page.get(f"/items/{item.id}/publish").text
        assert "share.kinds: fact is not shared" in plan
        assert f"/items/{item.id}/publish?force=yes" in plan
        assert page.post(f"/items/{item.id}/publish").status_code == 403
        assert _log(page.store, ada) == []

        forced = page.get(f"/items/{item.id}/publish", force="yes").text
        assert "forced" in forced
        assert 'name="force" value="yes"' in forced
        done = page.post(f"/items/{item.id}/publish", {"force": "yes"})

        assert "(forced)" in notice_of(page, done)
        registry = Registry(page.store, ada.identity, ada.team)
        (entry,) = registry.entries()
        assert entry.forced_rule == "share.kinds: fact is not shared"


def test_retracting_from_the_page_takes_the_publication_back(loopback_team: Team) -> None:
    ada = loopback_team.add("ada", auto_sync=True)
    with serving(ada.home) as page:
        item, _ = page.store.remember(LOCKS, kind="decision")
        page.follow(page.post(f"/items/{item.id}/publish"))
        assert "Retract" in page.get(f"/items/{item.id}").text

        notice = notice_of(page, page.post(f"/items/{item.id}/retract"))

        assert notice == f"retracted v1 {item.id[:10]}"
        assert _log(page.store, ada)[-1] == ("retraction", item.id, 1, True)
        html = page.get(f"/items/{item.id}").text
        assert "Retracted" in html
        assert "retracted v1" in html
        # Publishing it again is asked for by name, as --again.
        plan = page.get(f"/items/{item.id}/publish").text
        assert "retracted before" in plan
        assert "again=yes" in plan


def test_forgetting_a_published_item_retracts_it_as_mem_forget_does(loopback_team: Team) -> None:
    ada = loopback_team.add("ada", auto_sync=True)
    with serving(ada.home) as page:
        item, _ = page.store.remember(LOCKS, kind="decision")
        page.follow(page.post(f"/items/{item.id}/publish"))

        notice = notice_of(page, page.post(f"/items/{item.id}/forget"))

        assert notice.startswith(f"archived {item.id[:10]}; its publication is retracted")
        assert _log(page.store, ada)[-1] == ("retraction", item.id, 1, True)
        assert page.store.get(item.id).status == "archived"


def test_who_was_served_the_item_comes_from_the_coordinator_s_log(roster_team: Team) -> None:
    ada, bob = roster_team.members["ada"], roster_team.members["bob"]
    item_id = ada.share(LOCKS)
    assert [hit.id for hit in ask(bob, LOCKS_QUERY).hits] == [item_id]

    with serving(ada.home) as page:
        html = page.get(f"/items/{item_id}").text

    served = re.search(r'<table class="served">(.*?)</table>', html, re.S)
    assert served, html
    assert "<td>bob</td>" in served.group(1)


def test_a_coordinator_that_does_not_answer_is_one_muted_line(tmp_path: Path) -> None:
    ada = Team(tmp_path, NOWHERE).add("ada")
    item_id = ada.remember(LOCKS)
    ada.publish(item_id)
    with serving(ada.home) as page:
        answer = page.get(f"/items/{item_id}")
    assert answer.status_code == 200
    assert "cannot ask the coordinator now" in answer.text
    assert LOCKS in answer.text  # the rest of the page is all there


def test_a_coordinator_that_never_answers_is_given_up_on_at_the_page_s_deadline(
    tmp_path: Path,
) -> None:
    # It takes the connection and says nothing: the client would wait its own 10 s.
    with socket.create_server(("127.0.0.1", 0)) as silent:
        ada = Team(tmp_path, f"http://127.0.0.1:{silent.getsockname()[1]}").add("ada")
        item_id = ada.remember(LOCKS)
        ada.publish(item_id)
        with serving(ada.home) as page:
            answer = page.get(f"/items/{item_id}")
    assert answer.status_code == 200
    seconds = f"{DISCLOSURES_SECONDS:g}"
    assert f"the coordinator did not answer within {seconds} s" in answer.text
    assert LOCKS in answer.text


def test_without_a_team_publish_and_retract_say_why_as_the_commands_do(
    page: Page, mem: MemRunner
) -> None:
    item, _ = page.store.remember(LOCKS, kind="decision")

    shown = page.get(f"/items/{item.id}").text
    plan = page.get(f"/items/{item.id}/publish")
    retract = page.post(f"/items/{item.id}/retract")
    cli_publish = mem("team", "publish", item.id)
    cli_retract = mem("team", "retract", item.id)

    assert f"mem: error: {problem_of(plan.text)}" == cli_publish.stderr.strip()
    assert f"mem: error: {problem_of(retract.text)}" == cli_retract.stderr.strip()
    assert plan.status_code == 403
    assert retract.status_code == 400
    assert "Publishing cannot be done here: no team policy at" in shown
    assert f"/items/{item.id}/publish" not in shown
    assert page.post(f"/items/{item.id}/publish").status_code == 403


def test_an_edit_the_policy_no_longer_allows_is_shown_as_taken_back_at_the_next_sync(
    loopback_team: Team,
) -> None:
    ada = loopback_team.add("ada")
    with serving(ada.home) as page:
        item, _ = page.store.remember(LOCKS, kind="decision")
        page.follow(page.post(f"/items/{item.id}/publish"))
        edit = {"kind": "fact", "project": "global", "tags": ""}
        page.follow(page.post(f"/items/{item.id}/edit", edit))

        html = page.get(f"/items/{item.id}").text

        assert "Published v1" in html
        assert "The policy now withholds it (share.kinds: fact is not shared)" in html
        assert _log(page.store, ada) == [("publication", item.id, 1, False)]


def test_without_team_yaml_a_published_item_can_still_be_retracted_as_the_command_allows(
    tmp_path: Path,
) -> None:
    ada = Team(tmp_path, NOWHERE).add("ada")
    item_id = ada.remember(LOCKS)
    ada.publish(item_id)
    (ada.home / "team.yaml").unlink()
    with serving(ada.home) as page:
        html = page.get(f"/items/{item_id}").text
        assert "who was served it cannot be asked now: no team policy at" in html
        assert "Publishing cannot be done here: no team policy at" in html

        notice = notice_of(page, page.post(f"/items/{item_id}/retract"))

        assert notice == f"retracted v1 {item_id[:10]}"
        assert _log(page.store, ada)[-1] == ("retraction", item_id, 1, False)
