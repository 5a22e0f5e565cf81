"""The minilm-static embedder: weights shipped in the package, offline, deterministic unit
vectors in which a paraphrase stands closer than an unrelated text."""

import hashlib
import subprocess
import sys
from importlib import resources

import numpy as np
import pytest

from memmesh.embed import closeness, get_embedder, minilm_static
from memmesh.embed.minilm_static import MiniLMStaticEmbedder

# Any connection at all fails the child: the weights and the tokenizer are package files.
_OFFLINE_CHILD = """
import socket, sys
def refuse(*args, **kwargs):
    raise OSError("network used")
socket.socket.connect = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from memmesh.embed import get_embedder
model = get_embedder("minilm-static")
sys.stdout.write(model.embed(sys.argv[1:]).tobytes().hex())
sys.stdout.write(" " + model.embed_query(sys.argv[1]).tobytes().hex())
"""


@pytest.fixture(scope="module")
def embedder() -> MiniLMStaticEmbedder:
    return MiniLMStaticEmbedder()


def test_it_is_the_default_embedder() -> None:
    assert isinstance(get_embedder(), MiniLMStaticEmbedder)


def test_vectors_are_unit_rows_of_the_declared_width(embedder: MiniLMStaticEmbedder) -> None:
    vectors = embedder.embed(["Use pnpm in the frontend", "ING-4471 means a lost partition"])
    assert vectors.shape == (2, 256)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_an_empty_text_is_a_zero_row_and_no_text_is_no_row(embedder: MiniLMStaticEmbedder) -> None:
    assert not embedder.embed(["", "   "]).any()
    assert embedder.embed([]).shape == (0, 256)


def test_a_paraphrase_is_closer_than_an_unrelated_text(embedder: MiniLMStaticEmbedder) -> None:
    fact, paraphrase, unrelated = embedder.embed(
        [
            "SSH into production only through the bastion host in the ops VPC",
            "How do I reach the prod servers? Is there a jump host?",
            "The quarterly offsite is in Lisbon and flights are booked by the office",
        ]
    )
    near = closeness(float(fact @ paraphrase), embedder.unrelated)
    far = closeness(float(fact @ unrelated), embedder.unrelated)
    assert near > 2.0 > far


def test_a_query_is_a_unit_row_in_the_stored_texts_space(embedder: MiniLMStaticEmbedder) -> None:
    text = "Retry the deploy with --force only after the lock expired"
    query = embedder.embed_query(text)
    assert query.shape == (256,)
    assert query.dtype == np.float32
    assert float(np.linalg.norm(query)) == pytest.approx(1.0, rel=1e-5)
    # Read by the encoder, not summed, yet in the same space: the text asked for finds itself.
    assert not np.array_equal(query, embedder.embed([text])[0])
    assert closeness(float(query @ embedder.embed([text])[0]), embedder.unrelated) > 4.0


_CAUSES = [
    "Run cargo sqlx prepare after changing a query, or the offline build in CI fails",
    "SSH to production goes through the bastion host in the ops VPC",
    "The staging database is wiped every Sunday night, so keep no test data there",
    "Pods are refused when the namespace ResourceQuota for memory is used up",
    "Release builds are signed with the key in the vault path mobile/signing",
    "Flaky UI tests usually mean animations were left on in the emulator",
]
_SYMPTOMS = [
    "I edited a SQL statement and now the pipeline breaks, though it builds locally",
    "How do I reach the prod servers? Is there a jump host?",
    "My test records on the pre-production DB disappeared after the weekend",
    "New workloads can't start in our cluster namespace, what limit did we hit?",
    "Where does the certificate for signing the app live?",
    "Why do the interface tests pass sometimes and fail other times on the virtual device?",
]


def test_a_question_in_other_words_finds_the_text_that_answers_it(
    embedder: MiniLMStaticEmbedder,
) -> None:
    stored = embedder.embed(_CAUSES)
    for index, question in enumerate(_SYMPTOMS):
        assert int(np.argmax(stored @ embedder.embed_query(question))) == index, question


def test_an_empty_query_is_a_zero_row_and_a_long_one_is_read(
    embedder: MiniLMStaticEmbedder,
) -> None:
    assert not embedder.embed_query("   ").any()
    long = embedder.embed_query("the deploy lock expired again " * 400)
    assert float(np.linalg.norm(long)) == pytest.approx(1.0, rel=1e-5)


def test_vectors_are_the_same_in_another_process_with_no_network() -> None:
    texts = ["Kafka consumer lost its partition", "x"]
    child = subprocess.run(
        [sys.executable, "-c", _OFFLINE_CHILD, *texts], capture_output=True, text=True, check=True
    )
    model = get_embedder("minilm-static")
    stored, query = child.stdout.split()
    assert bytes.fromhex(stored) == model.embed(texts).tobytes()
    assert bytes.fromhex(query) == model.embed_query(texts[0]).tobytes()


def _digests(names: dict[str, str]) -> dict[str, str]:
    folder = resources.files("memmesh.embed") / "weights"
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in names}


def test_the_weights_are_the_version_the_fingerprint_names() -> None:
    # Changing the files without raising the version would put new vectors in a space named
    # like the old one: the module names the digest of the weights its version stands for.
    assert _digests(minilm_static.WEIGHTS_SHA256) == minilm_static.WEIGHTS_SHA256
    assert MiniLMStaticEmbedder.fingerprint == "minilm-static-v1-d256"


def test_the_query_encoder_is_the_one_its_calibration_was_measured_on() -> None:
    assert _digests(minilm_static.QUERY_WEIGHTS_SHA256) == minilm_static.QUERY_WEIGHTS_SHA256


_ASCII = [
    "Run cargo sqlx prepare after changing a query, or the offline build in CI fails",
    "Why does `npm ci` fail with E401 on node-gyp@9.4.0? [SEP] see\tthe\nlog",
    *(f"retry the webhook queue {n} times after a staging deploy" for n in range(15)),
]


def test_a_few_ascii_texts_are_embedded_as_a_large_batch_is(
    embedder: MiniLMStaticEmbedder,
) -> None:
    # Up to 16 ASCII texts are read into word pieces in Python, a larger batch by the
    # tokenizers package: the vectors are the same to the bit.
    assert len(_ASCII) > 16
    batch = embedder.embed(_ASCII)
    alone = np.stack([embedder.embed([text])[0] for text in _ASCII])
    assert batch.tobytes() == alone.tobytes()
    assert embedder.embed(["naïve café – 東京", *_ASCII[:2]]).tobytes() == b"".join(
        embedder.embed([text]).tobytes() for text in ["naïve café – 東京", *_ASCII[:2]]
    )


_QUERY_CHILD = """
import sys
from memmesh.embed import get_embedder
vector = get_embedder("minilm-static").embed_query(sys.argv[1])
sys.stdout.write(vector.tobytes().hex() + " " + str("tokenizers" in sys.modules))
"""


@pytest.mark.parametrize(("query", "package"), [(_ASCII[1], False), ("où est le café ?", True)])
def test_an_ascii_query_is_read_without_the_tokenizers_package(
    embedder: MiniLMStaticEmbedder, query: str, package: bool
) -> None:
    child = subprocess.run(
        [sys.executable, "-c", _QUERY_CHILD, query], capture_output=True, text=True, check=True
    )
    vector, imported = child.stdout.split()
    assert bytes.fromhex(vector) == embedder.embed_query(query).tobytes()
    assert imported == str(package)
