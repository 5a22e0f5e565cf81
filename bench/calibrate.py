"""Each embedder's cosine between unrelated texts: the background that calibrates recall's gate.

Run from the repository root::

    .venv/bin/python bench/calibrate.py                       # every installed embedder
    .venv/bin/python bench/calibrate.py --embedder wordllama --pairs 2000

A query and a stored text picked at random from different modules of this Python's own
standard library (sentences of their docstrings, 6 to 50 words; the same on every machine
with the same Python version) are almost always unrelated; the first is embedded as a query,
the second as a stored text. The median and spread of their cosines are what an embedder
gives a query for a fact it has nothing to do with; recall measures every cosine in those
units (``(cosine - median) / spread``), so that one setting of its gate means the same for
every embedder. The figures printed here are the ``unrelated`` constants each embedder
declares in ``src/memmesh/embed/``.
"""

import argparse
import ast
import random
import re
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from _common import log, table
from memmesh.embed import EMBEDDER_NAMES, EmbedError, get_embedder

_SEED = 20261201
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def stdlib_sentences() -> dict[str, list[str]]:
    """Docstring sentences of the standard library, by module file (tests left out)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    out: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        if {"test", "tests", "idlelib", "site-packages"} & set(path.parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue
        found: list[str] = []
        for node in ast.walk(tree):
            if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef):
                continue
            doc = ast.get_docstring(node) or ""
            for paragraph in re.split(r"\n\s*\n", doc):
                if ">>>" in paragraph:
                    continue
                for sentence in _SENTENCE.split(" ".join(paragraph.split())):
                    if 6 <= len(sentence.split()) <= 50:
                        found.append(sentence)
        if found:
            out[str(path.relative_to(root))] = found
    return out


def unrelated_pairs(count: int) -> tuple[list[str], list[str]]:
    """``count`` pairs of sentences from two different modules, the same every run."""
    by_module = stdlib_sentences()
    modules = sorted(by_module)
    rng = random.Random(_SEED)
    left: list[str] = []
    right: list[str] = []
    while len(left) < count:
        first, second = rng.sample(modules, 2)
        left.append(rng.choice(by_module[first]))
        right.append(rng.choice(by_module[second]))
    return left, right


def background(embedder: str, left: list[str], right: list[str]) -> list[object]:
    """Median and spread of the pairs' cosines, and their upper percentiles.

    The spread is the median absolute deviation scaled to a standard deviation (x 1.4826):
    the library repeats a few stock sentences across modules, and those rare near-copies
    would inflate a plain standard deviation.
    """
    model = get_embedder(embedder)
    # One side asked as a query, the other stored: e5 embeds the two differently.
    queries = np.stack([model.embed_query(text) for text in left])
    cosines = np.sum(queries * model.embed(right), axis=1, dtype=np.float64)
    median = float(np.median(cosines))
    spread = 1.4826 * float(np.median(np.abs(cosines - median)))
    p99, p999 = np.percentile(cosines, [99, 99.9])
    return [embedder, len(left), median, spread, p99, p999]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--embedder", choices=EMBEDDER_NAMES, action="append")
    parser.add_argument("--pairs", type=int, default=2000, help="pairs to embed (2000)")
    args = parser.parse_args(argv)
    left, right = unrelated_pairs(args.pairs)
    rows = []
    for name in args.embedder or EMBEDDER_NAMES:
        log(f"[{name}] embedding {2 * args.pairs} sentences")
        try:
            rows.append(background(name, left, right))
        except EmbedError as error:
            log(f"[{name}] skipped: {error}")
    print(f"== unrelated cosines, Python {sys.version.split()[0]} standard library docstrings")
    print(table(["embedder", "pairs", "median", "spread", "p99", "p99.9"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
