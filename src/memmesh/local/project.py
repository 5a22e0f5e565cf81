"""Which project an item or a recall belongs to when the user does not say."""

import os
import re
from collections.abc import Mapping
from pathlib import Path

from memmesh.local.items import GLOBAL, check_name

__all__ = ["git_repository_name", "git_repository_root", "resolve_project"]


def resolve_project(
    explicit: str | None,
    *,
    cwd: Path | None = None,
    environ: Mapping[str, str] = os.environ,
) -> str:
    """``explicit``, else ``MEM_PROJECT``, else the enclosing git repository's name, else global."""
    if explicit:
        return check_name(explicit, "project")
    if environ.get("MEM_PROJECT"):
        return check_name(environ["MEM_PROJECT"], "project")
    return git_repository_name(cwd or Path.cwd()) or GLOBAL


def git_repository_name(start: Path) -> str | None:
    """Name of the git work tree containing ``start`` (its top folder), as a valid name."""
    root = git_repository_root(start)
    if root is None:
        return None
    return re.sub(r"[^A-Za-z0-9._-]", "-", root.name).lstrip("._-")[:64] or None


def git_repository_root(start: Path) -> Path | None:
    """The top folder of the git work tree containing ``start``, or ``None``."""
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None
