"""The shared tokenizer: words, stems, exact tokens and the tokens that carry a fact's meaning."""

import pytest

from memmesh import text


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("retries", "retry"),
        ("retried", "retry"),
        ("retrying", "retry"),
        ("running", "run"),
        ("stopped", "stop"),
        ("falling", "fall"),
        ("missing", "miss"),
        ("classes", "class"),
        ("matches", "match"),
        ("queries", "query"),
        ("webhooks", "webhook"),
    ],
)
def test_stem_folds_inflections_onto_one_form(word: str, expected: str) -> None:
    assert text.stem(word) == expected


@pytest.mark.parametrize("word", ["status", "analysis", "class", "api", "e1234", "cat"])
def test_stem_leaves_short_words_and_non_plurals_alone(word: str) -> None:
    assert text.stem(word) == word


@pytest.mark.parametrize(("plural", "singular"), [("fixes", "fix"), ("boxes", "box")])
def test_stem_folds_a_short_es_plural_onto_its_singular(plural: str, singular: str) -> None:
    assert text.stem(plural) == text.stem(singular)


def test_tokens_are_lower_cased_stemmed_and_without_stopwords() -> None:
    assert text.tokens("The Billing service RETRIES the webhooks") == [
        "bill",
        "servic",
        "retry",
        "webhook",
    ]


def test_tokens_of_only_stopwords_or_nothing_are_empty() -> None:
    assert text.tokens("the and of it is") == []
    assert text.tokens("") == []
    assert text.tokens('  *  " ( ') == []


def test_tokens_keep_a_compound_whole_before_its_parts() -> None:
    assert text.tokens("install node-gyp with --force") == [
        "install",
        "node-gyp",
        "node",
        "gyp",
        "--force",
        "forc",
    ]
    assert text.tokens("v1.2.3") == ["v1.2.3", "v1", "2", "3"]


def test_tokens_do_not_repeat_a_single_part_code() -> None:
    # "E1234" is one part: it appears once, not as both an exact token and a word.
    assert text.tokens("E1234") == ["e1234"]


def test_words_keep_stopwords_and_split_compounds() -> None:
    assert text.words("Hello, the World! E1234 node-gyp") == [
        "hello",
        "the",
        "world",
        "e1234",
        "node",
        "gyp",
    ]


@pytest.mark.parametrize(
    ("variants", "folded"),
    [
        (["cafe", "café", "CAFÉ", "Cafe\u0301"], ["cafe"]),
        (["naive", "naïve", "NAÏVE"], ["naiv"]),
        (["Zurich", "Zürich", "ZÜRICH"], ["zurich"]),
        (["Straße", "STRASSE"], ["strass"]),
        # Full-width letters and digits (NFKC), as an IME types them.
        (["ＣＡＦＥ", "ｃａｆé"], ["cafe"]),
        (["Ｅ１２３４", "e1234"], ["e1234"]),
    ],
)
def test_tokens_fold_accents_case_and_width(variants: list[str], folded: list[str]) -> None:
    assert [text.tokens(variant) for variant in variants] == [folded] * len(variants)


def test_exact_tokens_and_words_fold_like_tokens() -> None:
    assert text.exact_tokens("Ｎｏｄｅ－ｇｙｐ and ÉRR-42") == {"node-gyp", "err-42"}
    assert text.words("Naïve café") == ["naive", "cafe"]
    assert text.shares_exact_token(text.exact_tokens("ERR-42"), "see ÉRR-42 in the log")


def test_folding_keeps_scripts_whose_marks_are_letters() -> None:
    # Kana voicing marks and Hangul syllables survive (NFKD, then composed again): only the
    # diacritics of Latin, Greek and Cyrillic letters go.
    assert text.tokens("デプロイ") == ["デプ", "プロ", "ロイ"]
    assert text.tokens("ﾃﾞﾌﾟﾛｲ") == ["デプ", "プロ", "ロイ"]  # half-width katakana
    assert text.tokens("배포") == ["배포"]


def test_a_cjk_run_becomes_its_overlapping_character_pairs() -> None:
    assert text.tokens("ステージング") == ["ステ", "テー", "ージ", "ジン", "ング"]
    assert text.tokens("部署前必须测试") == ["部署", "署前", "前必", "必须", "须测", "测试"]
    korean = ["스테", "테이", "이징", "징에", "에서", "테스", "스트"]
    assert text.tokens("스테이징에서 테스트") == korean


def test_a_one_character_cjk_run_is_its_character_but_a_lone_kana_particle_is_not() -> None:
    assert text.tokens("猫 と 犬") == ["猫", "犬"]
    assert text.tokens("Docker の 使い方") == ["docker", "使い", "い方"]


def test_latin_words_inside_cjk_text_stay_words() -> None:
    assert text.tokens("Dockerイメージをpushする前にE1234を確認") == [
        "docker", "イメ", "メー", "ージ", "ジを", "push", "する", "る前", "前に",
        "e1234", "を確", "確認",
    ]  # fmt: skip
    assert text.exact_tokens("node-gypのエラーE1234") == {"node-gyp", "e1234"}


@pytest.mark.parametrize("part", ["ステージング", "デプロイの前", "環境", "テストする"])
def test_a_partial_japanese_phrase_shares_all_its_tokens_with_the_sentence(part: str) -> None:
    sentence = set(text.tokens("デプロイの前に必ずステージング環境でテストする"))
    assert text.tokens(part)
    assert set(text.tokens(part)) <= sentence


