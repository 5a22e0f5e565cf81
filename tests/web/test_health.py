"""The health section: figures and charts of the member's memory, the right counts at a few
thousand items, recall latency after recalls, the hooks' failures, and an empty store shown
without a fault."""

import json
import re
import time
from pathlib import Path

import pytest

from memmesh.local import hooklog, inbox, recall, transfer
from memmesh.local.ids import new_id
from memmesh.local.items import KINDS
from memmesh.local.store import Store
from memmesh.policy.redaction import redact_text
from tests.web._page import Page, serving

DAY = 86400.0
PROJECTS = ("billing", "search", "web", "ops", "global")


def _kpi(html: str, label: str) -> str:
    """The value of the figure ``label`` at the top of the section."""
    match = re.search(
        rf'data-kpi="{re.escape(label)}">\s*<span class="label">[^<]*</span>\s*'
        r'(?:<a class="value" href="[^"]*">|<span class="value">)([^<]*)<',
        html,
    )
    assert match, f"no figure {label!r}"
    return match.group(1)


def _bars(html: str) -> dict[str, str]:
    """Every bar drawn in the section's bar charts: its label and the value it shows."""
    return dict(re.findall(r'data-label="([^"]*)" data-value="([^"]*)"', html))


def _export(path: Path, count: int, now: float) -> dict[str, dict[str, int]]:
    """An export of ``count`` items spread over kinds, projects and the last 60 days (as `mem
    export` writes one); the counts by kind and by project it holds."""
    lines = [json.dumps({"format": transfer.FORMAT, "version": 1, "items": count})]
    counts: dict[str, dict[str, int]] = {"kind": {}, "project": {}}
    for n in range(count):
        kind, project = KINDS[n % len(KINDS)], PROJECTS[(n // 3) % len(PROJECTS)]
        made = now - DAY * (n % 60) - 3600
        record = {
            "id": new_id(made), "text": f"Synthetic fact number {n} about {project}",
            "kind": kind, "project": project, "tags": [], "author": "tester",
            "status": "active", "created_at": made, "updated_at": made,
        }  # fmt: skip
        lines.append(json.dumps(record))
        counts["kind"][kind] = counts["kind"].get(kind, 0) + 1
        counts["project"][project] = counts["project"].get(project, 0) + 1
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return counts


def test_an_empty_store_shows_its_health_with_nothing_to_chart(page: Page) -> None:
    answer = page.get("/health")

    assert answer.status_code == 200
    html = answer.text
    assert _kpi(html, "items") == "0"
    assert _kpi(html, "recalls today") == "0"
    assert _kpi(html, "p95 latency") == "-"
    assert _kpi(html, "inbox pending") == "0"
    assert _kpi(html, "published") == "-"
    assert html.count("no data yet") == 8
    assert "no failure" in html


def test_a_few_thousand_items_are_counted_by_kind_and_project(page: Page, tmp_path: Path) -> None:
    export = tmp_path / "items.jsonl"
    expected = _export(export, 3000, time.time())
    transfer.import_file(page.store, export)
    forgotten = page.store.items(kind="fact", project="billing", limit=5)
    for item in forgotten:
        page.store.forget(item.id)
    expected["kind"]["fact"] -= 5
    expected["project"]["billing"] -= 5

    html = page.get("/health", days=90).text

    assert _kpi(html, "items") == "2,995"
    assert "5 archived or superseded" in html
    bars = _bars(html)
    for kind, count in expected["kind"].items():
        assert bars[kind] == f"{count:,}", kind
    for project, count in expected["project"].items():
        assert bars[project] == f"{count:,}", project
    assert "no data yet" not in html.split("<h2>Recall</h2>")[0]


def test_the_counts_follow_a_change_made_while_the_page_is_open(page: Page) -> None:
    page.store.remember("Deploys run from main", kind="decision", project="shop")
    assert _bars(page.get("/health").text) == {"decision": "1", "shop": "1"}

    with Store(page.store.home, author="other") as other:  # another process's write
        other.remember("Staging resets every night", kind="gotcha", project="shop")

    assert _bars(page.get("/health").text) == {"decision": "1", "gotcha": "1", "shop": "2"}


def test_recalls_show_their_count_and_latency(page: Page) -> None:
    page.store.remember("The billing service retries failed webhooks five times")
    for query in ("how often are webhooks retried", "webhook retries", "quantum lattice gauge"):
        recall(page.store, query, k=3)
    summary = page.store.journal_summary()

    html = page.get("/health").text

    assert _kpi(html, "recalls today") == "3"
    p95 = summary["recall_latency_ms"]["p95"]
    assert _kpi(html, "p95 latency") == (f"{p95:,.0f} ms" if p95 >= 100 else f"{p95:.1f} ms")
    assert f"3 in 30 days, {summary['abstained']} abstained" in html
    latency = html.split("<h3>Latency</h3>")[1].split("</section>")[0]
    assert "no data yet" not in latency
    assert "<polyline" in latency


def test_the_prompt_hook_s_recalls_count_with_the_others(page: Page) -> None:
    home = page.store.home
    now = time.time()
    page.store.remember("The billing service retries failed webhooks five times")
    recall(page.store, "how often are webhooks retried", k=3)
    for ms, shown in ((120.0, True), (80.0, False)):
        ids = ("01ABCDEFGH",) if shown else ()
        run = hooklog.HookRun(hook="prompt", at=now - 5, project="shop", ms=ms, local_ids=ids)
        hooklog.record_run(home, run)

    html = page.get("/health").text

    assert _kpi(html, "recalls today") == "3"
    assert "1 by the prompt hook" not in html
    assert "2 by the prompt hook" in html
    assert "prompt hook p95 120 ms" in html
    assert "3 in 30 days" in html
    latency = html.split("<h3>Latency</h3>")[1].split("</section>")[0]
    assert "prompt hook p95: 120 ms" in latency


def test_the_hooks_failures_of_the_last_day_are_listed_escaped(page: Page) -> None:
    home = page.store.home
    now = time.time()
    hooklog.record_run(home, hooklog.HookRun(hook="prompt", at=now - 2 * DAY, error="stale"))
    hooklog.record_run(home, hooklog.HookRun(hook="prompt", at=now - 60, ms=8.0))
    error = "ValueError: <script>alert('hook')</script>"
    hooklog.record_run(home, hooklog.HookRun(hook="capture", at=now - 30, error=error))

    html = page.get("/health").text

    hooks = html.split('id="hooks"')[1].split("</section>")[0]
    assert 'data-hook-runs="2"' in hooks
    assert "1 failed" in hooks
    assert "capture" in hooks
    assert "&lt;script&gt;alert(&#39;hook&#39;)&lt;/script&gt;" in hooks
    assert "<script>alert" not in html
    assert "stale" not in hooks


def test_outcomes_and_the_inbox_waiting_show_in_the_figures(page: Page) -> None:
    item, _ = page.store.remember("Run make check before pushing", kind="command")
    page.store.outcome(item.id, "worked")
    page.store.outcome(item.id, "failed")
    proposals = [inbox.Proposal(f"Candidate {n} waits for review", "fact") for n in range(2)]
    inbox.propose(page.store, proposals, redact=redact_text)

    html = page.get("/health").text

    assert _kpi(html, "inbox pending") == "2"
    outcomes = html.split("<h3>Outcomes</h3>")[1].split("</section>")[0]
    assert "worked: 1" in outcomes
    assert "failed: 1" in outcomes


def test_the_published_count_follows_the_registry(home: Path, tmp_path: Path) -> None:
    from tests.team._team import NOWHERE, TEAM, Member

    member = Member("ana", home, team=TEAM, coordinator=NOWHERE)
    first = member.remember("We chose Postgres advisory locks over Redis")
    second = member.remember("Deploy windows are Tuesday and Thursday")
    member.publish(first, second)

    with serving(home) as page:
        assert _kpi(page.get("/health").text, "published") == "2"
        member.retract(first)
        assert _kpi(page.get("/health").text, "published") == "1"


def test_a_key_that_cannot_be_read_leaves_the_rest_of_the_section_standing(
    page: Page,
) -> None:
    from memmesh.registry.identity import KEY_FILENAME

    page.store.remember("Deploys run from main")
    (page.store.home / KEY_FILENAME).write_text("not a key\n", encoding="utf-8")

    answer = page.get("/health")

    assert answer.status_code == 200
    assert _kpi(answer.text, "published") == "-"
    assert "cannot be counted" in answer.text
    assert _kpi(answer.text, "items") == "1"


@pytest.mark.parametrize("days", ["7", "30", "90"])
def test_each_range_draws_a_point_a_day(page: Page, days: str) -> None:
    page.store.remember("Deploys run from main", kind="decision")

    html = page.get("/health", days=days).text

    assert f'href="/health?days={days}" aria-current="page"' in html
    kinds = html.split("<h3>By kind, over time</h3>")[1].split("</section>")[0]
    (line,) = re.findall(r'<polyline class="series [^"]*" points="([^"]*)"', kinds)
    assert len(line.split()) == int(days)


@pytest.mark.parametrize("days", ["12", "-1", "seven", "9" * 40])
def test_a_range_the_section_does_not_offer_is_a_clear_refusal(page: Page, days: str) -> None:
    answer = page.get("/health", days=days)

    assert answer.status_code == 400
    assert "days must be 7, 30 or 90" in answer.text


def test_the_charts_are_drawn_in_the_page_and_fetch_nothing(page: Page) -> None:
    page.store.remember("Deploys run from main", kind="decision")

    html = page.get("/health").text

    assert html.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart"') == 8
    assert not re.search(r'(?:src|href)="(?:https?:)?//', html)
