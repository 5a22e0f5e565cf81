"""What `mem team recall-team` says about itself: the scope it searched, and with --explain
what each answering source returned and what became of each hit.

The scope is one line after the sources (``searched: project web + global (the git
repository's name)``), and ``scope`` in --json: the projects searched (empty with
``all_projects``) and where the project came from (``--project``, ``MEM_PROJECT``, ``git
repository``, ``default``; empty with ``all_projects``). The explanation lists, per answering
source, each hit it returned, then ``kept`` or ``cut`` and why, in the words the page says too
(:func:`memmesh.team.fates.fate_text`; those of `mem recall --explain` where the reason is the
same); its ``explanation`` in --json is :func:`memmesh.views.team_explanation_json`'s.
"""

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memmesh.local.ids import SHOWN_LENGTH
from memmesh.local.items import GLOBAL
from memmesh.local.project import git_repository_name
from memmesh.team.fates import fate_text
from memmesh.text import printable

if TYPE_CHECKING:
    from memmesh.team._explain import TeamExplanation
    from memmesh.team.recall import TeamAnswer

__all__ = ["explanation_lines", "scope_json", "scope_line"]

# Why each project a recall-team searched was chosen, in its `searched:` line.
_WHY_PROJECT = {
    "--project": "",
    "MEM_PROJECT": " (MEM_PROJECT)",
    "git repository": " (the git repository's name)",
    "default": " (not in a git repository)",
}


def _project_from(args: argparse.Namespace) -> str:
    """Where the project searched came from, in resolve_project's order."""
    if args.all_projects:
        return ""
    if args.project:
        return "--project"
    if os.environ.get("MEM_PROJECT"):
        return "MEM_PROJECT"
    return "git repository" if git_repository_name(Path.cwd()) else "default"


def scope_json(args: argparse.Namespace, answer: "TeamAnswer") -> dict[str, Any]:
    """The ``scope`` of recall-team's --json."""
    return {
        "projects": answer.projects,
        "all_projects": answer.all_projects,
        "project_from": _project_from(args),
        "author": args.author,
    }


def scope_line(args: argparse.Namespace, answer: "TeamAnswer") -> str:
    """``searched: ...``: what the team was asked about, and, when it found nothing, where
    else to ask."""
    if answer.all_projects:
        line = "searched: every project"
    else:
        why = _WHY_PROJECT[_project_from(args)]
        [*named, _] = answer.projects  # the project, then global (alone when it is global)
        where = f"project {named[0]} + {GLOBAL}" if named else f"{GLOBAL} only"
        line = f"searched: {where}{why}"
    if args.author:  # the sources' hits by anyone else were cut here
        line += f", items by {args.author} only"
    if answer.abstained and not answer.all_projects:
        line += "; --project P or --all-projects asks elsewhere"
    return printable(line)


def explanation_lines(explanation: "TeamExplanation", author: str | None) -> list[str]:
    """Per answering source, each hit it returned and what became of it."""
    lines = ["explain: what each source returned, and what became of it"]
    for source in explanation.sources:
        name = printable(source.name)
        if not source.returned:
            lines.append(f"  {name} returned nothing")
            continue
        lines.append(f"  {name} returned {len(source.returned)}:")
        for each in source.returned:
            shown = printable(each.id[:SHOWN_LENGTH]) or "?"
            who = f"{printable(each.author)}  v{each.version}" if each.author else "?"
            lines.append(
                f"    {shown}  {who}  source score {each.source_score:.3f}: "
                + fate_text(each, explanation, author)
            )
    return lines
