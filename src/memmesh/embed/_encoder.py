"""The MiniLM sentence encoder (all-MiniLM-L6-v2's six BERT layers) in plain numpy.

``minilm-static`` stores every text as a sum of static token rows, which is what makes a
reindex of 100k items take seconds. A question is one text, embedded once per recall, so it
can afford the encoder itself: read in context, "the pipeline build breaks" points where the
encoder puts CI failures, which a sum of rows only guesses. :func:`forward` is the encoder's
arithmetic; ``scripts/pack_query_encoder.py`` runs it on the teacher's float weights to pack
them (each matrix int8 with a scale per output, and the projection into the static table's
256 dimensions fitted on docstring sentences), and :class:`Encoder` runs it on those packed
weights for one query at a time.

The packed weights are two flat arrays, ``weights/minilm-query-int8.npy`` and
``-float32.npy``, and ``minilm-query.json``, which says where each tensor lies in them
(:func:`save`, :func:`load`). Both are mapped from disk, not read: a process reads the word
pieces' rows it looks up, and a query unpacks each matrix as the encoder comes to it (its
int8 codes cast to float32, as they are) into one block the size of the largest, 2.4 MB,
where the product reads it at once, from the cache; the scales then multiply the product's
few rows, not the matrix (which took a query 2 ms more). Unpacking all 36 matrices once, into 42 MB
that the process then kept, took 11 to 15 ms of a `mem recall` (writing 42 MB of fresh
memory); one at a time costs a query about 2 ms more, and the whole unpacked weights are
built only when :attr:`Encoder.weights` is asked for. Loading checks every tensor's name,
type and shape and that every float is finite, which is what running the encoder needs; it
runs no query. Each query's vector is checked to be finite as it is read (weights damaged
into huge numbers overflow).
"""

import json
import threading
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from memmesh.embed.errors import EmbedderDamaged

__all__ = [
    "CLS", "FILES", "MAX_TOKENS", "SEP", "Encoder", "encoder", "forward", "gelu", "load", "save",
]  # fmt: skip

F32 = npt.NDArray[np.float32]
Weights = Mapping[str, F32]

HIDDEN, HEADS, LAYERS = 384, 12, 6
# The width of the static table's space, which the projection maps the encoder into.
PROJECTED = 256
_EPS = np.float32(1e-12)
CLS, SEP = 101, 102
# The encoder reads a question's first 64 word pieces (a long prompt is read that far): the
# cost grows with the length, and a question is rarely longer.
MAX_TOKENS = 64
_INDEX = "minilm-query.json"
# The files of the packed encoder: the index, then one flat array per type it names.
FILES = (_INDEX, "minilm-query-int8.npy", "minilm-query-float32.npy")
_KINDS = {"int8": np.int8, "float32": np.float32}
# Each layer's matrices, (inputs, outputs), and its two norms: what :func:`forward` reads.
_MATRICES = {
    "attention.self.query": (HIDDEN, HIDDEN),
    "attention.self.key": (HIDDEN, HIDDEN),
    "attention.self.value": (HIDDEN, HIDDEN),
    "attention.output.dense": (HIDDEN, HIDDEN),
    "intermediate.dense": (HIDDEN, 4 * HIDDEN),
    "output.dense": (4 * HIDDEN, HIDDEN),
}
_NORMS = ("embeddings.LayerNorm", *(
    f"encoder.layer.{layer}.{norm}"
    for layer in range(LAYERS) for norm in ("attention.output.LayerNorm", "output.LayerNorm")
))  # fmt: skip
_WEIGHTS = Path(__file__).with_name("weights")


