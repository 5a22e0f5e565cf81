"""Two memory texts: contradicting (numbers, versions, tools, yes and no, "use X" against "use
Y"), restating one fact, or compatible however many words they share; the same verdict in
either order, never an error on odd input, and the labelled pairs' report half above its
floors."""

import sys
from pathlib import Path

import pytest

from memmesh.consolidate.conflicts import Statement, Verdict, classify, classify_statements

# The benchmark's scripts import each other as top-level modules; appended, so that none of
# their names hides an installed one.
sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))
import conflicts as bench

WEBHOOK = "The billing-api webhook timeout is 30s."


def _contradiction(a: str, b: str) -> Verdict:
    verdict = classify(a, b)
    assert verdict.relation == "contradicts", verdict
    return verdict


@pytest.mark.parametrize(
    ("b", "values"),
    [
        ("The billing-api webhook timeout is 60 seconds.", ("30s", "60 seconds")),
        ("The billing-api webhook timeout is 2 minutes.", ("30s", "2 minutes")),
    ],
)
def test_a_number_with_its_unit_that_differs_contradicts(b: str, values: tuple[str, str]) -> None:
    verdict = _contradiction(WEBHOOK, b)
    assert verdict.values == values
    assert verdict.subject == "billing-api webhook timeout"
    assert verdict.reason == f'a says {values[0]}, b says {values[1]} for "{verdict.subject}"'


@pytest.mark.parametrize(
    ("a", "b", "values"),
    [
        (
            "The payments worker retries failed charges 3 times.",
            "The payments worker retries failed charges 5 times.",
            ("3", "5"),
        ),
        (
            "Deploys to production need 2 approvals.",
            "Deploys to production need one approval.",
            ("2", "one"),
        ),
        (
            "Postgres in local dev listens on port 5432.",
            "Local dev Postgres runs on port 5433.",
            ("5432", "5433"),
        ),
        ("The nightly backup runs at 02:00 UTC.", "The nightly backup runs at 04:00 UTC.", None),
        (
            "The staging database is reset every Monday.",
            "The staging database is reset every Friday.",
            None,
        ),
    ],
)
def test_counts_ports_times_and_days_that_differ_contradict(
    a: str, b: str, values: tuple[str, str] | None
) -> None:
    verdict = _contradiction(a, b)
    assert values is None or verdict.values == values


def test_one_amount_in_other_units_is_the_same_fact() -> None:
    verdict = classify(
        "Session tokens expire after 1 hour.", "Session tokens expire after 60 minutes."
    )
    assert verdict.relation == "duplicate"


@pytest.mark.parametrize(
    ("a", "b", "values"),
    [
        ("We run Python 3.11 in production.", "Production runs Python 3.12.", ("3.11", "3.12")),
        ("Clients must call the v2 API.", "Clients must call the v3 API.", ("v2", "v3")),
        ("Terraform is pinned to 1.5.7.", "Terraform is pinned to 1.6.2.", ("1.5.7", "1.6.2")),
        ("The frontend builds with Node 18.", "The frontend builds with Node 20.", ("18", "20")),
    ],
)
def test_versions_that_differ_contradict(a: str, b: str, values: tuple[str, str]) -> None:
    assert _contradiction(a, b).values == values


def test_one_version_written_two_ways_is_no_contradiction() -> None:
    assert classify("numpy is pinned to 2.0.", "numpy is pinned to 2.").relation == "duplicate"


@pytest.mark.parametrize(
    ("a", "b", "values"),
    [
        (
            "We use Redis locks for the job scheduler.",
            "We use Postgres advisory locks for the job scheduler.",
            ("redis locks", "postgres advisory locks"),
        ),
        ("Deploy with helm.", "Deploy with kustomize.", ("helm", "kustomize")),
        (
            "We deploy billing-api with Helm.",
            "billing-api is deployed with Kustomize.",
            ("helm", "kustomize"),
        ),
        (
            "Staging is hosted in eu-west-1.",
            "Staging is hosted in us-east-1.",
            ("eu-west-1", "us-east-1"),
        ),
        ("The default branch is main.", "The default branch is master.", ("main", "master")),
    ],
)
def test_names_in_one_slot_contradict(a: str, b: str, values: tuple[str, str]) -> None:
    assert _contradiction(a, b).values == values


