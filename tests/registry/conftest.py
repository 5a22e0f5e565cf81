"""Registry fixtures: this member's identity, the registry over the real store, a policy."""

from pathlib import Path

import pytest

from memmesh.local.store import Store
from memmesh.policy.config import Policy
from memmesh.registry import Identity, Registry, create_identity
from tests.registry._helpers import TEAM, make_policy


@pytest.fixture
def identity(home: Path) -> Identity:
    """A fresh key pair written to the memmesh home."""
    return create_identity(home)


@pytest.fixture
def other_identity(tmp_path: Path) -> Identity:
    """A second member's key pair, kept in a home of its own."""
    return create_identity(tmp_path / "other-home")


@pytest.fixture
def registry(store: Store, identity: Identity) -> Registry:
    """The log inside the real store, written with ``identity``."""
    return Registry(store, identity, TEAM)


@pytest.fixture
def policy() -> Policy:
    """A valid policy with a coordinator that shares facts, decisions and gotchas."""
    return make_policy()