def gelu(x: F32) -> F32:
    """GELU with erf from Abramowitz and Stegun 7.1.26 (error below 1.5e-7)."""
    z = np.abs(x) * np.float32(1 / np.sqrt(2.0))
    t = 1.0 / (1.0 + np.float32(0.3275911) * z)
    poly = (
        (((np.float32(1.061405429) * t - np.float32(1.453152027)) * t + np.float32(1.421413741))
         * t - np.float32(0.284496736)) * t + np.float32(0.254829592)
    ) * t  # fmt: skip
    erf = np.sign(x) * (1.0 - poly * np.exp(-z * z))
    out: F32 = 0.5 * x * (1.0 + erf)
    return out


def _norm(w: Weights, x: F32, name: str) -> F32:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    out: F32 = (x - mu) / np.sqrt(var + _EPS) * w[name + ".weight"] + w[name + ".bias"]
    return out


def _linear(w: Weights, x: F32, name: str) -> F32:
    out: F32 = x @ w[name + ".weight"]
    scales = w.get(name + ".weight.scales")  # packed weights: the codes' scale per output
    if scales is not None:
        out *= scales
    out += w[name + ".bias"]
    return out


def forward(w: Weights, embedded: F32, mask: F32) -> F32:
    """The last hidden states, ``(batch, tokens, 384)``, of word-piece rows already looked up
    (``embedded``: ``(batch, tokens, 384)``) where ``mask`` is 1 for a real token.

    ``w`` holds the checkpoint's tensors under their names, except that each layer's weight
    matrix is transposed to ``(inputs, outputs)`` and contiguous: the product then reads it
    in order, which halves its time on one core. Packed weights hold each matrix's int8
    codes as float32, and beside them ``NAME.weight.scales``, a scale per output, which
    multiplies the product.
    """
    batch, length, _ = embedded.shape
    x = embedded + w["embeddings.position_embeddings.weight"][:length][None]
    x = _norm(w, x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    bias = ((1.0 - mask[:, None, None, :]) * -1e9).astype(np.float32)
    head = HIDDEN // HEADS
    scale = np.float32(1 / np.sqrt(head))

    def split(t: F32) -> F32:
        return t.reshape(batch, length, HEADS, head).transpose(0, 2, 1, 3)

    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."
        q = split(_linear(w, x, p + "attention.self.query"))
        k = split(_linear(w, x, p + "attention.self.key"))
        v = split(_linear(w, x, p + "attention.self.value"))
        att = q @ k.transpose(0, 1, 3, 2) * scale + bias
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(0, 2, 1, 3).reshape(batch, length, HIDDEN)
        x = _norm(w, x + _linear(w, ctx, p + "attention.output.dense"),
                  p + "attention.output.LayerNorm")  # fmt: skip
        inner = gelu(_linear(w, x, p + "intermediate.dense"))
        x = _norm(w, x + _linear(w, inner, p + "output.dense"), p + "output.LayerNorm")
    return x


class Encoder:
    """The packed encoder: word-piece ids in, a unit vector in the static table's space out."""

    def __init__(self, arrays: Mapping[str, npt.NDArray[np.generic]]) -> None:
        self._words = np.asarray(arrays["words.codes"], np.int8)
        self._word_scales = np.asarray(arrays["words.scales"], np.float32)
        self.projection = np.asarray(arrays["projection"], np.float32)
        # Each matrix as stored, (inputs, outputs) int8 with a scale per output; the rest
        # (biases, norms, positions) float32 as they are.
        self._matrices = {
            name.removesuffix(".codes"): (
                arrays[name],
                np.asarray(arrays[name.removesuffix(".codes") + ".scales"], np.float32),
            )
            for name in arrays
            if name.endswith(".codes") and name != "words.codes"
        }
        self._tensors: dict[str, F32] = {
            name: np.asarray(arrays[name], np.float32)
            for name in arrays
            if not name.endswith((".codes", ".scales")) and name != "projection"
        }
        self._largest = max(codes.size for codes, _ in self._matrices.values())
        self._whole: Weights | None = None
        self._unpacking = threading.Lock()

    @property
    def weights(self) -> Weights:
        """Every tensor :func:`forward` reads, the matrices' codes unpacked whole beside their
        scales (42 MB, built once when first asked for; a query does without them)."""
        with self._unpacking:
            if self._whole is None:
                self._whole = self._unpacked_whole()
            return self._whole

    def _unpacked_whole(self) -> Weights:
        # All of them in one block: one allocation that large is backed by huge pages where
        # the system offers them (numpy asks for them from 4 MB), so that writing the 42 MB
        # faults in a few pages rather than ten thousand; the values are the same.
        block = np.empty(sum(codes.size for codes, _ in self._matrices.values()), np.float32)
        weights: dict[str, F32] = {}
        start = 0
        for base, (codes, scales) in self._matrices.items():
            matrix = block[start : start + codes.size].reshape(codes.shape)
            matrix[...] = codes
            weights[base] = matrix
            weights[base + ".scales"] = scales
            start += codes.size
        return weights | self._tensors

    def rows(self, ids: npt.NDArray[np.intp]) -> F32:
        """The word-piece rows of ``ids`` (any shape; an id beyond the table reads its last row)."""
        ids = np.clip(ids, 0, self._words.shape[0] - 1)
        out: F32 = self._words[ids].astype(np.float32) * self._word_scales[ids][..., None]
        return out

    def __call__(self, ids: list[int]) -> F32:
        """The query of word pieces ``ids`` (no special tokens), read up to MAX_TOKENS."""
        pieces = np.array([[CLS, *ids[: MAX_TOKENS - 2], SEP]], dtype=np.intp)
        mask = np.ones(pieces.shape, np.float32)
        weights = self._whole or _OneAtATime(self._matrices, self._tensors, self._largest)
        with np.errstate(over="ignore", invalid="ignore"):  # checked below, said in words
            pooled = forward(weights, self.rows(pieces), mask)[0].mean(0)
            out: F32 = (pooled @ self.projection).astype(np.float32)
            norm = float(np.linalg.norm(out))
        if not (np.isfinite(norm) and np.isfinite(out).all()):
            raise EmbedderDamaged("minilm-static", "the query encoder reads a query as numbers "
                                  "that are not finite")  # fmt: skip
        return out / norm if norm > 0 else out


class _OneAtATime(Mapping[str, F32]):
    """The weights as one query reads them: each matrix unpacked when it is asked for, into
    this query's one block, over the matrix before it; every other tensor as it is stored.

    Only :func:`forward` reads it, which asks for each matrix once, in a product that is
    done before it asks for the next (each query has a block of its own: threads may read
    queries at once).
    """

    def __init__(
        self,
        matrices: Mapping[str, tuple[npt.NDArray[np.generic], F32]],
        tensors: Mapping[str, F32],
        largest: int,
    ) -> None:
        self._matrices = matrices
        self._tensors = tensors
        self._block = np.empty(largest, np.float32)

    def __getitem__(self, name: str) -> F32:
        if name in self._matrices:
            codes, _ = self._matrices[name]
            matrix: F32 = self._block[: codes.size].reshape(codes.shape)
            matrix[...] = codes
            return matrix
        if name.endswith(".scales") and name.removesuffix(".scales") in self._matrices:
            return self._matrices[name.removesuffix(".scales")][1]
        return self._tensors[name]

    def __iter__(self) -> Iterator[str]:
        scales = [f"{name}.scales" for name in self._matrices]
        return iter([*self._matrices, *scales, *self._tensors])

    def __len__(self) -> int:
        return 2 * len(self._matrices) + len(self._tensors)


def save(arrays: Mapping[str, npt.NDArray[np.generic]], folder: Path) -> None:
    """Write ``arrays`` (int8 codes and float32 tensors) as the packed encoder's files."""
    index: dict[str, dict[str, tuple[int, list[int]]]] = {kind: {} for kind in _KINDS}
    flat: dict[str, list[npt.NDArray[np.generic]]] = {kind: [] for kind in _KINDS}
    for name in sorted(arrays):
        kind = "int8" if arrays[name].dtype == np.int8 else "float32"
        value = np.ascontiguousarray(arrays[name], _KINDS[kind])
        index[kind][name] = (sum(part.size for part in flat[kind]), list(value.shape))
        flat[kind].append(value.ravel())
    for kind, parts in flat.items():
        np.save(folder / f"minilm-query-{kind}.npy", np.concatenate(parts))
    (folder / _INDEX).write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")


def load(folder: Path) -> Encoder:
    """The encoder packed in ``folder``, its tensors checked before it is trusted: damaged or
    foreign files are :class:`EmbedderDamaged` here, not an error in the middle of a recall
    (only weights damaged into huge finite numbers wait for the query they overflow on)."""
    try:
        index = json.loads((folder / _INDEX).read_text(encoding="utf-8"))
        arrays: dict[str, npt.NDArray[np.generic]] = {}
        for kind, dtype in _KINDS.items():
            # A plain view of the mapping: numpy's memmap class would run Python code for
            # every array taken from it, on every query.
            flat = np.asarray(np.load(folder / f"minilm-query-{kind}.npy", mmap_mode="r"))
            if flat.dtype != dtype or flat.ndim != 1:
                raise ValueError(f"the {kind} file holds {flat.dtype} in {flat.ndim} dimensions")
            if kind == "float32" and not np.isfinite(flat).all():
                raise ValueError("the float32 file holds numbers that are not finite")
            for name, (start, shape) in dict(index[kind]).items():
                size = int(np.prod(shape))
                if start < 0 or start + size > flat.size:
                    raise ValueError(f"{name} lies beyond the end of its file")
                arrays[name] = flat[start : start + size].reshape(shape)
        _check(arrays)
        packed = Encoder(arrays)
    except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError) as error:
        raise EmbedderDamaged("minilm-static", f"the query encoder: {error}") from None
    return packed


