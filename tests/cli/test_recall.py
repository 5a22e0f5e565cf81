"""`mem recall` through the real command line: output, abstention, scope, and odd queries."""

import re
from pathlib import Path

from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner

HIT_KEYS = {
    "id", "text", "score", "kind", "project", "tags", "author", "cosine", "lexical",
    "outcome_score", "reinforcements", "stale",
}  # fmt: skip


def _remember(mem: MemRunner, text: str, *args: str) -> str:
    item_id: str = json_of(mem("remember", text, "--json", *args))["id"]
    return item_id


def _hit_ids(mem: MemRunner, query: str, *args: str, env: dict[str, str] | None = None) -> set[str]:
    return {hit["id"] for hit in json_of(mem("recall", query, "--json", *args, env=env))["hits"]}


def test_recall_text_shows_score_id_kind_project_and_text(mem: MemRunner) -> None:
    text = "npm install fails with node-gyp error E1234 unless python3-dev is installed"
    item_id = _remember(mem, text, "--kind", "gotcha", "--project", "shop")
    # An exact token such as an error code is found even in a one-word query.
    found = mem("recall", "E1234", "--project", "shop")
    assert found.returncode == 0
    assert found.stderr == ""
    line = rf"\d\.\d{{3}}  {item_id[:10]}  \[gotcha, shop\]  {re.escape(text)}\n"
    assert re.fullmatch(line, found.stdout), found.stdout


def test_recall_json_has_ranked_hits_and_abstained_false(mem: MemRunner) -> None:
    ids = [
        _remember(mem, "Deploy the shop with make deploy-shop"),
        _remember(mem, "Deploy billing with make deploy-billing"),
        _remember(mem, "Deploy only after CI is green"),
    ]
    result = mem("recall", "how do I deploy", "-k", "2", "--json")
    data = json_of(result)
    assert result.stderr == ""
    assert {"query", "hits", "abstained", "projects"} <= set(data)
    assert data["query"] == "how do I deploy"
    assert data["abstained"] is False
    assert data["projects"] == ["global"]
    assert re.fullmatch(r"[0-9a-f]{12}", data["trace"])  # for `mem why --trace`
    assert len(data["hits"]) == 2  # -k caps the hits
    for hit in data["hits"]:
        assert set(hit) == HIT_KEYS
        assert hit["id"] in ids
        assert isinstance(hit["score"], float)
        assert hit["score"] > 0
    scores = [hit["score"] for hit in data["hits"]]
    assert scores == sorted(scores, reverse=True)
    texts = {hit["id"]: hit["text"] for hit in data["hits"]}
    assert all(texts[i].startswith("Deploy") for i in texts)


def test_recall_abstains_on_an_unrelated_query(mem: MemRunner) -> None:
    _remember(mem, "The billing service retries webhooks 5 times", "--project", "shop")

    text = mem("recall", "what is the capital of France", "--project", "shop")
    assert text.returncode == 0
    assert text.stderr == ""
    assert text.stdout == "nothing relevant in shop + global (abstained)\n"

    data = json_of(mem("recall", "what is the capital of France", "--json"))
    assert data["hits"] == []
    assert data["abstained"] is True
    assert data["projects"] == ["global"]


def test_recall_sees_its_project_and_global_never_another_project(
    mem: MemRunner, tmp_path: Path
) -> None:
    alpha = _remember(mem, "Deploy the shop with make deploy-shop", "--project", "alpha")
    beta = _remember(mem, "Deploy billing with make deploy-billing", "--project", "beta")
    shared = _remember(mem, "Deploy only after CI is green", "--global")

    assert _hit_ids(mem, "deploy", "--project", "alpha") == {alpha, shared}
    assert _hit_ids(mem, "deploy", "--project", "beta") == {beta, shared}
    assert _hit_ids(mem, "deploy") == {shared}  # outside any project: global only
    assert _hit_ids(mem, "deploy", env={"MEM_PROJECT": "beta"}) == {beta, shared}

    repo = tmp_path / "alpha"
    (repo / ".git").mkdir(parents=True)
    mem.cwd = repo
    assert _hit_ids(mem, "deploy") == {alpha, shared}


def test_recall_treats_search_syntax_in_the_query_as_plain_words(mem: MemRunner) -> None:
    item_id = _remember(mem, "Deploy the shop with make deploy-shop")

    odd = mem("recall", "AND OR (", "--json")
    data = json_of(odd)
    assert odd.stderr == ""
    assert data["abstained"] is True
    assert data["hits"] == []

    assert _hit_ids(mem, '"deploy" AND NOT (shop: *') == {item_id}


def test_recall_refuses_an_empty_and_an_oversized_query(mem: MemRunner) -> None:
    empty = mem("recall", "   ")
    assert empty.returncode == 2
    assert error_line(empty) == "mem: error: the query is empty"

    huge = mem("recall", "q" * 9 * 1024)
    assert huge.returncode == 2
    assert error_line(huge) == "mem: error: the query is longer than 8192 bytes"
