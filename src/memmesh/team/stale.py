"""A teammate's item that may be stale in the asker's own checkout.

A published item carries the files its author anchored it to, as paths from the repository's
top and hashes (:class:`memmesh.registry.PublishedAnchor`). When the asker runs recall-team
inside a git checkout whose name is the hit's project (the name memmesh gives the project by
default, :func:`memmesh.local.project.git_repository_name`), each anchored file is compared with
the asker's copy, as the author's own recall compares it with theirs
(:func:`memmesh.local.anchors.check`), against the time the item was published: a hit whose
files changed enough there says so. Elsewhere nothing is looked at, and nothing is said.
"""

from pathlib import Path

from memmesh.local.anchors import Anchor, Staleness, check
from memmesh.local.project import git_repository_name, git_repository_root
from memmesh.team.recall import TeamAnswer, TeamHit

__all__ = ["stale_in_checkout"]


def stale_in_checkout(answer: TeamAnswer, cwd: Path) -> dict[tuple[str, str], list[Staleness]]:
    """Each hit of ``answer`` (by author's member id and item id) whose anchored files changed
    enough in the checkout ``cwd`` is in, when that checkout is the hit's project."""
    root, name = git_repository_root(cwd), git_repository_name(cwd)
    if root is None or name is None:
        return {}
    found: dict[tuple[str, str], list[Staleness]] = {}
    for hit in answer.hits:
        stale = [s for s in _checked(hit, root) if s.stale] if hit.project == name else []
        if stale:
            found[(hit.key_id, hit.id)] = stale
    return found


def _checked(hit: TeamHit, root: Path) -> list[Staleness]:
    return [
        check(
            Anchor(
                path=a.path,
                first_line=a.first_line,
                last_line=a.last_line,
                repo=str(root),
                digest=a.digest,
                line_hashes=bytes.fromhex(a.line_hashes),
                anchored_at=hit.published_at,
            )
        )
        for a in hit.anchors
    ]
