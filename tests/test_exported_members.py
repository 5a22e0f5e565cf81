"""Every public name a subpackage lists in ``__all__`` exists, and only those are public."""

import importlib

import pytest

MODULES = [
    "memmesh",
    "memmesh.errors",
    "memmesh.text",
    "memmesh.embed",
    "memmesh.embed.base",
    "memmesh.embed.errors",
    "memmesh.embed.hashing",
    "memmesh.local.errors",
    "memmesh.local.items",
    "memmesh.local.ids",
    "memmesh.local.journal",
    "memmesh.local.outcomes",
    "memmesh.local.project",
    "memmesh.local._recall",
    "memmesh.local.store",
    "memmesh.local.doctor",
    "memmesh.local",
    "memmesh.cli",
    "memmesh.agents",
    "memmesh.agents.errors",
    "memmesh.agents.brief",
    "memmesh.agents.install",
    "memmesh.agents.tools",
    "memmesh.local.digest",
    "memmesh.team.member",
    "memmesh.cli.errors",
    "memmesh.net.errors",
    "memmesh.policy.errors",
    "memmesh.registry.errors",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert len(exported) == len(set(exported)), f"{name}.__all__ repeats a name"
    missing = [member for member in exported if not hasattr(module, member)]
    assert missing == []


ERRORS_MODULES = [
    "memmesh.agents.errors",
    "memmesh.cli.errors",
    "memmesh.embed.errors",
    "memmesh.local.errors",
    "memmesh.net.errors",
    "memmesh.policy.errors",
    "memmesh.registry.errors",
]


@pytest.mark.parametrize("name", ERRORS_MODULES)
def test_every_error_derives_from_the_root(name: str) -> None:
    from memmesh.errors import MemmeshError

    module = importlib.import_module(name)
    for member in module.__all__:
        error = getattr(module, member)
        assert issubclass(error, MemmeshError), f"{module.__name__}.{member}"
        assert isinstance(error.exit_code, int)
        assert isinstance(error.status, int)
        assert isinstance(error.code, str)
