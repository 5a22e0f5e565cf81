"""Retracted text on disk, read from outside: every byte of every file in a folder.

Items made by :func:`secret_items` each hold two made-up words no dictionary has, one in the
text and one in the tags, so that a find in raw bytes means the item itself left it there.
The full-text index stores each word with only its difference from the word sorted before it
on the page (a count of shared leading characters, then the rest), so a word is looked for by
its tail (:func:`needles`): whatever of it the index still holds, the tail is in it.
"""

import random
from pathlib import Path
from typing import NamedTuple

_CONSONANTS = "bcdfghjklmnpqrstvwxz"


class SecretItem(NamedTuple):
    """One item whose text must not stay behind: its sentence and its two odd words."""

    text: str
    word: str
    tag: str


def odd_word(rng: random.Random) -> str:
    """A made-up lowercase word (``zq`` + ten consonants + ``ox``), stemmed to itself."""
    return "zq" + "".join(rng.choice(_CONSONANTS) for _ in range(10)) + "ox"


def secret_items(count: int, *, seed: int = 7, long_one: bool = True) -> list[SecretItem]:
    """``count`` items with odd words of their own; with ``long_one`` the first is long enough
    (about 6 KB) to spill into SQLite's overflow pages."""
    rng = random.Random(seed)
    items = []
    for n in range(count):
        word, tag = odd_word(rng), odd_word(rng)
        text = f"The {word} service restarts its workers {n} times before paging anyone"
        if long_one and n == 0:
            text += " " + " ".join(f"{word}{rng.randrange(10**6):06d}" for _ in range(300))
        items.append(SecretItem(text, word, tag))
    return items


def needles(item: SecretItem) -> list[bytes]:
    """What betrays the item in raw bytes: its sentence, and the tails of its odd words (six
    random letters and ``ox``: no other word shares them, nor that many leading letters)."""
    return [item.text[:60].encode(), item.word[-8:].encode(), item.tag[-8:].encode()]


def traces(folder: Path, items: list[SecretItem]) -> dict[str, list[str]]:
    """Each file of ``folder`` (recursively) in which some of ``items`` left a needle: the
    file's name, and each needle found there."""
    found: dict[str, list[str]] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        hits = [n.decode() for item in items for n in needles(item) if n in data]
        if hits:
            found[str(path.relative_to(folder))] = hits
    return found


def found_anywhere(folder: Path, items: list[SecretItem]) -> set[str]:
    """Every needle of ``items`` found in some file of ``folder``."""
    return {hit for hits in traces(folder, items).values() for hit in hits}


def all_needles(items: list[SecretItem]) -> set[str]:
    """Every needle of ``items``: what :func:`found_anywhere` finds while all are stored."""
    return {n.decode() for item in items for n in needles(item)}
