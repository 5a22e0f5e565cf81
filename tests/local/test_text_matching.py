"""Recall matches words across accents, case and width, and partial CJK phrases, by the words
themselves: in a store of the hashing embedder, whose vectors rescue nothing a word does not.

Both lexical paths are asked: FTS5's BM25 in the file, and the in-memory lexicon.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest

from memmesh.local._recall import Recall, recall
from memmesh.local.store import Store

CAFE = "the café on the corner serves ristretto"
JAPANESE = "デプロイの前に必ずステージング環境でテストする"
CHINESE = "部署前必须在预发布环境中测试"
KOREAN = "배포하기 전에 항상 스테이징 환경에서 테스트하세요"
OTHERS = (
    "the billing service retries webhooks 5 times",
    "use pnpm in the frontend, never npm",
    "the corner office has the fastest wifi",
    "deploys to production go through Argo CD",
)


@pytest.fixture(params=[False, True], ids=["fts5", "lexicon"])
def store(request: pytest.FixtureRequest, home: Path) -> Iterator[Store]:
    with Store(home, author="tester", embedder="hashing", lexicon=request.param) as opened:
        for text in (CAFE, JAPANESE, CHINESE, KOREAN, *OTHERS):
            opened.remember(text)
        yield opened


def _asked(store: Store, query: str) -> Recall:
    return recall(store, query, explain=True, record=False)


def _found_by_words(store: Store, query: str, text: str) -> None:
    """``query`` recalls ``text`` first, with a BM25 above zero and its words covered."""
    answer = _asked(store, query)
    assert [hit.item.text for hit in answer.hits][:1] == [text], answer
    parts = answer.hits[0].parts
    assert parts is not None
    assert parts.bm25 > 0
    assert parts.covered == parts.words


@pytest.mark.parametrize("query", ["cafe", "CAFE", "Café", "ｃａｆｅ"])
def test_an_unaccented_word_finds_its_accented_form(store: Store, query: str) -> None:
    _found_by_words(store, query, CAFE)


def test_an_accented_query_finds_the_plain_word(store: Store) -> None:
    store.remember("the naive retry loop hammers the api")
    _found_by_words(store, "naïve retry", "the naive retry loop hammers the api")


@pytest.mark.parametrize("query", ["ステージング", "デプロイの前", "環境", "ステージング環境"])
def test_a_partial_japanese_phrase_finds_the_sentence(store: Store, query: str) -> None:
    _found_by_words(store, query, JAPANESE)


@pytest.mark.parametrize("query", ["预发布环境", "部署前", "测试"])
def test_a_partial_chinese_phrase_finds_the_sentence(store: Store, query: str) -> None:
    _found_by_words(store, query, CHINESE)


@pytest.mark.parametrize("query", ["스테이징", "배포하기 전에", "테스트"])
def test_a_korean_word_inside_a_longer_one_finds_the_sentence(store: Store, query: str) -> None:
    _found_by_words(store, query, KOREAN)


@pytest.mark.parametrize(
    "query",
    [
        "前庭のテニス大会",  # 前, の, テ and ス are in the Japanese sentence; no pair of them is
        "环球旅行",  # 环 is in the Chinese sentence
        "테니스 대회",  # 테 and 스 are in the Korean sentence
        "前",
    ],
)
def test_single_shared_cjk_characters_do_not_make_a_match(store: Store, query: str) -> None:
    answer = _asked(store, query)
    assert answer.abstained, answer.hits
    assert answer.explanation is not None
    assert all(miss.parts.bm25 == 0 for miss in answer.explanation.left_out)
