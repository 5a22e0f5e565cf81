"""Items tied to the code they speak of: an anchor on a file, and whether it has gone stale.

``mem remember --about PATH[:LINES]`` anchors an item to a file of a git repository (its lines
``N`` or ``N-M``, or all of it): the anchor keeps the file's path from the repository's top,
a digest of the lines meant, and a short hash of each of them. When the file changes, the
share of those lines no longer found anywhere in it says how much (:func:`check`): moving a
block, or adding lines around it, changes nothing; rewriting it does. From
:data:`STALE_SHARE` on, or when the file is gone, the item *may be stale*: recall and the
hooks say so beside it, and consolidation lists it. Nothing is changed or hidden because of
it: the owner decides.

The repository's folder on this machine is kept beside the anchor to find the file again; it
never leaves the store: only the path from the repository's top and the hashes are shown to
anyone else.
"""

import hashlib
import os
import re
import sqlite3
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import msgspec

from memmesh.local._db import Transaction, connection_of
from memmesh.local.errors import InvalidInput
from memmesh.local.items import iso
from memmesh.local.project import git_repository_root

if TYPE_CHECKING:
    from memmesh.local.store import Store

__all__ = [
    "MAX_FILE_BYTES",
    "STALE_SHARE",
    "Anchor",
    "Staleness",
    "anchor_file",
    "anchors_of",
    "carry",
    "check",
    "note",
    "parse_about",
    "save",
    "shareable",
    "stale",
    "stale_notes",
    "staleness",
]

# From this share of the anchored lines changed or gone, the item may be stale: a quarter of a
# block rewritten is a change of what it does; a renamed variable in a long block is not.
STALE_SHARE = 0.25
MAX_FILE_BYTES = 4 * 1024 * 1024
_HASH_BYTES = 4
# What a publication carries at most (registry/envelopes.py, PublishedAnchor): anchors per
# item, characters of a path, lines whose hashes travel (past it, the digest alone).
MAX_SHARED, MAX_SHARED_PATH, MAX_SHARED_LINES = 16, 512, 4096
# Files whose hashes never travel: a line of a secret's file is guessable from its hash.
_PRIVATE_NAME = re.compile(
    r"(^|/)(\.env[^/]*|[^/]*\.(pem|key|p12|pfx|kdbx)|id_(rsa|dsa|ecdsa|ed25519)[^/]*|"
    r"\.netrc|\.npmrc|\.pypirc|(secrets?|credentials?)(\.[^/]*)?)\Z",
    re.IGNORECASE,
)
# ASCII digits only: "²".isdigit() is true, yet int("²") raises.
_LINES = re.compile(r"[0-9]+(?:-[0-9]+)?")


class Anchor(msgspec.Struct, frozen=True, kw_only=True):
    """One file an item speaks of: ``path`` from the repository's top (``/``-separated), the
    lines meant (``first_line`` to ``last_line``, 1-based; both 0 for the whole file)."""

    path: str
    first_line: int = 0
    last_line: int = 0
    repo: str
    digest: str
    line_hashes: bytes
    anchored_at: float

    @property
    def shown(self) -> str:
        """``PATH`` or ``PATH:N-M``, as the user gives it."""
        if not self.first_line:
            return self.path
        lines = str(self.first_line)
        return (
            self.path
            + ":"
            + (lines if self.last_line == self.first_line else f"{lines}-{self.last_line}")
        )


class Staleness(msgspec.Struct, frozen=True, kw_only=True):
    """How far an anchored file (``path`` as the user gave it: ``PATH`` or ``PATH:N-M``) moved
    from what the item was written against: the share of its anchored lines changed or gone
    (1.0 when the file is gone or unreadable)."""

    path: str
    changed: float
    gone: bool
    anchored_at: float

    @property
    def stale(self) -> bool:
        """Whether it changed enough that the item may no longer hold."""
        return self.gone or self.changed >= STALE_SHARE


