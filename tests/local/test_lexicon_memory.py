"""The lexicon's memory: a few bytes per byte of text whatever the words, no Python object per
term, and refreshes that tokenize a bounded part at a time."""

import gc
import random
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from memmesh.local import _fts5_tokens, _lexicon, _vocabulary
from memmesh.local._vocabulary import EMPTY_VOCABULARY
from memmesh.local.store import Store
from tests.local.test_lexicon import _fts_and_lexicon

# The most bytes the lexicon may hold per byte of text in the index (measured: about 9 for
# items of random words, each one a new term).
BYTES_PER_TEXT_BYTE = 12


def _random_text(rng: random.Random, size: int) -> str:
    words: list[str] = []
    while sum(map(len, words)) + len(words) < size:
        words.append("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(7)))
    return " ".join(words)


def _put_all(store: Store, texts: list[str]) -> None:
    for index, text in enumerate(texts):
        store.put(
            item_id=f"01JC0PY{index:019d}", text=text, kind="fact", project="global", tags=(),
            author="bob", created_at=0.0, vector=None,
        )  # fmt: skip


def _reachable(root: object) -> list[object]:
    """Every object reachable from ``root`` through data (not through classes, modules or
    functions), each once; a dict's keys too (the collector skips keys that are strings)."""
    skip = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)
    seen: dict[int, object] = {}
    todo = [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, skip):
            continue
        seen[id(obj)] = obj
        todo.extend(gc.get_referents(obj))
        if isinstance(obj, dict):
            todo.extend(obj)
    return list(seen.values())


def _deep_size(root: object) -> int:
    """Bytes of every object reachable from ``root``, an array's buffer counted once."""
    objects = _reachable(root)
    buffers = {
        id(obj.base): obj.base.nbytes
        for obj in objects
        if isinstance(obj, np.ndarray) and isinstance(obj.base, np.ndarray)
    }
    return sum(sys.getsizeof(obj) for obj in objects) + sum(buffers.values())


def test_items_of_random_words_cost_a_few_bytes_per_byte_of_text(home: Path) -> None:
    rng = random.Random(5)
    texts = [_random_text(rng, 4000) for _ in range(60)]
    with Store(home, author="tester", lexicon=True) as store:
        _put_all(store, texts)
        store.warm()
        assert store.index.lexicon is not None
        view = store.index.lexicon.view()
        assert len(view.vocabulary) > 30_000  # nearly every word is a term of its own
        text_bytes = sum(map(len, texts))
        assert _deep_size(store.index.lexicon) <= BYTES_PER_TEXT_BYTE * text_bytes
        assert sum(isinstance(o, str) for o in _reachable(store.index.lexicon)) < 100


def test_a_refresh_tokenizes_a_bounded_part_at_a_time(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(6)
    monkeypatch.setattr(_lexicon, "_PART_CHARS", 3000)
    sizes: list[int] = []
    tokenize = _fts5_tokens.row_tokens

    def counting(rows: list[tuple[int, str, str, str]]) -> list[tuple[str, int, str, int]]:
        sizes.append(sum(len(text) + len(tags) for _, text, tags, _ in rows))
        return tokenize(rows)

    monkeypatch.setattr(_lexicon, "row_tokens", counting)
    with Store(home, author="tester", lexicon=True) as store:
        _put_all(store, [_random_text(rng, 1000) + " webhooks retry" for _ in range(30)])
        store.warm()
        assert len(sizes) >= 10
        assert max(sizes) < 3000 + 1100  # the part's size, and the row that crossed it
        fts, mine = _fts_and_lexicon(store, "webhooks retry", "global", 50, None)
        assert mine == fts
        assert len(mine) == 30


def test_terms_of_the_same_hash_stay_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_vocabulary, "hash", lambda term: len(term) % 2, raising=False)
    words = ["webhook", "retry", "billing", "straße", "a", "日本"]
    vocabulary, ids = EMPTY_VOCABULARY.with_terms(words[:3])
    assert ids.tolist() == [0, 1, 2]
    vocabulary, ids = vocabulary.with_terms(words[2:])
    assert ids.tolist() == [2, 3, 4, 5]
    assert [vocabulary.get(word) for word in words] == [0, 1, 2, 3, 4, 5]
    assert vocabulary.get("queues") is None
    kept = vocabulary.keeping(np.array([True, False, True, False, True, True]))
    assert list(kept) == ["webhook", "billing", "a", "日本"]
    assert [kept.get(word) for word in words] == [0, None, 1, None, 2, 3]
