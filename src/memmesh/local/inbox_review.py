"""Reviewing the inbox as its front ends do (`mem inbox`, the page's inbox): where an
accepted candidate goes, where a candidate came from, and what a review did, in one set of
words, so that both say the same.

Light on purpose: the `mem` parser imports it, so it loads neither the store nor the policy.
"""

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from memmesh.local.project import resolve_project
from memmesh.text import counted

if TYPE_CHECKING:
    from memmesh.local.inbox import Candidate

__all__ = [
    "EMPTY",
    "about_of",
    "accepted_line",
    "accepted_summary",
    "project_for",
    "redacted_notice",
    "rejected_notice",
    "relative_path",
    "secrets_named",
    "source_of",
]

EMPTY = "the inbox is empty"


def project_for(given: str | None = None) -> "Callable[[Candidate], str]":
    """Where each accepted candidate goes: ``given``, else the project it proposes, else the
    default project (:func:`~memmesh.local.project.resolve_project`, resolved once, now)."""
    default = resolve_project(None)
    return lambda candidate: given or candidate.project or default


def relative_path(path: str) -> str:
    """``path`` relative to the working folder when it lies below it, else as it is."""
    if not path:
        return ""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive: never below the working folder
        return path
    return path if relative.startswith("..") else relative


def source_of(candidate: "Candidate") -> str:
    """Where ``candidate`` came from: its file (:func:`relative_path`), line and the heading
    or request it sat under, ``docs/notes.md:12 (Deploys > Staging)``; ``""`` for none."""
    path = relative_path(candidate.source_path)
    where = f"{path}:{candidate.source_line}" if candidate.source_line else path
    context = f" ({candidate.context})" if candidate.context else ""
    return where + context


def about_of(candidate: "Candidate") -> str:
    """The files ``candidate`` is about, as its item will be anchored to them: ``src/app.py,
    src/db.py`` (from each repository's top); ``""`` for none."""
    return ", ".join(anchor.shown for anchor in candidate.about)


def secrets_named(detectors: Sequence[str]) -> str:
    """``a secret (github-token)``, ``2 secrets (github-token, password-in-url)``."""
    count = "a secret" if len(detectors) == 1 else f"{len(detectors)} secrets"
    return f"{count} ({', '.join(dict.fromkeys(detectors))})"


def redacted_notice(detectors: Sequence[str]) -> str:
    """What storing a text did to the secrets in it: ``redacted a secret (aws-key) before
    storing it``."""
    return f"redacted {secrets_named(detectors)} before storing it"


def accepted_line(item_shown: str, how: str, reinforcements: int) -> str:
    """What accepting one candidate did (``how``: the store's ``created`` or
    ``reinforced``): ``created item 01J9ZC4XQM``, or ``reinforced an existing item
    01J9ZC4XQM (3x)``."""
    if how == "reinforced":
        return f"reinforced an existing item {item_shown} ({reinforcements}x)"
    return f"created item {item_shown}"


def accepted_summary(hows: Sequence[str]) -> str:
    """What accepting several candidates did: ``created 2 items, reinforced 1``."""
    created = sum(1 for how in hows if how == "created")
    return f"created {counted(created, 'item')}, reinforced {len(hows) - created}"


def rejected_notice(shown: Sequence[str], *, every: bool) -> str:
    """What rejecting the candidates ``shown`` (their ids as shown) did: ``rejected
    01J9ZC4XQM`` for one named, ``rejected 2 candidates`` for several or ``every`` one."""
    if len(shown) == 1 and not every:
        return f"rejected {shown[0]}"
    return f"rejected {counted(len(shown), 'candidate')}"
