"""The Hermes Agent plugin `mem hook install hermes` writes: ``$HERMES_HOME/plugins/memmesh/``.

Hermes (``hermes-agent``) finds a memory provider in a folder of ``$HERMES_HOME/plugins/``
(default ``~/.hermes/plugins/``) whose ``__init__.py`` mentions ``MemoryProvider``, and loads
the one named by ``memory.provider`` in its ``config.yaml``. Three files go there:

* ``__init__.py``: :mod:`memmesh.agents.hermes_provider` as it is (it imports only the
  standard library and Hermes' base class, since memmesh is not in Hermes' environment);
* ``memmesh.json``: the `mem` command the provider runs and the memmesh home it uses;
* ``plugin.yaml``: the name and description ``hermes memory setup`` lists.

Each carries :data:`memmesh.agents._owned.MARK`, so that uninstalling removes exactly them,
then the folder once nothing else is in it.
"""

import json
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from memmesh.agents._owned import MARK
from memmesh.agents.clients import client_folder

__all__ = ["PLUGIN_NAME", "plugin_files", "plugin_folder"]

PLUGIN_NAME = "memmesh"
_PROVIDER_MODULE = "hermes_provider.py"


def plugin_folder(environ: Mapping[str, str] = os.environ, home: Path | None = None) -> Path:
    """Where the plugin goes: ``plugins/memmesh`` in ``$HERMES_HOME`` (else ``~/.hermes``)."""
    return client_folder("hermes", environ, home or Path.home()) / "plugins" / PLUGIN_NAME


def plugin_files(argv: tuple[str, ...], store: str) -> list[tuple[str, str, str]]:
    """The plugin's files as (name, text, what): the provider runs ``argv`` (the `mem` to run
    and its options) on the memmesh home ``store``."""
    source = resources.files("memmesh.agents").joinpath(_PROVIDER_MODULE).read_text("utf-8")
    config = {"about": MARK, "argv": list(argv), "home": store}
    manifest = (
        f"# {MARK}\n"
        f"name: {PLUGIN_NAME}\n"
        "description: memmesh, a private memory shared with your team when you say so\n"
    )
    return [
        ("__init__.py", f"# {MARK}\n{source}", "memory provider"),
        ("memmesh.json", json.dumps(config, indent=2, ensure_ascii=False) + "\n", "its settings"),
        ("plugin.yaml", manifest, "its manifest"),
    ]