@pytest.mark.parametrize(
    ("a", "b", "values"),
    [
        ("We squash merges.", "We never squash merges.", ("squash", "never squash")),
        (
            "Force pushes to main are allowed.",
            "Force pushes to main are not allowed.",
            ("allowed", "not allowed"),
        ),
        (
            "The cache is enabled in staging.",
            "The cache is disabled in staging.",
            ("enabled", "disabled"),
        ),
        ("We use Jenkins for CI.", "We no longer use Jenkins for CI.", ("use", "no longer use")),
        (
            "We vendor our Go dependencies.",
            "We don't vendor our Go dependencies.",
            ("vendor", "don't vendor"),
        ),
        (
            "HTTP keep-alive is on for the internal load balancer.",
            "HTTP keep-alive is off for the internal load balancer.",
            ("on", "off"),
        ),
    ],
)
def test_yes_and_no_on_one_thing_contradict(a: str, b: str, values: tuple[str, str]) -> None:
    assert _contradiction(a, b).values == values


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "Use httpx for outgoing HTTP calls in Python services.",
            "Use requests for outgoing HTTP calls in Python services.",
        ),
        ("Use Playwright for end-to-end tests.", "Use Cypress for end-to-end tests."),
        ("For date handling use date-fns.", "Use dayjs for date handling."),
        ("Prefer structlog for logging.", "Prefer loguru for logging."),
    ],
)
def test_use_x_and_use_y_for_one_purpose_contradict(a: str, b: str) -> None:
    _contradiction(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # "use X" and "use Y", each for its own purpose or code base
        ("Use ruff for linting.", "Use black for formatting."),
        ("Use Redis for caching.", "Use Postgres for the job queue."),
        (
            "Use httpx for outgoing HTTP calls in Python services.",
            "Use fetch for outgoing HTTP calls in the frontend.",
        ),
        # one shape, one number or one command: another service, environment or thing
        (WEBHOOK, "The auth-service webhook timeout is 60s."),
        ("Local Postgres listens on port 5432.", "Local Redis listens on port 6379."),
        (
            "search-indexer runs 5 replicas in production.",
            "search-indexer runs 1 replica in staging.",
        ),
        ("The HTTP timeout is 30s.", "The HTTP connect timeout is 5s."),
        ("Gunicorn runs 4 workers per pod.", "Celery runs 4 workers per pod."),
        ("Run make lint before pushing.", "Run make test before pushing."),
        # yes and no on different things
        ("Force pushes to main are not allowed.", "Force pushes to feature branches are allowed."),
        ("The cache is disabled in staging.", "The cache is enabled in production."),
        # an update that says "no longer", and agrees
        ("We no longer use Jenkins; CI moved to GitHub Actions.", "CI runs on GitHub Actions."),
        # a value and a state after one copula
        ("The default branch is main.", "The default branch is protected."),
        # one subject, another aspect
        (WEBHOOK, "billing-api retries failed webhooks 5 times."),
    ],
)
def test_texts_that_share_words_but_can_both_hold_are_compatible(a: str, b: str) -> None:
    verdict = classify(a, b)
    assert verdict == Verdict("compatible", "", ("", ""), "a and b can both hold")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (WEBHOOK, "billing-api times out webhooks after 30 seconds."),
        (
            "We use Postgres advisory locks for the job scheduler.",
            "The job scheduler relies on Postgres advisory locks.",
        ),
        (
            "Run `make db-reset` to reset the local database.",
            "To reset your local database, run make db-reset.",
        ),
        ("Deploys to production need 2 approvals.", "Production deploys require two approvals."),
        ("The cache is disabled in staging.", "In staging the cache is turned off."),
        (
            "The audit-log service does not store IP addresses.",
            "IP addresses are never stored by the audit-log service.",
        ),
        ("use --force with terraform import", "Use --force with terraform import!"),
    ],
)
def test_one_fact_restated_is_a_duplicate(a: str, b: str) -> None:
    verdict = classify(a, b)
    assert verdict.relation == "duplicate"
    assert verdict.values == ("", "")
    assert verdict.subject


