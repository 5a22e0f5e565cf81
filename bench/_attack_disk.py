"""Retracted text left on the coordinator's disk, read from outside, file by file.

A coordinator over a temporary data folder gets ``items`` publications from one member, each
with a made-up word of its own; then the member retracts ``retracted`` of them, one alone
(timed: a retraction and its scrub) and the rest in one request (as a sync sends a batch).
Every file of the data folder is then read whole and searched for each retracted sentence and
word, while the coordinator runs and after a restart. The goal is 0 bytes found everywhere.
With ``scrub=False`` the scrub is skipped, which is how retractions stood before it.

Run from the repository root::

    .venv/bin/python bench/_attack_disk.py                 # 2,000 items, with and without
    .venv/bin/python bench/_attack_disk.py --items 10000
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from _common import log, ms_since, table
from memmesh.coordinator import Coordinator
from memmesh.coordinator.protocol import PublishItem, PublishRequest, RetractRequest
from memmesh.net.signing import Caller
from memmesh.registry.envelopes import FORMAT_VERSION, Publication, Retraction, seal, text_hash
from memmesh.registry.identity import Identity, create_identity

TEAM = "disk-bench"
HEADER = [
    "scrub",
    "when",
    "file",
    "file bytes",
    "retracted bytes found",
    "sentences found",
    "words found",
    "one retraction ms",
    "batch ms",
]
_LETTERS = "bcdfghjklmnpqrstvwxz"


def _word(rng: random.Random) -> str:
    """A made-up word the stemmer keeps whole, unlike any other: ``qx`` + 14 letters + ``um``."""
    return "qx" + "".join(rng.choices(_LETTERS, k=14)) + "um"


def _publication(member: Identity, n: int, text: str, fingerprint: str) -> Publication:
    return Publication(
        format=FORMAT_VERSION, team=TEAM, item_id=f"01JDISKBENCH{n:014d}", version=1,
        author_key=member.public_key_text, key_id=member.key_id, seq=n + 1, author="bench",
        published_at=1_700_000_000.0, text=text, kind="decision", project="global", tags=(),
        content_hash=text_hash(text), embedder=fingerprint,
    )  # fmt: skip


def _retraction(member: Identity, n: int, seq: int) -> Retraction:
    return Retraction(
        format=FORMAT_VERSION, team=TEAM, item_id=f"01JDISKBENCH{n:014d}", version=1,
        author_key=member.public_key_text, key_id=member.key_id, seq=seq,
        retracted_at=1_700_000_100.0,
    )  # fmt: skip


def _found(folder: Path, sentences: list[str], words: list[str]) -> list[list[object]]:
    """Per file of ``folder``: its name, size, bytes of retracted text found, and how many
    sentences and words (by each one's last ten letters: the full-text index keeps only what
    a word does not share with the word sorted before it, and that always ends the same)."""
    rows: list[list[object]] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        hits = [s.encode() for s in sentences if s.encode() in data]
        middles = [w[-10:].encode() for w in words if w[-10:].encode() in data]
        found = sum(data.count(h) * len(h) for h in hits + middles)
        rows.append([path.name, len(data), found, len(hits), len(middles)])
    return rows


def run_disk(
    items: int = 2000, retracted: int = 20, *, scrub: bool = True, seed: int = 5
) -> list[list[object]]:
    """Publish ``items``, retract ``retracted`` of them, and report what is found on disk per
    file (rows as :data:`HEADER`), while running and after a restart."""
    assert 2 <= retracted <= items
    rng = random.Random(seed)
    words = [_word(rng) for _ in range(items)]
    texts = [f"Decision {n}: the {w} job runs nightly after the {n % 97} exports" for n, w in
             enumerate(words)]  # fmt: skip
    # Spread over the publications, as retractions are: some in the index's newest segments.
    chosen = sorted(rng.sample(range(items), retracted))
    gone_texts, gone_words = [texts[n] for n in chosen], [words[n] for n in chosen]
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory(prefix="memmesh-disk-") as folder:
        data = Path(folder) / "data"
        member = create_identity(Path(folder) / "member")
        caller = Caller(key=member.public_key_text, key_id=member.key_id)
        coordinator = Coordinator(data, team=TEAM)
        try:
            if not scrub:
                coordinator.store.cache.scrub = lambda: True  # type: ignore[method-assign]
            fingerprint = coordinator.store.embedder.fingerprint
            for start in range(0, items, 100):
                batch = [
                    PublishItem(envelope=seal(_publication(member, n, texts[n], fingerprint),
                                              member))
                    for n in range(start, min(items, start + 100))
                ]  # fmt: skip
                coordinator.publish(caller, PublishRequest(items=batch))
            log(f"published {items} items")
            envelopes = [seal(_retraction(member, n, items + k + 1), member)
                         for k, n in enumerate(chosen)]  # fmt: skip
            started = time.perf_counter()
            coordinator.retract(caller, RetractRequest(envelopes=envelopes[:1]))
            one = ms_since(started)
            started = time.perf_counter()
            coordinator.retract(caller, RetractRequest(envelopes=envelopes[1:]))
            batch_ms = ms_since(started)
            found = _found(data, gone_texts, gone_words)
        finally:
            coordinator.close()
        rows += [["yes" if scrub else "no", "running", *f, one, batch_ms] for f in found]
        Coordinator(data, team=TEAM).close()
        found = _found(data, gone_texts, gone_words)
        rows += [["yes" if scrub else "no", "restarted", *f, None, None] for f in found]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--retracted", type=int, default=20)
    args = parser.parse_args()
    rows = run_disk(args.items, args.retracted, scrub=False)
    rows += run_disk(args.items, args.retracted, scrub=True)
    print(table(HEADER, rows))


if __name__ == "__main__":
    main()
