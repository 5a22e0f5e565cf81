"""Word pieces of ASCII text read in plain Python: the very ids the tokenizers package gives
with the minilm-static tokenizer, from a vocabulary file that is the tokenizer's own."""

import json
import random
import string
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from memmesh.embed import _wordpiece
from memmesh.embed._wordpiece import SPECIAL_TOKENS, UNK, Vocabulary, word_pieces

_WEIGHTS = Path(_wordpiece.__file__).with_name("weights")
_JSON = _WEIGHTS / "minilm-static-tokenizer.json"


@pytest.fixture(scope="module")
def package() -> Tokenizer:
    """The tokenizers package's reading, as the embedder sets it up for texts of any kind."""
    tokenizer = Tokenizer.from_file(str(_JSON))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


@pytest.fixture(scope="module")
def vocabulary() -> Vocabulary:
    """The lookup table the embedder reads."""
    return _wordpiece.vocabulary(_WEIGHTS / _wordpiece.LOOKUP_FILE)


def _tokens() -> list[str]:
    """The vocabulary file's tokens, in id order."""
    lines = (_WEIGHTS / _wordpiece.VOCABULARY_FILE).read_text(encoding="utf-8").split("\n")
    return lines[:-1]


def _theirs(tokenizer: Tokenizer, text: str) -> list[int]:
    return list(tokenizer.encode(text, add_special_tokens=False).ids)


def test_the_vocabulary_file_is_the_tokenizers_own_in_id_order() -> None:
    model = json.loads(_JSON.read_text(encoding="utf-8"))["model"]
    lines = (_WEIGHTS / _wordpiece.VOCABULARY_FILE).read_text(encoding="utf-8").split("\n")

    assert lines.pop() == ""  # one token a line, each ended by a newline, as vocab.txt is
    assert lines == sorted(model["vocab"], key=model["vocab"].__getitem__)
    assert list(model["vocab"].values()) == list(range(len(lines)))


def test_the_lookup_table_is_the_vocabulary_files_ascii_tokens_in_byte_order() -> None:
    shipped = np.load(_WEIGHTS / _wordpiece.LOOKUP_FILE, allow_pickle=False)
    tokens = _tokens()

    assert np.array_equal(shipped, _wordpiece.lookup_table(tokens))
    assert list(shipped["token"]) == sorted(shipped["token"])
    assert {t.decode(): int(i) for t, i in shipped} == {
        token: id_ for id_, token in enumerate(tokens) if token.isascii()
    }


def test_a_token_is_found_by_its_text_and_a_piece_not_in_the_vocabulary_is_not(
    vocabulary: Vocabulary,
) -> None:
    ids = {token: id_ for id_, token in enumerate(_tokens())}

    for token in ("[PAD]", "[UNK]", "the", "##ing", "telecommunications", "!", "a", "z"):
        assert vocabulary.id_of(token) == ids[token]
    for absent in ("", "qzxj", "##qzxj", "telecommunicationsx", "x" * 200, "[pad]"):
        assert vocabulary.id_of(absent) is None


def test_the_tokenizer_is_the_pipeline_read_here() -> None:
    # Should the tokenizer's settings change, the ids read here would no longer be the
    # package's: this names every setting the plain reading stands for.
    spec = json.loads(_JSON.read_text(encoding="utf-8"))
    assert spec["normalizer"] == {
        "type": "BertNormalizer",
        "clean_text": True,
        "handle_chinese_chars": True,
        "strip_accents": None,
        "lowercase": True,
    }
    assert spec["pre_tokenizer"] == {"type": "BertPreTokenizer"}
    assert {k: v for k, v in spec["model"].items() if k != "vocab"} == {
        "type": "WordPiece",
        "unk_token": UNK,
        "continuing_subword_prefix": "##",
        "max_input_chars_per_word": _wordpiece.MAX_WORD,
    }
    special = [t for t in spec["added_tokens"] if t["special"]]
    assert [t["content"] for t in spec["added_tokens"]] == list(SPECIAL_TOKENS)
    assert all(
        (t["single_word"], t["lstrip"], t["rstrip"], t["normalized"]) == (False,) * 4
        for t in special
    )
    assert len(special) == len(spec["added_tokens"])


@pytest.mark.parametrize(
    "text",
    [
        "how do we retry the webhook queue after a staging deploy",
        "Why does `npm ci` fail with E401 on node-gyp@9.4.0?",
        "Unaffable UNWANTED running!!! ...",
        "tab\there, new\nline, return\rfeed; vt\x0bff\x0cnul\x00del\x7fesc\x1b end",
        "a[MASK]b [CLS] x [SEP][PAD][UNK] [mask] [MAS K] [[SEP]] [MA\x00SK]",
        "x" * 100 + " " + "y" * 101 + " " + "ab" * 60,
        "   ",
        "",
        "##ing ## #hash # ###",
        "E1234 CACHE_VERSION=3 ~/.memmesh/store.db http://example.com/a?b=c&d=e",
        "qzxjqzxjqzxj unbelievableness zzzzzzzz supercalifragilisticexpialidocious",
    ],
)
def test_the_ids_are_the_packages(package: Tokenizer, vocabulary: Vocabulary, text: str) -> None:
    assert word_pieces(text, vocabulary) == _theirs(package, text)


def test_the_ids_of_many_random_ascii_texts_are_the_packages(
    package: Tokenizer, vocabulary: Vocabulary
) -> None:
    rng = random.Random(11)
    words = [token for token in _tokens() if token.isascii()][::7]
    pieces = [*string.printable, *"\x00\x01\x08\x0b\x0c\x0e\x1f\x7f", *SPECIAL_TOKENS]
    for _ in range(2000):
        parts = [
            rng.choice(words) if rng.random() < 0.6 else rng.choice(pieces)
            for _ in range(rng.randrange(0, 12))
        ]
        text = rng.choice(("", " ")).join(parts)
        if text.isascii():
            assert word_pieces(text, vocabulary) == _theirs(package, text), repr(text)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_any_ascii_text_reads_as_the_package_reads_it(
    package: Tokenizer, vocabulary: Vocabulary, text: str
) -> None:
    assert word_pieces(text, vocabulary) == _theirs(package, text)


def test_text_beyond_ascii_is_not_read_here(vocabulary: Vocabulary) -> None:
    with pytest.raises(ValueError, match="ASCII"):
        word_pieces("café au lait", vocabulary)


def test_a_vocabulary_without_the_unknown_token_is_refused(tmp_path: Path) -> None:
    damaged = tmp_path / "vocab.txt"
    damaged.write_text("[PAD]\nhello\n", encoding="utf-8")
    with pytest.raises(ValueError, match="UNK"):
        _wordpiece.vocabulary(damaged)


def test_a_lookup_table_without_the_unknown_token_or_of_another_shape_is_refused(
    tmp_path: Path,
) -> None:
    damaged = tmp_path / "vocab.npy"
    np.save(damaged, _wordpiece.lookup_table(["[PAD]", "hello"]))
    with pytest.raises(ValueError, match="UNK"):
        _wordpiece.vocabulary(damaged)
    np.save(damaged, np.arange(4))
    with pytest.raises(ValueError, match="lookup table"):
        _wordpiece.vocabulary(damaged)
    damaged.write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        _wordpiece.vocabulary(damaged)
