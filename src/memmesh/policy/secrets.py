"""Built-in secret detectors. They are always on; no setting or ``--force`` turns them off.

Each detector names what it found (``github-token``, ``password-in-url``) and where, never the
secret itself, so a refusal can be shown and logged without leaking what it refused.
Placeholders (``<YOUR_TOKEN>``, ``${API_KEY}``, ``xxxx``), redacted values, commit SHAs, UUIDs,
public keys and image digests are not secrets, and prose about security is not either.

The detectors live by family: private keys (:mod:`._detect_keys`), cloud and hosting
(:mod:`._detect_cloud`), developer tools (:mod:`._detect_code`), hosted services
(:mod:`._detect_saas`), and the generic ones that find a secret by where it stands
(:mod:`._detect_generic`, :mod:`._detect_prose`).

Every pattern is written to stay linear on hostile input: a match may only start where the
run of characters it scans begins (a negative lookbehind on the same class), repetitions are
bounded, and runs followed by a character outside their class are possessive.
"""

import bisect
import itertools

import msgspec

from memmesh.policy._detect_cloud import CLOUD_DETECTORS
from memmesh.policy._detect_code import CODE_DETECTORS
from memmesh.policy._detect_generic import GENERIC_DETECTORS
from memmesh.policy._detect_keys import KEY_DETECTORS
from memmesh.policy._detect_prose import COMMAND_DETECTORS, PROSE_DETECTORS
from memmesh.policy._detect_saas import SAAS_DETECTORS
from memmesh.policy._detector import Detector, secret_span

__all__ = ["DETECTORS", "Finding", "find_secrets"]


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    """A detected secret: which detector fired and where the secret is (``text[start:end]``).

    The value itself is never kept.
    """

    detector: str
    start: int
    end: int


DETECTORS: tuple[Detector, ...] = (
    KEY_DETECTORS
    + CLOUD_DETECTORS
    + CODE_DETECTORS
    + SAAS_DETECTORS
    + COMMAND_DETECTORS
    + GENERIC_DETECTORS
    + PROSE_DETECTORS
)


def find_secrets(text: str) -> list[Finding]:
    """Every secret the built-in detectors find in ``text``, in order of position.

    Where several detectors find the same secret, only the most specific one is named: a
    provider's (``github-token``) rather than a generic one that saw a secret-looking
    assignment around it, and one finding per place.
    """
    found: list[tuple[int, Finding]] = []
    lowered = text.lower()
    for detector in DETECTORS:
        for match in detector.finditer(text, lowered):
            if detector.accept is None or detector.accept(match):
                start, end = secret_span(detector, match)
                found.append((detector.rank, Finding(detector=detector.name, start=start, end=end)))
    kept = _most_specific(found)
    kept.sort(key=lambda f: (f.start, f.detector))
    return kept


def _most_specific(found: list[tuple[int, Finding]]) -> list[Finding]:
    """The findings no more specific finding overlaps, one per place (the first detector's)."""
    kept: list[Finding] = []
    places: set[tuple[int, int]] = set()
    starts: list[int] = []
    max_ends: list[int] = []  # the furthest end among the intervals starting up to each one
    for rank in sorted({rank for rank, _ in found}):
        for finding in (f for r, f in found if r == rank):
            before = bisect.bisect_left(starts, finding.end)
            if before and max_ends[before - 1] > finding.start:
                continue  # a more specific finding overlaps it
            if (finding.start, finding.end) not in places:
                places.add((finding.start, finding.end))
                kept.append(finding)
        spans = sorted((f.start, f.end) for f in kept)
        starts = [start for start, _ in spans]
        max_ends = list(itertools.accumulate((end for _, end in spans), max))
    return kept
