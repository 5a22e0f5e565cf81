"""`mem why` and `mem recall --explain` through the real command line: the parts of each hit,
each near miss's reason in words, a past recall replayed, and bad input refused."""

import re
import sqlite3
from pathlib import Path

from memmesh.local.store import Store
from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner

QUERY = "how many times does the billing service retry failed webhooks"
RETRIES = "The billing service retries failed webhooks 5 times with exponential backoff"
DEAD_LETTERS = "Billing webhooks that keep failing go to the dead-letter queue"
UNTIL = "Webhooks from billing are retried until they stop failing"
SEARCH = "The office plants are watered by the front desk service"
WORKER = "Failed webhooks are retried by the billing worker every ten minutes"


def _fill(home: Path) -> dict[str, str]:
    """A real store where each near miss of QUERY in shop at -k 1 has its own reason."""
    with Store(home, author="tester") as store:
        ids = {
            text: store.remember(text, project=project)[0].id
            for text, project in [
                (RETRIES, "shop"), (DEAD_LETTERS, "shop"), (UNTIL, "shop"), (SEARCH, "shop"),
                (WORKER, "ops"),
            ]
        }  # fmt: skip
        store.outcome(ids[UNTIL], "failed")
        store.outcome(ids[UNTIL], "failed")
    return ids


def test_why_prints_each_hits_parts_and_says_why_each_near_miss_was_left_out(
    mem: MemRunner, home: Path
) -> None:
    ids = _fill(home)

    result = mem("why", QUERY, "-k", "1", "--project", "shop")

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    # Ids are shown by 10 characters or more, padded to the longest.
    assert re.fullmatch(
        rf"\d\.\d{{3}}  {ids[RETRIES][:10]}\w* +\[fact, shop\]  {RETRIES}", lines[0]
    )
    assert re.fullmatch(
        r" {7}relevance \d\.\d{3}: cosine 0\.\d{3} \([+-]\d+\.\d spreads\), bm25 \d+\.\d\d "
        r"\(1\.00 of the best\), 6 of 7 query words, no track record x1\.00 = \d\.\d{3}",
        lines[1],
    ), lines[1]
    assert lines[2] == "left out:"
    reasons = {
        line.split("]  ", 1)[1]: following.strip()
        for line, following in zip(lines[3::2], lines[4::2], strict=True)
    }
    assert reasons[UNTIL] == (
        "its track record -0.60 is at or below -0.50 (worked 0.0, failed 2.0, partial 0.0): "
        "left out until its failures fade"
    )
    assert re.fullmatch(
        r"in project ops, outside shop \+ global: `mem recall --project ops` would find it "
        r"\(score \d\.\d{3}\)",
        reasons[WORKER],
    )
    assert re.fullmatch(
        r"below the relevance gate: cosine -?0\.\d\d, [+-]\d\.\d spreads above unrelated texts "
        r"\(under \+1\.0\), 1 of 7 query words \(under 25%\)",
        reasons[SEARCH],
    )
    assert re.fullmatch(r"ranked #2, below -k 1 \(score \d\.\d{3}\)", reasons[DEAD_LETTERS])
    # Explaining is not a recall: nothing is journaled, and there is no trace to print.
    assert "trace" not in result.stdout
    conn = sqlite3.connect(home / "memory.db")
    try:
        assert conn.execute("SELECT count(*) FROM events WHERE kind = 'recall'").fetchone() == (0,)
    finally:
        conn.close()


def test_why_trace_replays_a_past_recall_and_says_what_became_of_each_item(
    mem: MemRunner, home: Path
) -> None:
    ids = _fill(home)
    explained = mem("recall", QUERY, "-k", "2", "--project", "shop", "--explain")
    assert explained.returncode == 0, explained.stderr
    last = explained.stdout.splitlines()[-1]
    match = re.fullmatch(r"trace ([0-9a-f]{12}) \(mem why --trace \1\)", last)
    assert match, last
    trace = match.group(1)
    with Store(home, author="tester") as store:
        store.forget(ids[DEAD_LETTERS])

    replayed = mem("why", "--trace", trace.upper())
    as_json = json_of(mem("why", "--trace", trace, "--json"))

    assert replayed.returncode == 0, replayed.stderr
    lines = replayed.stdout.splitlines()
    assert lines[0].startswith(f"recall {trace} at ")
    assert lines[0].endswith(f': "{QUERY}" in shop + global, k 2, 2 returned')
    assert lines[1] == "run again now: items may have changed since, and the scores are today's"
    assert re.match(rf"#1  {ids[RETRIES][:10]}\w* +\[fact, shop\]", lines[2])
    assert lines[3] == "      still returned, #1"
    assert re.match(rf"#2  {ids[DEAD_LETTERS][:10]}\w* +\[fact, shop\]", lines[4])
    assert lines[5] == "      no longer recalled: archived"
    assert [(t["id"], t["fate"]) for t in as_json["then"]] == [
        (ids[RETRIES], "still_returned"),
        (ids[DEAD_LETTERS], "inactive"),
    ]
    assert as_json["trace"]["query"] == QUERY
    assert as_json["now"]["explanation"]["gate"]["min_closeness"] == 1.0


def test_why_refuses_bad_input_with_one_line_and_no_traceback(mem: MemRunner) -> None:
    cases = [
        ((), 2, "mem: error: give a query, or --trace ID for a past recall"),
        (("",), 2, "mem: error: the query is empty"),
        (("--trace", "../etc"), 2, "mem: error: '../etc' is not a trace id"),
        (("--trace", "0123456789ab"), 1, "mem: error: no recall trace '0123456789ab'"),
        (("webhooks", "--trace", "0123456789ab"), 2, "mem: error: give a query or --trace ID"),
    ]
    for args, code, start in cases:
        result = mem("why", *args)
        assert result.returncode == code, (args, result.stderr)
        assert error_line(result).startswith(start), (args, result.stderr)
