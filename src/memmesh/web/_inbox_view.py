"""How the inbox section shows a candidate: its id as `mem inbox` shows it, and where it came
from in words (the agent's transcript or the notes file, its line, the heading or first
request it sat under, the session), and the files it is about."""

from pathlib import PurePath
from typing import NamedTuple

from memmesh.local import inbox
from memmesh.local.inbox import Candidate
from memmesh.local.inbox_review import about_of, relative_path
from memmesh.local.store import Store

__all__ = ["Shown", "shown_candidates"]


class Shown(NamedTuple):
    """A candidate with what the page says of it."""

    candidate: Candidate
    shown_id: str  # as `mem inbox` shows it: 10 characters, more when another shares them
    origin: str  # "Claude Code transcript", "notes file", ...
    file: str  # the file's name
    path: str  # where the file is, relative to where `mem ui` runs when below it (as `mem inbox`)
    item_shown: str  # the item an accepted candidate became, as `mem` shows its id
    about: str  # the files its item will be anchored to, as `mem inbox` says: "src/app.py"


def shown_candidates(store: Store, candidates: list[Candidate]) -> list[Shown]:
    """Each of ``candidates`` as the page shows it."""
    short = inbox.short_ids(store, [c.id for c in candidates])
    items = [c.item_id for c in candidates if c.item_id]
    item_short = store.short_ids(items) if items else {}
    return [
        Shown(
            candidate=c,
            shown_id=short.get(c.id, c.id),
            origin=origin(c.source_path),
            file=PurePath(c.source_path).name if c.source_path else "",
            path=relative_path(c.source_path),
            item_shown=item_short.get(c.item_id, c.item_id) if c.item_id else "",
            about=about_of(c),
        )
        for c in candidates
    ]


def origin(source_path: str) -> str:
    """What proposed a candidate, from the file it came from: an agent's session transcript
    (`mem ingest`, the capture hook) or a notes file (`mem inbox add-notes`)."""
    if not source_path:
        return "proposed"
    parts = set(PurePath(source_path).parts)
    if source_path.endswith(".jsonl"):
        if ".claude" in parts:
            return "Claude Code transcript"
        if ".codex" in parts:
            return "Codex transcript"
        return "transcript"
    return "notes file"