def parse_about(spec: str, cwd: Path) -> tuple[Path, str, int, int]:
    """``PATH[:LINES]`` (LINES ``N`` or ``N-M``) as the repository's folder, the path from its
    top and the lines; :class:`InvalidInput` says what is wrong."""
    path_text, lines = spec, ""
    head, sep, tail = spec.rpartition(":")
    if sep and head and _LINES.fullmatch(tail):
        path_text, lines = head, tail
    first = last = 0
    if lines:
        low, _, high = lines.partition("-")
        first, last = int(low), int(high or low)
        if first < 1 or last < first:
            raise InvalidInput(f"lines {lines!r} of {path_text}: give N or N-M, from line 1")
    path = (cwd / path_text).resolve()
    if not path.is_file():
        raise InvalidInput(f"--about {path_text}: no such file")
    root = git_repository_root(path.parent)
    if root is None:
        raise InvalidInput(f"--about {path_text}: not in a git repository")
    return root, PurePosixPath(path.relative_to(root.resolve())).as_posix(), first, last


def anchor_file(repo: Path, path: str, first: int, last: int, now: float) -> Anchor:
    """The anchor of lines ``first`` to ``last`` (0, 0: all) of ``repo/path`` as it is now;
    :class:`InvalidInput` when the file cannot be read or lacks those lines."""
    lines = _lines(repo / path)
    if lines is None:
        raise InvalidInput(f"--about {path}: cannot be read as text (at most 4 MiB)")
    if first and last > len(lines):
        raise InvalidInput(f"--about {path}: it has {len(lines)} lines, not {last}")
    meant = lines[first - 1 : last] if first else lines
    return Anchor(
        path=path,
        first_line=first,
        last_line=last,
        repo=str(repo),
        digest=_digest(meant),
        line_hashes=b"".join(_line_hash(line) for line in meant if line),
        anchored_at=now,
    )


def check(anchor: Anchor) -> Staleness:
    """How far the anchored file has moved since the anchor was taken."""
    lines = _lines(Path(anchor.repo) / anchor.path, within=Path(anchor.repo))
    if lines is None:
        return Staleness(path=anchor.shown, changed=1.0, gone=True, anchored_at=anchor.anchored_at)
    meant = lines[anchor.first_line - 1 : anchor.last_line] if anchor.first_line else lines
    changed = 0.0
    if _digest(meant) != anchor.digest:
        wanted = [
            anchor.line_hashes[i : i + _HASH_BYTES]
            for i in range(0, len(anchor.line_hashes), _HASH_BYTES)
        ]
        present = {_line_hash(line) for line in lines if line}
        missing = sum(1 for digest in wanted if digest not in present)
        changed = missing / len(wanted) if wanted else 1.0
    return Staleness(path=anchor.shown, changed=changed, gone=False, anchored_at=anchor.anchored_at)


def save(tx: Transaction, item_id: str, anchors: Iterable[Anchor]) -> None:
    """Keep ``anchors`` for the item, inside the caller's transaction (one per file and lines:
    anchoring the same lines again takes them as they are now)."""
    connection_of(tx).executemany(
        "INSERT OR REPLACE INTO item_anchors (item_id, path, first_line, last_line, repo, "
        "digest, line_hashes, anchored_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                item_id,
                a.path,
                a.first_line,
                a.last_line,
                a.repo,
                a.digest,
                a.line_hashes,
                a.anchored_at,
            )
            for a in anchors
        ],
    )


def carry(tx: "sqlite3.Connection | Transaction", sources: Iterable[str], to: str) -> None:
    """Give item ``to`` the anchors of ``sources`` as they were taken (a revision, a merge:
    the new version speaks of the same code), inside the caller's transaction."""
    wanted = list(dict.fromkeys(sources))
    columns = "path, first_line, last_line, repo, digest, line_hashes, anchored_at"
    tx.execute(
        f"INSERT OR IGNORE INTO item_anchors (item_id, {columns}) SELECT ?, {columns} "
        f"FROM item_anchors WHERE item_id IN ({', '.join('?' * len(wanted))})",
        (to, *wanted),
    )


def anchors_of(
    conn: "sqlite3.Connection | Transaction", item_ids: Iterable[str]
) -> dict[str, list[Anchor]]:
    """Each of ``item_ids``'s anchors (items without any are left out), read through a
    connection or a transaction of the store."""
    wanted = list(dict.fromkeys(item_ids))
    out: dict[str, list[Anchor]] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        rows = conn.execute(
            "SELECT item_id, path, first_line, last_line, repo, digest, line_hashes, anchored_at "
            f"FROM item_anchors WHERE item_id IN ({', '.join('?' * len(chunk))}) "
            "ORDER BY item_id, path, first_line",
            chunk,
        )
        for item_id, path, first, last, repo, digest, hashes, at in rows:
            out.setdefault(item_id, []).append(
                Anchor(
                    path=path,
                    first_line=first,
                    last_line=last,
                    repo=repo,
                    digest=digest,
                    line_hashes=bytes(hashes),
                    anchored_at=at,
                )
            )
    return out


