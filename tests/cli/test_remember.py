"""`mem remember` and `mem recall` through the real command line."""

import json

from tests.conftest import MemRunner


def test_remember_prints_the_id_and_recall_finds_it(mem: MemRunner) -> None:
    created = mem("remember", "The billing service retries webhooks 5 times", "--json")
    assert created.returncode == 0, created.stderr
    answer = json.loads(created.stdout)
    assert answer["status"] == "created"

    found = mem("recall", "how often are webhooks retried", "--json")
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)
    assert result["abstained"] is False
    assert [hit["id"] for hit in result["hits"]] == [answer["id"]]


def test_remember_refuses_empty_text_and_changes_nothing(mem: MemRunner) -> None:
    refused = mem("remember", "   ")
    assert refused.returncode == 2
    assert refused.stderr.strip() == "mem: error: text is empty; give the fact to remember"
    listed = json.loads(mem("list", "--json").stdout)
    assert listed == {"items": []}