def test_a_restatement_in_other_words_needs_a_near_cosine() -> None:
    a, b = "Staging is hosted in eu-west-1.", "Our staging environment lives in eu-west-1."
    assert classify(a, b).relation == "compatible"
    assert classify(a, b, cosine=0.83).relation == "duplicate"
    assert classify(a, b, cosine=0.5).relation == "compatible"


def test_no_cosine_makes_a_contradiction_or_hides_one() -> None:
    assert (
        classify(WEBHOOK, "The auth-service webhook timeout is 60s.", cosine=1.0).relation
        == "compatible"
    )
    assert (
        classify(WEBHOOK, "The billing-api webhook timeout is 60s.", cosine=0.0).relation
        == "contradicts"
    )


def test_the_verdict_is_the_same_whichever_text_comes_first() -> None:
    for pair in bench.load():
        ab, ba = classify(pair.a, pair.b), classify(pair.b, pair.a)
        assert (ab.relation, ab.subject) == (ba.relation, ba.subject), pair
        assert ab.values == (ba.values[1], ba.values[0]), pair


def test_statements_read_once_give_the_verdict_of_the_texts() -> None:
    for pair in bench.load()[::7]:
        assert classify_statements(Statement(pair.a), Statement(pair.b)) == classify(pair.a, pair.b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("", ""),
        ("", WEBHOOK),
        ("   \n\t", "!!!"),
        ("\x00\x1b[31m", "\u202e"),
        ("30s", "60s"),
        ("1.2.3s 4.5.6ms", "v 1,000,000 12:99"),
        ("ステージングは毎週月曜にリセット", "ステージングは毎週金曜にリセット"),
        ("🚀 deploy 🚀", "deploy"),
        ("no no no not never", "not"),
        (WEBHOOK * 2000, WEBHOOK),
    ],
)
def test_empty_and_odd_texts_get_a_verdict(a: str, b: str) -> None:
    verdict = classify(a, b)
    assert verdict.relation in ("contradicts", "duplicate", "compatible")
    assert "\n" not in verdict.reason


def test_texts_with_nothing_to_compare_are_compatible() -> None:
    assert classify("", "").relation == "compatible"
    assert classify("the", "a").relation == "compatible"


def test_the_labelled_pairs_meet_the_floors_on_the_report_half() -> None:
    pairs = bench.load()
    assert len(pairs) >= 240
    for label in ("contradicts", "duplicate", "compatible"):
        assert 0.25 <= sum(p.label == label for p in pairs) / len(pairs) <= 0.4, label
    report = [p for p in pairs if p.half == "report"]
    assert 0.4 <= len(report) / len(pairs) <= 0.6
    scores = bench.score(report)
    assert scores.precision("contradicts") >= 0.9
    assert scores.recall("contradicts") >= 0.6
    assert scores.precision("duplicate") >= 0.9
    assert bench.floors_met(scores)


@pytest.mark.parametrize("token", ["1:2:3", "2024:01:02", "100:30:00", "1:2", "10:5:7:9"])
def test_a_token_of_colons_that_is_no_time_of_day_does_not_raise(token: str) -> None:
    verdict = classify(f"the ratio is {token}", "the ratio is 16:9")
    assert verdict.relation in ("contradicts", "compatible")
