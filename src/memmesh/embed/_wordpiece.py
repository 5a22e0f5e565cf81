"""The minilm-static tokenizer's word pieces for ASCII text, read in plain Python.

A recall embeds one question. Importing the tokenizers package and building its tokenizer
from ``minilm-static-tokenizer.json`` (466 kB) took about 20 ms of a `mem recall`'s start;
making a dict of the same vocabulary, ``minilm-static-vocab.txt`` (the JSON's vocabulary, one
token a line in id order, as BERT's ``vocab.txt``), took 7. What is read here instead is
``minilm-static-vocab-ascii.npy``: the vocabulary's ASCII tokens in byte order, each beside
its id (:func:`lookup_table` makes it from the text file, ``scripts/pack_vocabulary.py``
writes it), loaded in a fraction of a millisecond, where a word piece is found by binary
search. So :mod:`.minilm_static` reads a few ASCII texts here and everything else with the
package.

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
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

__all__ = [
    "LOOKUP_FILE",
    "MAX_WORD",
    "SPECIAL_TOKENS",
    "UNK",
    "VOCABULARY_FILE",
    "Vocabulary",
    "lookup_table",
    "vocabulary",
    "word_pieces",
]

VOCABULARY_FILE = "minilm-static-vocab.txt"
LOOKUP_FILE = "minilm-static-vocab-ascii.npy"
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


class Vocabulary:
    """The ASCII word pieces of a vocabulary, found by their text (:meth:`id_of`).

    ``table`` is :func:`lookup_table`'s: each ASCII token (NUL-padded bytes) in byte order
    beside its id. Raises ValueError for a table of another shape, or without ``[UNK]`` or a
    special token.
    """

    def __init__(self, table: npt.NDArray[np.void]) -> None:
        if table.dtype.names != ("token", "id") or table.ndim != 1:
            raise ValueError(f"a lookup table of dtype {table.dtype} and shape {table.shape}")
        self._tokens = np.ascontiguousarray(table["token"])
        self._ids = table["id"]
        self._longest = table.dtype["token"].itemsize
        # One more than the largest id: the rows a table of word vectors must have.
        self.size = int(self._ids.max()) + 1 if len(self._ids) else 0
        found = {token: self.id_of(token) for token in SPECIAL_TOKENS}
        missing = [token for token, id_ in found.items() if id_ is None]
        if missing:
            raise ValueError(f"the vocabulary has no {', '.join(missing)}")
        self.special = {token: id_ for token, id_ in found.items() if id_ is not None}
        self.unknown = self.special[UNK]

    def id_of(self, token: str) -> int | None:
        """The id of the ASCII ``token``, or ``None`` when the vocabulary has no such piece."""
        if len(token) > self._longest:
            return None
        key = token.encode("ascii")
        at = int(np.searchsorted(self._tokens, key))
        if at < len(self._tokens) and self._tokens[at] == key:
            return int(self._ids[at])
        return None


def lookup_table(tokens: Sequence[str]) -> npt.NDArray[np.void]:
    """The ASCII ones of ``tokens`` (a vocabulary in id order) in byte order, each beside its
    id: what :class:`Vocabulary` searches, and what ``LOOKUP_FILE`` holds."""
    ascii_ids = sorted(
        (token.encode("ascii"), id_) for id_, token in enumerate(tokens) if token.isascii()
    )
    longest = max((len(token) for token, _ in ascii_ids), default=1)
    table = np.empty(len(ascii_ids), dtype=[("token", f"S{longest}"), ("id", "<u4")])
    table["token"] = [token for token, _ in ascii_ids]
    table["id"] = [id_ for _, id_ in ascii_ids]
    return table


def vocabulary(path: Path) -> Vocabulary:
    """The vocabulary in ``path``: a lookup table (``.npy``, see :func:`lookup_table`), or a
    text file of one token a line, in id order.

    Raises OSError or UnicodeDecodeError when it cannot be read, ValueError when it is no
    table or has no ``[UNK]`` or special token.
    """
    if path.suffix == ".npy":
        try:
            return Vocabulary(np.load(path, allow_pickle=False))
        except EOFError:  # an empty file
            raise ValueError(f"{path.name} is empty") from None
    tokens = path.read_text(encoding="utf-8").split("\n")
    if tokens[-1] == "":  # the newline that ends the last line
        tokens.pop()
    return Vocabulary(lookup_table(tokens))


def word_pieces(text: str, vocabulary: Vocabulary) -> list[int]:
    """The ids of ``text``'s word pieces, without ``[CLS]`` and ``[SEP]`` around them: what
    the tokenizers package's ``encode(text, add_special_tokens=False).ids`` gives.

    Raises ValueError for a text that is not all ASCII (the package reads that).
    """
    if not text.isascii():
        raise ValueError("only ASCII text is read here")
    out: list[int] = []
    # Split at the special tokens: every odd part is one of them.
    for n, part in enumerate(_SPECIAL.split(text)):
        if n % 2:
            out.append(vocabulary.special[part])
            continue
        for word in _WORDS.findall(part.translate(_NORMALIZED)):
            _add_word(word, vocabulary, out)
    return out


def _add_word(word: str, vocabulary: Vocabulary, out: list[int]) -> None:
    """Append ``word``'s pieces to ``out``, longest first, or ``[UNK]`` if one part has none."""
    if len(word) > MAX_WORD:
        out.append(vocabulary.unknown)
        return
    pieces: list[int] = []
    start = 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = vocabulary.id_of(word[start:end] if start == 0 else _PREFIX + word[start:end])
            if piece is not None:
                pieces.append(piece)
                start = end
                break
        else:
            out.append(vocabulary.unknown)
            return
    out.extend(pieces)
