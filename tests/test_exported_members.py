"""Every public name a subpackage lists in ``__all__`` exists, is the object it documents, and
only those are public."""

import importlib
import pkgutil
import types

import pytest

MODULES = [
    "memmesh",
    "memmesh.errors",
    "memmesh.text",
    "memmesh.views",
    "memmesh.home",
    "memmesh.local.inbox_review",
    "memmesh.team.fates",
    "memmesh.team.refusals",
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
    "memmesh.local.schema",
    "memmesh.local.store",
    "memmesh.local.doctor",
    "memmesh.local.anchors",
    "memmesh.local.validity",
    "memmesh.local.merge",
    "memmesh.local.aging",
    "memmesh.local.neighbors",
    "memmesh.consolidate.conflicts",
    "memmesh.consolidate.corroborate",
    "memmesh.consolidate.plan",
    "memmesh.consolidate.actions",
    "memmesh.consolidate.runs",
    "memmesh.consolidate.judge",
    "memmesh.team.stale",
    "memmesh.local",
    "memmesh.cli",
    "memmesh.agents",
    "memmesh.agents.errors",
    "memmesh.agents.brief",
    "memmesh.agents.install",
    "memmesh.agents.tools",
    "memmesh.local.digest",
    "memmesh.team.member",
    "memmesh.team.changes",
    "memmesh.team.setup",
    "memmesh.team.status",
    "memmesh.team.roster",
    "memmesh.team.disclosures",
    "memmesh.team.access",
    "memmesh.team.check",
    "memmesh.team.errors",
    "memmesh.team.feed",
    "memmesh.net",
    "memmesh.net.search",
    "memmesh.net.presence",
    "memmesh.net.wire",
    "memmesh.coordinator.protocol",
    "memmesh.peer.protocol",
    "memmesh.peer.serve",
    "memmesh.registry",
    "memmesh.registry.roster_chain",
    "memmesh.policy",
    "memmesh.cli.errors",
    "memmesh.net.errors",
    "memmesh.policy.errors",
    "memmesh.registry.errors",
    "memmesh.service",
    "memmesh.service.errors",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert len(exported) == len(set(exported)), f"{name}.__all__ repeats a name"
    missing = [member for member in exported if not hasattr(module, member)]
    assert missing == []


@pytest.mark.parametrize("name", MODULES)
def test_every_exported_name_is_the_object_it_documents(name: str) -> None:
    module = importlib.import_module(name)
    # Importing a submodule binds its name on the package, where it would hide a function of
    # the same name (`memmesh.local.recall`): import them all first.
    for info in pkgutil.walk_packages(getattr(module, "__path__", []), f"{name}."):
        # The command's entry point runs when imported; the MCP server needs its optional SDK.
        if info.name not in ("memmesh.__main__", "memmesh.agents.server"):
            importlib.import_module(info.name)
    for member in module.__all__:
        value = getattr(module, member)
        assert not isinstance(value, types.ModuleType), f"{name}.{member} is a module"
        if isinstance(value, type | types.FunctionType):
            defining = importlib.import_module(value.__module__)
            assert getattr(defining, value.__qualname__) is value, f"{name}.{member}"
            assert value.__doc__, f"{name}.{member} has no docstring"


def test_the_package_recall_is_the_recall_function() -> None:
    importlib.import_module("memmesh.local.store")
    from memmesh.local import recall
    from memmesh.local._recall import recall as defined

    assert recall is defined
    assert callable(recall)


ERRORS_MODULES = [
    "memmesh.agents.errors",
    "memmesh.cli.errors",
    "memmesh.embed.errors",
    "memmesh.local.errors",
    "memmesh.net.errors",
    "memmesh.policy.errors",
    "memmesh.registry.errors",
    "memmesh.service.errors",
    "memmesh.team.errors",
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