def test_a_single_shared_cjk_character_shares_no_token() -> None:
    sentence = set(text.tokens("デプロイの前に必ずステージング環境でテストする"))
    assert not sentence & set(text.tokens("前"))
    assert not sentence & set(text.tokens("前庭のテニス大会"))


def test_exact_tokens_are_codes_flags_packages_and_versions() -> None:
    found = text.exact_tokens("Install node-gyp --force; see E1234 in v1.2.3, step 5 of x")
    assert found == {"node-gyp", "--force", "e1234", "v1.2.3"}


def test_exact_tokens_ignore_plain_words_and_single_characters() -> None:
    assert text.exact_tokens("retry the webhook a few times 5") == set()


def test_key_tokens_tell_numbers_apart() -> None:
    five = text.key_tokens("The billing service retries webhooks 5 times")
    three = text.key_tokens("The billing service retries webhooks 3 times")
    assert five == frozenset({"5"})
    assert three == frozenset({"3"})


@pytest.mark.parametrize(
    ("sentence", "negation"),
    [
        ("The deploy does not run migrations", "not"),
        ("The deploy doesn't run migrations", "doesn't"),
        ("The deploy never runs migrations", "never"),
        ("The deploy runs without migrations", "without"),
    ],
)
def test_key_tokens_include_negations(sentence: str, negation: str) -> None:
    assert negation in text.key_tokens(sentence)
    assert text.key_tokens("The deploy runs migrations") == frozenset()


def test_key_tokens_include_exact_tokens() -> None:
    keys = text.key_tokens("Pin node-gyp to v9.4.1")
    assert {"node-gyp", "v9.4.1"} <= keys
    assert not {"pin", "node", "gyp"} & keys


def test_key_tokens_include_a_negation_typed_with_a_typographic_apostrophe() -> None:
    assert text.key_tokens("The deploy doesn\u2019t run migrations") != frozenset()


# What a teammate's text may hold to take over a terminal: a CSI that erases the line and
# moves the cursor, a carriage return that overwrites what was printed, an OSC 52 clipboard
# write, a C1 CSI, DEL, and direction overrides and isolates that reorder what is shown.
HOSTILE = (
    "ok\x1b[2K\x1b[1A\rada says: run this\x1b]52;c;Y3VybCBldmlsLnNo\x07"
    "\x9b31m\x7f\u202eevil\u202c\u2066x\u2069\u200f"
)


def test_printable_shows_every_terminal_control_as_a_visible_escape() -> None:
    assert text.printable(HOSTILE) == (
        "ok\\x1b[2K\\x1b[1A\\rada says: run this\\x1b]52;c;Y3VybCBldmlsLnNo\\x07"
        "\\x9b31m\\x7f\\u202eevil\\u202c\\u2066x\\u2069\\u200f"
    )


@pytest.mark.parametrize(
    "control",
    [chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))]
    + ["\u061c", "\u200e", "\u200f", "\u2028", "\u2029"]
    + [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))],
)
def test_printable_leaves_no_control_character(control: str) -> None:
    shown = text.printable(f"a{control}b")
    assert (shown[:2], shown[-1]) == ("a\\", "b")
    assert shown.isprintable()


def test_printable_keeps_ordinary_text_of_any_script_as_it_is() -> None:
    plain = "Café: naïve 日本語 עברית — C:\\Users\\ada, \\x1b as written, emoji 🚀"
    assert text.printable(plain) == plain


def test_printable_keeps_layout_newlines_only_when_asked() -> None:
    assert text.printable("one\ntwo\tthree") == "one\\ntwo\\tthree"
    assert text.printable("one\ntwo\r\x1b[1A", layout=True) == "one\ntwo\\r\\x1b[1A"


def test_json_printable_escapes_what_json_leaves_raw_and_means_the_same() -> None:
    import json

    document = json.dumps({"text": HOSTILE}, ensure_ascii=False)
    shown = text.json_printable(document)
    assert shown.isprintable()
    assert json.loads(shown) == {"text": HOSTILE}
    assert json.dumps({"t": "日本語"}, ensure_ascii=False) == text.json_printable('{"t": "日本語"}')


@pytest.mark.parametrize(
    ("count", "noun", "plural", "expected"),
    [
        (0, "hit", None, "0 hits"),
        (1, "hit", None, "1 hit"),
        (2, "published item", None, "2 published items"),
        (1, "entry", "entries", "1 entry"),
        (3, "batch", "batches", "3 batches"),
        (8192, "byte", None, "8,192 bytes"),
    ],
)
def test_counted_is_singular_for_one_only(
    count: int, noun: str, plural: str | None, expected: str
) -> None:
    assert text.counted(count, noun, plural) == expected


@pytest.mark.parametrize(
    "sample",
    ["Webhooks retry 8 times on E1234 (node-gyp, --force)", "東京のサーバー", "", "the and of"],
)
def test_the_token_set_of_a_text_is_its_tokens_as_a_set_asked_again_or_not(sample: str) -> None:
    assert text.token_set(sample) == frozenset(text.tokens(sample))
    assert text.token_set(sample) == frozenset(text.tokens(sample))
