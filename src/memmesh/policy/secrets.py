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
import hashlib
import os

import msgspec

from memmesh.policy._detect_cloud import CLOUD_DETECTORS
from memmesh.policy._detect_code import CODE_DETECTORS
from memmesh.policy._detect_generic import GENERIC_DETECTORS
from memmesh.policy._detect_keys import KEY_DETECTORS
from memmesh.policy._detect_prose import COMMAND_DETECTORS, PROSE_DETECTORS
from memmesh.policy._detect_saas import SAAS_DETECTORS
from memmesh.policy._detector import Detector, Prefilter, secret_span
from memmesh.policy._secret_values import stands_alone

__all__ = ["DETECTORS", "PREFILTER", "VERDICTS", "Finding", "Verdicts", "find_secrets"]


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
# Which detectors' forms a text can match, found in one pass over it.
PREFILTER = Prefilter(DETECTORS)
# The longest text whose verdict is kept: an item's text (8 KiB at most) and its tags fit.
_KEPT_LONGEST = 16 * 1024


class Verdicts:
    """The findings of texts scanned before, so that a process deciding the same items again
    (the page, the MCP server, a server kept warm) scans each text once: the detectors do
    not change while it runs.

    A verdict is kept under a digest of its text, keyed anew in each process, never under
    the text itself; at most ``most`` are kept (all are dropped when that many are), and
    none for a text longer than an item's. ``hits`` and ``misses`` count the look-ups.
    """

    def __init__(self, *, most: int = 250_000) -> None:
        self.most = most
        self.hits = 0
        self.misses = 0
        self._key = os.urandom(16)
        self._kept: dict[bytes, tuple[Finding, ...]] = {}

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, text: str) -> tuple[Finding, ...] | None:
        """The findings kept for ``text``, or ``None`` when it was not scanned before."""
        if len(text) > _KEPT_LONGEST:
            return None
        found = self._kept.get(self._digest(text))
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def put(self, text: str, findings: tuple[Finding, ...]) -> None:
        """Keep the findings of ``text``."""
        if len(text) > _KEPT_LONGEST:
            return
        if len(self._kept) >= self.most:
            self._kept.clear()
        self._kept[self._digest(text)] = findings

    def _digest(self, text: str) -> bytes:
        data = text.encode("utf-8", errors="surrogatepass")
        return hashlib.blake2b(data, digest_size=16, key=self._key).digest()


# This process's verdicts, which :func:`find_secrets` keeps and reads.
VERDICTS = Verdicts()


def find_secrets(text: str) -> list[Finding]:
    """Every secret the built-in detectors find in ``text``, in order of position; no two
    findings overlap.

    Where several detectors find the same secret, only the most specific one is named: a
    provider's (``github-token``) rather than a generic one that saw a secret-looking
    assignment around it, and one finding per place. What a less specific finding holds
    beyond a more specific one is judged on its own (``KEY=AKIA…:wJalr…`` holds two secrets).
    A text scanned before is answered from :data:`VERDICTS`.
    """
    kept = VERDICTS.get(text)
    if kept is None:
        kept = _scan(text)
        VERDICTS.put(text, kept)
    return list(kept)


def _scan(text: str) -> tuple[Finding, ...]:
    found: list[tuple[int, Finding]] = []
    lowered = text.lower()
    for detector, each in PREFILTER.candidates(text, lowered):
        for match in detector.matches(each, text):
            if detector.accept is None or detector.accept(match):
                start, end = secret_span(detector, match)
                found.append((detector.rank, Finding(detector=detector.name, start=start, end=end)))
    kept = _most_specific(text, found)
    kept.sort(key=lambda f: (f.start, f.detector))
    return tuple(kept)


def _most_specific(text: str, found: list[tuple[int, Finding]]) -> list[Finding]:
    """The findings by rank, each cut where a more specific (or earlier) one already is."""
    kept: list[Finding] = []
    starts: list[int] = []  # the kept findings' places, which never overlap, in order
    ends: list[int] = []
    for _, finding in sorted(found, key=lambda pair: pair[0]):
        first = bisect.bisect_right(ends, finding.start)
        last = bisect.bisect_left(starts, finding.end)
        if first == last:
            pieces = [(finding.start, finding.end)]
        else:
            pieces = _uncovered(text, finding, starts[first:last], ends[first:last])
        for start, end in pieces:
            at = bisect.bisect_left(starts, start)
            starts.insert(at, start)
            ends.insert(at, end)
            kept.append(Finding(detector=finding.detector, start=start, end=end))
    return kept


# What separates two secrets written together: ``AKIA…:wJalr…``, ``user/password``.
_SEPARATORS = " \t\r\n:/@=,;|\"'`()[]{}<>.-"


def _uncovered(
    text: str, finding: Finding, starts: list[int], ends: list[int]
) -> list[tuple[int, int]]:
    """The parts of ``finding`` outside the places already kept that are a secret alone."""
    pieces = []
    cursor = finding.start
    for start, end in [*zip(starts, ends, strict=True), (finding.end, finding.end)]:
        piece = text[cursor:start]
        trimmed = piece.strip(_SEPARATORS)
        if trimmed and stands_alone(trimmed):
            offset = cursor + piece.index(trimmed)
            pieces.append((offset, offset + len(trimmed)))
        cursor = max(cursor, end)
    return pieces
