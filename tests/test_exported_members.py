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
]


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert len(exported) == len(set(exported)), f"{name}.__all__ repeats a name"
    missing = [member for member in exported if not hasattr(module, member)]
    assert missing == []


def test_every_error_derives_from_the_root() -> None:
    from memmesh.agents import errors as agent_errors
    from memmesh.embed import errors as embed_errors
    from memmesh.errors import MemmeshError
    from memmesh.local import errors as local_errors

    for module in (embed_errors, local_errors, agent_errors):
        for member in module.__all__:
            error = getattr(module, member)
            assert issubclass(error, MemmeshError), f"{module.__name__}.{member}"
            assert isinstance(error.exit_code, int)
            assert isinstance(error.status, int)
