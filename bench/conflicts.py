"""Contradictions and duplicates between two memory texts: how well the word rules tell them
apart, and what a pair costs.

Run from the repository root::

    .venv/bin/python bench/conflicts.py                  # cosines from the default embedder
    .venv/bin/python bench/conflicts.py --pairs 20000    # a shorter timing

Reads ``bench/data/pairs.json``: invented pairs of software-team memories (decisions,
conventions, gotchas, commands, incidents, versions, ports, timeouts, tools, yes/no rules, "use
X" against "use Y"), each labelled ``contradicts``, ``duplicate`` or ``compatible``, with the
hard cases among them (one subject and another aspect, one number and another subject, "no
longer" updates that agree, restatements in other words, one fact about two services). Each
pair was put in a half, ``tune`` or ``report``, by the first byte of the SHA-256 of its two
texts, before any rule was written; the rules of :mod:`memmesh.consolidate.conflicts` were
chosen on the tune half only. Both halves are printed.

1. **Quality.** For each half, with words only and with the cosine of the two texts under the
   default embedder (what consolidation passes, since it compares only the pairs its vector
   index found near): precision and recall of ``contradicts`` and of ``duplicate``, beside the
   floors (on the report half: contradicts precision at least 0.9 and recall at least 0.6,
   duplicate precision at least 0.9), and the confusion matrix.
2. **Cost.** ``classify`` over ``--pairs`` random pairs of the set's texts (each call reads
   both texts), and ``classify_statements`` over the same pairs read once beforehand, and over
   the labelled pairs themselves (all near, the costly case). Goal: under 50 µs a pair for
   ``classify_statements``.

Printed: the machine and commit, the tables, and a verdict line (met or missed).
"""

import argparse
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple, get_args

from _common import cpu_count, cpu_model, load_average, log, source_revision, table
from memmesh.consolidate.conflicts import Relation, Statement, classify, classify_statements

PAIRS = Path(__file__).resolve().parent / "data" / "pairs.json"
Half = Literal["tune", "report"]
HALVES: tuple[Half, ...] = get_args(Half)
RELATIONS: tuple[Relation, ...] = get_args(Relation)
# (what, label, measure, floor): checked on the report half.
FLOORS = (
    ("contradicts precision", "contradicts", "precision", 0.9),
    ("contradicts recall", "contradicts", "recall", 0.6),
    ("duplicate precision", "duplicate", "precision", 0.9),
)
TIMED_PAIRS = 100_000
MAX_MICROSECONDS = 50.0
SEED = 7


@dataclass(frozen=True, slots=True)
class Pair:
    """One labelled pair of the set."""

    a: str
    b: str
    label: Relation
    half: Half
    why: str


def load(path: Path = PAIRS) -> list[Pair]:
    """The labelled pairs of ``path``."""
    return [Pair(**entry) for entry in json.loads(path.read_text(encoding="utf-8"))]


@dataclass(frozen=True, slots=True)
class Scores:
    """How the verdicts on some pairs fell: (truth, verdict) -> count."""

    confusion: Counter[tuple[str, str]]

    def precision(self, label: str) -> float:
        called = sum(self.confusion[(truth, label)] for truth in RELATIONS)
        return self.confusion[(label, label)] / called if called else 1.0

    def recall(self, label: str) -> float:
        labelled = sum(self.confusion[(label, verdict)] for verdict in RELATIONS)
        return self.confusion[(label, label)] / labelled if labelled else 1.0

    def measure(self, label: str, measure: str) -> float:
        return self.precision(label) if measure == "precision" else self.recall(label)


def score(pairs: Sequence[Pair], cosines: Sequence[float] | None = None) -> Scores:
    """The verdicts of :func:`classify` on ``pairs`` (given the ``cosines``, when given)."""
    confusion: Counter[tuple[str, str]] = Counter()
    for i, pair in enumerate(pairs):
        cosine = None if cosines is None else cosines[i]
        confusion[(pair.label, classify(pair.a, pair.b, cosine=cosine).relation)] += 1
    return Scores(confusion)


def floors_met(scores: Scores) -> bool:
    """Whether ``scores`` reach every floor of :data:`FLOORS`."""
    return all(scores.measure(label, how) >= floor for _, label, how, floor in FLOORS)


def cosines_of(pairs: Sequence[Pair]) -> list[float]:
    """The cosine of each pair's texts under the default embedder."""
    from memmesh.embed import get_embedder

    embedder = get_embedder()
    texts = sorted({text for pair in pairs for text in (pair.a, pair.b)})
    vectors = embedder.embed(texts)
    row = {text: i for i, text in enumerate(texts)}
    return [float(vectors[row[p.a]] @ vectors[row[p.b]]) for p in pairs]


