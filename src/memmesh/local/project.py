"""Which project an item or a recall belongs to when the user does not say."""

import os
import re
from collections.abc import Mapping
from pathlib import Path

from memmesh.local.items import GLOBAL, check_name

__all__ = ["git_repository_name", "resolve_project"]


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
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            name = re.sub(r"[^A-Za-z0-9._-]", "-", folder.name).lstrip("._-")[:64]
            return name or None
    return None
