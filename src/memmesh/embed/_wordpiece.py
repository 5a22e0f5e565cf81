"""The minilm-static tokenizer's word pieces for ASCII text, read in plain Python.

A recall embeds one question. Importing the tokenizers package and building its tokenizer
from ``minilm-static-tokenizer.json`` (466 kB) took about 20 ms of a `mem recall`'s start;
reading the same vocabulary as a plain list, ``minilm-static-vocab.txt`` (the JSON's
vocabulary, one token a line in id order, as BERT's ``vocab.txt``), takes about 4. So
:mod:`.minilm_static` reads a few ASCII texts here and everything else with the package.

For ASCII text every step of that tokenizer is a rule on a handful of characters, which is
why only such text is read here:

* the special tokens (``[CLS]``, ``[MASK]``...) are found in the text as written, before any
  other step, and read as their own ids;
* the BERT normalizer drops NUL and every control character but tab, newline and carriage
  return, which become spaces, and lowercases (ASCII has no accents to strip);
* the BERT pre-tokenizer splits at whitespace, and makes each punctuation mark a word;
* WordPiece reads each word greedily, the longest piece first, ``##`` before a piece that
  does not start the word; a word of more than 100 characters, or one with a part no piece
  matches, is one ``[UNK]``.

Beyond ASCII, which characters are controls, spaces or punctuation is a matter of Unicode
tables, and the package's are of its own version: such text is left to it.
tests/embed/test_wordpiece.py holds the ids equal to the package's, and the tokenizer's
settings to the ones read here.
"""

import re
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "MAX_WORD",
    "SPECIAL_TOKENS",
    "UNK",
    "VOCABULARY_FILE",
    "Vocabulary",
    "vocabulary",
    "word_pieces",
]

VOCABULARY_FILE = "minilm-static-vocab.txt"
UNK = "[UNK]"
# The tokenizer's added tokens, matched in the text as written (none is normalized).
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# A longer word is one unknown token.
MAX_WORD = 100
_PREFIX = "##"
_SPECIAL = re.compile("(" + "|".join(re.escape(token) for token in SPECIAL_TOKENS) + ")")
# What the normalizer does to ASCII: controls dropped (tab, newline, return: spaces), lowercase.
_NORMALIZED = str.maketrans(
    {
        **dict.fromkeys((*range(0x20), 0x7F)),
        **dict.fromkeys(map(ord, "\t\n\r"), " "),
        **{code: code + 32 for code in range(ord("A"), ord("Z") + 1)},
    }
)
# After that, a word is a run of letters and digits; every other character but the space is
# ASCII punctuation (Rust's ``is_ascii_punctuation``), a word of its own.
_WORDS = re.compile(r"[0-9a-z]+|[^ 0-9a-z]")


class Vocabulary(NamedTuple):
    """Each token's id, and the id of ``[UNK]``."""

    ids: dict[str, int]
    unknown: int


def vocabulary(path: Path) -> Vocabulary:
    """The vocabulary in ``path``, one token a line, in id order.

    Raises OSError or UnicodeDecodeError when it cannot be read, ValueError when it has no
    ``[UNK]`` or special token.
    """
    tokens = path.read_text(encoding="utf-8").split("\n")
    if tokens[-1] == "":  # the newline that ends the last line
        tokens.pop()
    ids = dict(zip(tokens, range(len(tokens)), strict=True))
    missing = [token for token in SPECIAL_TOKENS if token not in ids]
    if missing:
        raise ValueError(f"the vocabulary has no {', '.join(missing)}")
    return Vocabulary(ids, ids[UNK])


def word_pieces(text: str, vocabulary: Vocabulary) -> list[int]:
    """The ids of ``text``'s word pieces, without ``[CLS]`` and ``[SEP]`` around them: what
    the tokenizers package's ``encode(text, add_special_tokens=False).ids`` gives.

    Raises ValueError for a text that is not all ASCII (the package reads that).
    """
    if not text.isascii():
        raise ValueError("only ASCII text is read here")
    ids = vocabulary.ids
    out: list[int] = []
    # Split at the special tokens: every odd part is one of them.
    for n, part in enumerate(_SPECIAL.split(text)):
        if n % 2:
            out.append(ids[part])
            continue
        for word in _WORDS.findall(part.translate(_NORMALIZED)):
            _add_word(word, vocabulary, out)
    return out


def _add_word(word: str, vocabulary: Vocabulary, out: list[int]) -> None:
    """Append ``word``'s pieces to ``out``, longest first, or ``[UNK]`` if one part has none."""
    ids = vocabulary.ids
    if len(word) > MAX_WORD:
        out.append(vocabulary.unknown)
        return
    pieces: list[int] = []
    start = 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = ids.get(word[start:end] if start == 0 else _PREFIX + word[start:end])
            if piece is not None:
                pieces.append(piece)
                start = end
                break
        else:
            out.append(vocabulary.unknown)
            return
    out.extend(pieces)
