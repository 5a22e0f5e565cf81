"""Registry fixtures: this member's identity, the registry over the real store, a policy."""

from collections.abc import Callable
from pathlib import Path

import pytest

from memmesh.local.store import Store
from memmesh.policy.config import Policy
from memmesh.registry import Identity, Registry, create_identity
from memmesh.registry.roster_chain import join
from tests.registry._chain import Chain
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


@pytest.fixture
def member(tmp_path: Path) -> Callable[[str], Identity]:
    """Makes a member's real key pair, each in a home of its own."""
    return lambda name: create_identity(tmp_path / name)


@pytest.fixture
def ada(member: Callable[[str], Identity]) -> Identity:
    return member("ada")


@pytest.fixture
def bob(member: Callable[[str], Identity]) -> Identity:
    return member("bob")


@pytest.fixture
def cy(member: Callable[[str], Identity]) -> Identity:
    return member("cy")


@pytest.fixture
def operator(member: Callable[[str], Identity]) -> Identity:
    """The coordinator operator's own key: on no roster."""
    return member("operator")


@pytest.fixture
def chain(ada: Identity) -> Chain:
    return Chain(ada)


@pytest.fixture
def with_bob(chain: Chain, ada: Identity, bob: Identity) -> Chain:
    """ada's team, which ada's invite let bob join as a plain member."""
    secret = chain.invited(ada, "bob")
    chain.append(join(chain.state, bob, invite_secret=secret, name="bob", at=chain.at()))
    return chain


# -- the honest flows ----------------------------------------------------------------------
