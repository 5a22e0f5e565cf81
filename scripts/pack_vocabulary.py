"""Write ``embed/weights/minilm-static-vocab-ascii.npy``, the lookup table of the minilm-static
vocabulary's ASCII word pieces, from ``minilm-static-vocab.txt`` beside it.

Run from the repository root after the vocabulary file changes::

    .venv/bin/python scripts/pack_vocabulary.py

tests/embed/test_wordpiece.py holds the file equal to what this writes.
"""

from pathlib import Path

import numpy as np

from memmesh.embed import _wordpiece


def main() -> None:
    weights = Path(_wordpiece.__file__).with_name("weights")
    tokens = (weights / _wordpiece.VOCABULARY_FILE).read_text(encoding="utf-8").split("\n")
    if tokens[-1] == "":
        tokens.pop()
    target = weights / _wordpiece.LOOKUP_FILE
    np.save(target, _wordpiece.lookup_table(tokens), allow_pickle=False)
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
