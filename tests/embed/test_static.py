"""The optional static embedder (WordLlama ``l2_supercat``): offline, deterministic unit vectors
whose space is named by the package's version."""

import importlib.metadata
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memmesh.embed import EmbedderUnavailable, get_embedder
from memmesh.local.store import Store
from tests.conftest import MemRunner

# `.ci/run` installs the extra (memmesh[static]): in CI a missing package fails these tests.
requires_static = pytest.mark.skipif(
    importlib.util.find_spec("wordllama") is None and not os.environ.get("CI"),
    reason="the optional static extra (memmesh[static]) is not installed",
)

TEXTS = [
    "ING-4471 means the Kafka consumer lost its partition assignment mid-commit",
    "Use pnpm in the frontend",
    "x",
]
# Any connection at all fails the child; HF_HUB_OFFLINE covers the Hugging Face clients too.
_OFFLINE_CHILD = """
import socket, sys
def refuse(*args, **kwargs):
    raise OSError("network used")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from memmesh.embed import get_embedder
vectors = get_embedder("wordllama").embed(sys.argv[1:])
sys.stdout.write(vectors.tobytes().hex())
"""


class _Refused(Exception):
    """A connection the code under test tried to open."""


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every socket connection in this process refused and recorded."""
    attempts: list[object] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        raise _Refused(args)

    for name in ("connect", "connect_ex"):
        monkeypatch.setattr(socket.socket, name, refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return attempts


@requires_static
def test_vectors_are_256_float32_unit_rows_and_empty_text_is_zero() -> None:
    vectors = get_embedder("wordllama").embed([*TEXTS, ""])
    assert vectors.shape == (4, 256)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, atol=1e-5)
    assert not vectors[3].any()
    assert get_embedder("wordllama").embed([]).shape == (0, 256)


@requires_static
def test_vectors_are_wordllamas_own_normalised_mean() -> None:
    import wordllama

    model = wordllama.WordLlama.load(
        cache_dir=Path(wordllama.__file__).parent, disable_download=True
    )
    theirs = model.embed(TEXTS, norm=True)
    assert np.allclose(get_embedder("wordllama").embed(TEXTS), theirs, atol=1e-5)


@requires_static
def test_query_vector_equals_the_stored_text_vector() -> None:
    embedder = get_embedder("wordllama")
    assert np.array_equal(embedder.embed_query(TEXTS[0]), embedder.embed([TEXTS[0]])[0])


@requires_static
def test_a_batch_gives_each_text_the_vector_it_has_alone() -> None:
    embedder = get_embedder("wordllama")
    batch = embedder.embed(TEXTS)
    for row, text in enumerate(TEXTS):
        assert np.allclose(batch[row], embedder.embed([text])[0], atol=1e-6)


@requires_static
def test_loads_and_embeds_with_every_connection_refused(no_network: list[object]) -> None:
    vectors = get_embedder("wordllama").embed(TEXTS)
    assert vectors.shape == (3, 256)
    assert no_network == []


@requires_static
def test_another_process_offline_gives_the_same_vectors() -> None:
    child = subprocess.run(
        [sys.executable, "-c", _OFFLINE_CHILD, *TEXTS],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONHASHSEED": "12345"},
        timeout=60,
    )
    assert child.returncode == 0, child.stderr
    here = get_embedder("wordllama").embed(TEXTS)
    assert bytes.fromhex(child.stdout) == here.tobytes()


@requires_static
def test_a_package_without_its_tokenizer_file_is_unavailable_not_downloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: list[object]
) -> None:
    import wordllama

    # The package's folder as a broken install would leave it: the weights, no tokenizers/.
    broken = tmp_path / "wordllama"
    shutil.copytree(Path(wordllama.__file__).parent / "weights", broken / "weights")
    monkeypatch.setattr(wordllama, "__file__", str(broken / "__init__.py"))
    with pytest.raises(EmbedderUnavailable) as caught:
        get_embedder("wordllama")
    assert (caught.value.name, caught.value.extra) == ("wordllama", "static")
    assert no_network == []


@requires_static
def test_related_wording_is_closer_than_an_unrelated_sentence() -> None:
    stored, asked, unrelated = get_embedder("wordllama").embed(
        [
            "SSH to production goes through the bastion host in each region",
            "how do I log in to a prod server through the jump box",
            "The cafeteria serves pizza on Fridays",
        ]
    )
    assert float(stored @ asked) > float(stored @ unrelated) + 0.1


@requires_static
def test_fingerprint_changes_with_the_package_version(monkeypatch: pytest.MonkeyPatch) -> None:
    installed = importlib.metadata.version("wordllama")
    assert get_embedder("wordllama").fingerprint == f"wordllama-l2_supercat-{installed}-d256"
    real = importlib.metadata.version

    def reported(distribution: str) -> str:
        return "9.9.9" if distribution == "wordllama" else real(distribution)

    monkeypatch.setattr(importlib.metadata, "version", reported)
    assert get_embedder("wordllama").fingerprint == "wordllama-l2_supercat-9.9.9-d256"


def test_wordllama_without_its_extra_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes `import wordllama` raise ImportError, as if it were not installed.
    monkeypatch.setitem(sys.modules, "wordllama", None)
    with pytest.raises(EmbedderUnavailable) as caught:
        get_embedder("wordllama")
    assert (caught.value.name, caught.value.extra) == ("wordllama", "static")
    assert "pip install 'memmesh[static]'" in str(caught.value)


@requires_static
def test_a_store_switched_to_wordllama_recalls_through_the_cli(home: Path, mem: MemRunner) -> None:
    with Store(home, author="tester") as store:
        store.remember("Webhooks retry five times with exponential backoff")
    switched = mem("reindex", "--embedder", "wordllama", env={"HF_HUB_OFFLINE": "1"})
    assert switched.returncode == 0, switched.stderr
    found = mem("recall", "webhook retries", env={"HF_HUB_OFFLINE": "1"})
    assert found.returncode == 0, found.stderr
    assert "Webhooks retry five times" in found.stdout
    with Store(home, embedder="wordllama") as store:
        assert store.embedder.fingerprint.startswith("wordllama-l2_supercat-")