def _check(arrays: Mapping[str, npt.NDArray[np.generic]]) -> None:
    """Raise ValueError unless ``arrays`` holds every tensor :func:`forward` and
    :class:`Encoder` read, each of its type and shape (extra tensors are left unread)."""
    words = arrays["words.codes"].shape[0] if "words.codes" in arrays else 0
    expected: dict[str, tuple[int, ...]] = {
        "words.codes": (words, HIDDEN),
        "words.scales": (words,),
        "projection": (HIDDEN, PROJECTED),
        "embeddings.position_embeddings.weight": (MAX_TOKENS, HIDDEN),
        "embeddings.token_type_embeddings.weight": (2, HIDDEN),
    }
    for norm in _NORMS:
        expected |= {f"{norm}.weight": (HIDDEN,), f"{norm}.bias": (HIDDEN,)}
    for layer in range(LAYERS):
        for name, (inputs, outputs) in _MATRICES.items():
            base = f"encoder.layer.{layer}.{name}"
            expected |= {
                f"{base}.weight.codes": (inputs, outputs),
                f"{base}.weight.scales": (outputs,),
                f"{base}.bias": (outputs,),
            }
    for name, shape in expected.items():
        if name not in arrays:
            raise ValueError(f"{name} is missing")
        dtype = np.int8 if name.endswith(".codes") else np.float32
        if arrays[name].shape != shape or arrays[name].dtype != dtype:
            raise ValueError(f"{name} is {arrays[name].dtype} of shape {arrays[name].shape}")
    if words < 1:
        raise ValueError("the word pieces' table is empty")


def encoder() -> Encoder:
    """The packed encoder of the package, mapped once per process, on the first query (one
    thread loads it; the others wait for it rather than each unpacking 40 MB)."""
    with _loading:
        return _packaged()


_loading = threading.Lock()


@cache
def _packaged() -> Encoder:
    # The files beside this module: a package read from a zip file has none, and is damaged.
    return load(_WEIGHTS)
