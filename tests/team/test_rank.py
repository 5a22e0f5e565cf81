"""recall-team's own score matches words across accents and width, and partial CJK phrases.

Scored by words alone (no comparable cosine), as hits from a source in another vector space.
"""

import pytest

from memmesh.embed import HashingEmbedder
from memmesh.team.rank import QueryTerms, team_score

EMBEDDER = HashingEmbedder()
JAPANESE = "デプロイの前に必ずステージング環境でテストする"


def _score(query: str, text: str, tags: tuple[str, ...] = ()) -> float | None:
    return team_score(QueryTerms(query), text, tags, None, EMBEDDER)


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("cafe", "the café on the corner serves ristretto"),
        ("CAFÉ ristretto", "the cafe on the corner serves ristretto"),
        ("Zurich office", "the Zürich office closes at six"),
        ("ｅｒｒ－４２", "the importer fails with ERR-42 on empty files"),
        ("ステージング", JAPANESE),
        ("デプロイの前", JAPANESE),
        ("预发布环境", "部署前必须在预发布环境中测试"),
        ("스테이징", "배포하기 전에 항상 스테이징환경에서 테스트하세요"),
    ],
)
def test_words_match_across_accents_width_and_inside_cjk_runs(query: str, text: str) -> None:
    score = _score(query, text)
    assert score is not None
    assert score >= 1.0  # every word of the query is in the text


def test_a_tag_with_an_accented_query_matches() -> None:
    assert _score("résumé", "how to write one", ("resume",)) == 1.0


@pytest.mark.parametrize("query", ["前庭のテニス大会", "前", "前庭の大会"])
def test_cjk_text_sharing_only_single_characters_is_not_relevant(query: str) -> None:
    assert _score(query, JAPANESE) is None
