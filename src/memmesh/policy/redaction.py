"""Redacting detected secrets from what a member is about to remember.

``mem remember`` and the agent's ``remember`` tool store the text with each secret the
built-in detectors find replaced by ``[redacted: <detector>]``, and tags that hold one
dropped, so that the store (and every brief or recall built from it later) never holds the
secret. The words around a secret stay: ``DB_PASSWORD=[redacted: password-assignment]``.
"""

import msgspec

from memmesh.policy.secrets import find_secrets

__all__ = ["Redacted", "redact", "redact_text"]

# Redacting can only shrink what a detector sees, but a label may complete a pattern that a
# secret broke: a few passes always reach text with nothing left to find.
_PASSES = 4


class Redacted(msgspec.Struct, frozen=True, kw_only=True):
    """Text and tags with their secrets removed, and what was removed (detector names, in
    order; empty when nothing was)."""

    text: str
    tags: tuple[str, ...]
    detectors: tuple[str, ...]


def redact_text(text: str) -> tuple[str, tuple[str, ...]]:
    """``text`` with every detected secret replaced by ``[redacted: <detector>]``, and the
    detectors that fired, in order of position."""
    removed: list[str] = []
    for _ in range(_PASSES):
        findings = find_secrets(text)
        if not findings:
            break
        pieces: list[str] = []
        done = 0
        for finding in findings:
            if finding.start < done:  # overlaps the secret just replaced
                continue
            pieces += [text[done : finding.start], f"[redacted: {finding.detector}]"]
            removed.append(finding.detector)
            done = finding.end
        text = "".join(pieces) + text[done:]
    return text, tuple(removed)


def redact(text: str, tags: list[str] | tuple[str, ...] = ()) -> Redacted:
    """``text`` redacted (:func:`redact_text`), and ``tags`` without those holding a secret."""
    clean, removed = redact_text(text)
    kept: list[str] = []
    dropped: list[str] = []
    for tag in tags:
        findings = find_secrets(tag)
        if findings:
            dropped.append(findings[0].detector)
        else:
            kept.append(tag)
    return Redacted(text=clean, tags=tuple(kept), detectors=removed + tuple(dropped))