def shareable(
    anchors: Sequence[Anchor], *, secret: Callable[[str], bool] | None = None
) -> list[Anchor]:
    """The anchors that may travel with a publication: never a file whose name says it holds
    secrets (``.env``, keys, credentials), nor one whose text ``secret`` flags as it is now,
    nor a path of control characters or over :data:`MAX_SHARED_PATH`; at most
    :data:`MAX_SHARED`, by path; the line hashes of at most :data:`MAX_SHARED_LINES` lines
    (past that, the digest alone says whether the lines changed)."""
    out: list[Anchor] = []
    for anchor in sorted(anchors, key=lambda a: (a.path, a.first_line, a.last_line)):
        if len(out) == MAX_SHARED or _PRIVATE_NAME.search(anchor.path):
            continue
        if len(anchor.path) > MAX_SHARED_PATH or not anchor.path.isprintable():
            continue
        if secret is not None:
            lines = _lines(Path(anchor.repo) / anchor.path, within=Path(anchor.repo))
            if lines is not None and secret("\n".join(lines)):
                continue
        if len(anchor.line_hashes) > MAX_SHARED_LINES * _HASH_BYTES:
            anchor = msgspec.structs.replace(anchor, line_hashes=b"")
        out.append(anchor)
    return out


def staleness(store: "Store", item_ids: Iterable[str] | None = None) -> dict[str, list[Staleness]]:
    """How each anchored file of ``item_ids`` (of every active item, for ``None``) stands now;
    items without anchors are left out."""
    with store.read() as tx:
        conn = connection_of(tx)
        if item_ids is None:
            item_ids = [
                i
                for (i,) in conn.execute(
                    "SELECT DISTINCT item_id FROM item_anchors JOIN items ON items.id = item_id "
                    "WHERE items.status = 'active'"
                )
            ]
        anchors = anchors_of(conn, item_ids)
    return {item_id: [check(anchor) for anchor in held] for item_id, held in anchors.items()}


def stale(store: "Store", item_ids: Iterable[str]) -> dict[str, list[Staleness]]:
    """The anchored files of ``item_ids`` that changed enough since, by item id (items none
    of whose files did are left out): what recall, `mem show` and the hooks mark."""
    found = staleness(store, item_ids)
    return {i: changed for i, files in found.items() if (changed := [f for f in files if f.stale])}


def stale_notes(
    anchors: "Mapping[str, Sequence[Anchor]] | Mapping[str, list[Staleness]]",
) -> dict[str, str]:
    """What to say of each item (by id) whose files changed enough, :func:`note`'s words:
    from its anchors (checked here) or from what :func:`stale` or :func:`staleness` found."""
    said = {}
    for item_id, held in anchors.items():
        files = [a if isinstance(a, Staleness) else check(a) for a in held]
        if text := note(files):
            said[item_id] = text
    return said


def note(files: Sequence[Staleness]) -> str:
    """What recall, the hooks and `mem show` say of an item whose ``files`` changed enough:
    ``may be stale: PATH changed since DATE`` (or ``PATH is gone``); empty when none did."""
    said = [
        f"{f.path} is gone" if f.gone else f"{f.path} changed since {iso(f.anchored_at)[:10]}"
        for f in files
        if f.stale
    ]
    return "may be stale: " + "; ".join(said) if said else ""


def _lines(path: Path, within: Path | None = None) -> list[str] | None:
    """The file's lines, each without its ending and trailing spaces, or ``None`` when it is
    no regular file (a FIFO or a device is never opened for reading, so never waited on), or
    resolves outside ``within`` (a link in a checkout pointing elsewhere)."""
    try:
        real = path.resolve(strict=True)
        if within is not None and not real.is_relative_to(within.resolve()):
            return None
        descriptor = os.open(real, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(descriptor, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            data = handle.read(MAX_FILE_BYTES + 1)
    except (OSError, RuntimeError):  # RuntimeError: a loop of links
        return None
    if len(data) > MAX_FILE_BYTES or b"\0" in data:
        return None
    return [line.rstrip() for line in data.decode("utf-8", "replace").splitlines()]


def _digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def _line_hash(line: str) -> bytes:
    return hashlib.blake2b(line.strip().encode("utf-8"), digest_size=_HASH_BYTES).digest()
