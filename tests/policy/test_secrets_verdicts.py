"""The secret scan's kept verdicts: a process that decides the same texts again (the page,
the MCP server, the warm server) scans each once, and is answered as the scan answered."""

from memmesh.policy.secrets import VERDICTS, Verdicts, find_secrets
from tests.policy._corpus_notes import GITHUB_TOKEN


def test_a_text_scanned_again_is_answered_from_the_kept_verdict() -> None:
    text = f"deploy with GITHUB_TOKEN={GITHUB_TOKEN} from the runner (verdicts 1)"
    first = find_secrets(text)
    hits = VERDICTS.hits
    again = find_secrets(text)
    assert VERDICTS.hits == hits + 1
    assert again == first
    assert [finding.detector for finding in again] == ["github-token"]


def test_a_harmless_text_scanned_again_is_still_harmless() -> None:
    text = "restart the worker after editing its env (verdicts 2)"
    assert find_secrets(text) == []
    hits = VERDICTS.hits
    assert find_secrets(text) == []
    assert VERDICTS.hits == hits + 1


def test_changing_an_answer_does_not_change_the_next_one() -> None:
    text = f"token {GITHUB_TOKEN} (verdicts 3)"
    answer = find_secrets(text)
    answer.clear()
    assert [finding.detector for finding in find_secrets(text)] == ["github-token"]


def test_a_text_longer_than_an_item_is_scanned_every_time() -> None:
    text = "plain words " * 2000
    find_secrets(text)
    hits, misses = VERDICTS.hits, VERDICTS.misses
    assert find_secrets(text) == []
    assert (VERDICTS.hits, VERDICTS.misses) == (hits, misses)


def test_the_verdicts_kept_are_bounded() -> None:
    kept = Verdicts(most=3)
    for number in range(10):
        text = f"note {number}"
        assert kept.get(text) is None
        kept.put(text, ())
    assert len(kept) <= 3
    assert kept.get("note 9") == ()