def quality_rows(
    pairs: Sequence[Pair], cosines: Sequence[float]
) -> tuple[list[list[object]], dict[str, Scores]]:
    """Per half and with or without the cosine: the measures beside the floors."""
    rows: list[list[object]] = []
    every: dict[str, Scores] = {}
    for half in HALVES:
        chosen = [i for i, pair in enumerate(pairs) if pair.half == half]
        for mode, given in (("words", None), ("words + cosine", [cosines[i] for i in chosen])):
            scores = score([pairs[i] for i in chosen], given)
            every[f"{half}, {mode}"] = scores
            measures = [scores.measure(label, how) for _, label, how, _ in FLOORS]
            met = "yes" if floors_met(scores) else "no"
            rows.append([half, mode, len(chosen), *measures, scores.recall("duplicate"), met])
    return rows, every


def confusion_table(scores: Scores) -> str:
    rows = [[truth, *(scores.confusion[(truth, v)] for v in RELATIONS)] for truth in RELATIONS]
    return table(["truth \\ verdict", *RELATIONS], rows)


class Timing(NamedTuple):
    """What was timed, over how many calls, and the microseconds each took."""

    what: str
    calls: int
    micros: float


def timings(pairs: Sequence[Pair], count: int) -> list[Timing]:
    """Reading a text, and classifying a pair each way there is to call."""
    rng = random.Random(SEED)
    texts = sorted({text for pair in pairs for text in (pair.a, pair.b)})
    drawn = [(rng.choice(texts), rng.choice(texts)) for _ in range(count)]
    started = time.perf_counter()
    read = {text: Statement(text) for text in texts}
    reading = (time.perf_counter() - started) / len(texts)
    statements = [(read[a], read[b]) for a, b in drawn]
    near = [(read[p.a], read[p.b]) for p in pairs] * max(1, count // len(pairs))
    log("timing classify ...")
    timed = [Timing("Statement(text), once a text", len(texts), reading * 1e6)]
    timed.append(Timing("classify(a, b), random pairs", len(drawn), _texts_each(drawn) * 1e6))
    log("timing classify_statements ...")
    for what, given in (("random pairs", statements), ("labelled pairs", near)):
        each = _statements_each(given) * 1e6
        timed.append(Timing(f"classify_statements, {what}", len(given), each))
    return timed


def _texts_each(pairs: Sequence[tuple[str, str]]) -> float:
    """Seconds :func:`classify` takes a pair of texts."""
    started = time.perf_counter()
    for a, b in pairs:
        classify(a, b)
    return (time.perf_counter() - started) / len(pairs)


def _statements_each(pairs: Sequence[tuple[Statement, Statement]]) -> float:
    """Seconds :func:`classify_statements` takes a pair of statements."""
    started = time.perf_counter()
    for a, b in pairs:
        classify_statements(a, b)
    return (time.perf_counter() - started) / len(pairs)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=PAIRS, help="the labelled pairs")
    parser.add_argument("--pairs", type=int, default=TIMED_PAIRS, help="random pairs timed")
    args = parser.parse_args(argv)
    pairs = load(args.data)
    print("== memmesh conflicts benchmark (contradictions and duplicates between two memories)")
    print(f"machine: {cpu_model()}, {cpu_count()} CPUs; load {load_average()}")
    counts = Counter(f"{p.label} ({p.half})" for p in pairs)
    print(f"commit: {source_revision()}; {len(pairs)} pairs in {args.data.name}")
    print(", ".join(f"{n} {what}" for what, n in sorted(counts.items())))
    log("embedding the texts ...")
    cosines = cosines_of(pairs)
    rows, every = quality_rows(pairs, cosines)
    print(
        "\n== quality (floors, on the report half: contradicts precision >= 0.9, recall >= 0.6;"
        " duplicate precision >= 0.9)"
    )
    headers = ["half", "verdicts from", "pairs", "contra. precision", "contra. recall"]
    headers += ["dup. precision", "dup. recall", "floors met"]
    print(table(headers, rows))
    for name, scores in every.items():
        print(f"\n{name}")
        print(confusion_table(scores))
    costs = timings(pairs, args.pairs)
    print("\n== cost (one process, one thread)")
    rows = [[t.what, t.calls, t.micros, 1e6 / t.micros] for t in costs]
    print(table(["what", "calls", "µs each", "per second"], rows))
    fast = all(t.micros < MAX_MICROSECONDS for t in costs if "statements" in t.what)
    good = all(floors_met(every[f"report, {mode}"]) for mode in ("words", "words + cosine"))
    print(
        f"\nverdict: report-half floors {'met' if good else 'MISSED'}; classify_statements "
        f"under {MAX_MICROSECONDS:.0f} µs a pair {'met' if fast else 'MISSED'}"
    )
    return 0 if good and fast else 1


if __name__ == "__main__":
    sys.exit(main())
