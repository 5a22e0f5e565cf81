"""A member's home, opened the way `mem` opens it: every front end (the `mem` command, the
MCP server, the hooks' warm server, the page `mem ui` serves) goes through here, so that one
home is one store, one author and one embedder whichever of them opens it.

* The home is ``--home`` when given, else ``$MEM_HOME``, else ``~/.memmesh``
  (:func:`home_folder`).
* Its store takes the embedder ``$MEM_EMBEDDER`` names (else the one the store was made with),
  and signs new items with the member's team name when team.yaml gives one; ``$MEM_AUTHOR``
  wins over it (:func:`open_store`).
"""

import os
from pathlib import Path
from typing import TYPE_CHECKING

from memmesh._policy_names import POLICY_FILENAME

if TYPE_CHECKING:
    from memmesh.local.store import Store

__all__ = ["DEFAULT_HOME", "home_folder", "open_store", "team_name"]

DEFAULT_HOME = Path("~/.memmesh")


def home_folder(given: str | None = None) -> Path:
    """The memmesh home: ``given`` (``--home``), else ``MEM_HOME``, else ``~/.memmesh``."""
    raw = given or os.environ.get("MEM_HOME") or str(DEFAULT_HOME)
    return Path(raw).expanduser()


def open_store(home: Path, *, repair: bool = False, serving: bool = False) -> "Store":
    """The member's store in ``home`` (``repair``: see :class:`~memmesh.local.store.Store`);
    ``serving`` for a process that answers many searches (the store keeps its lexicon in
    memory)."""
    from memmesh.local.store import Store  # numpy: only for what opens a store

    embedder = os.environ.get("MEM_EMBEDDER") or None
    return Store(home, embedder=embedder, author=team_name(home), repair=repair, lexicon=serving)


def team_name(home: Path) -> str | None:
    """``identity.name`` from a valid team.yaml in ``home``, the author of new items; ``None``
    when ``MEM_AUTHOR`` is set (the store takes it) or there is no valid team.yaml."""
    if os.environ.get("MEM_AUTHOR") or not (home / POLICY_FILENAME).exists():
        return None
    from memmesh.policy import PolicyError, load_policy  # PyYAML: only with a team.yaml

    try:
        policy = load_policy(home)
    except PolicyError:
        return None
    return policy.identity.name if policy.identity else None
