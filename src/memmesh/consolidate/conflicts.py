"""Whether two memory texts contradict each other, restate one fact, or can both stand.

Words only, no model. Each text is read once into a :class:`Statement` (its content words,
values and negations, :mod:`memmesh.consolidate._values`); two statements are then compared
with set operations, so a pair costs a few microseconds. The texts *contradict* when they speak
of the same thing and differ only where a value goes:

* **values**: every content word is shared but the numbers (``30s`` and ``60 seconds``,
  ``3 retries`` and ``5``), versions (``Python 3.11`` and ``3.12``, ``v2`` and ``v3``),
  weekdays or ``before``/``after`` differ;
* **a choice**: every content word is shared but one run of words on each side, and each run
  fills the slot of a choice: it follows ``use``, ``with``, ``via``, a copula, or a verb and
  its preposition (``hosted on``, ``stored in``): ``we use Redis locks for the job scheduler``
  and ``we use Postgres advisory locks for the job scheduler``;
* **yes and no**: the same content words, one text negated (``never``, ``not``, ``no
  longer``, ``disabled``, ``forbidden``, ``optional``) and the other not.

A wrong flag costs more than a missed one: a team's answer shown as contested when it is not is
worse than two notes left side by side. So anything a text says that the other does not (a
service, an environment, a condition) makes the pair compatible, however alike they read.

They are *duplicates* when neither contradiction holds and one restates the other: the same
values, polarity and identifiers, and most of their content words shared (or the stricter
:func:`memmesh.consolidate.corroborate.same_fact` says so). A cosine from the store's embedder, when
given, lets a restatement that shares fewer words through; it never makes a contradiction.
:data:`DUPLICATE_COSINE` is a cosine of the default embedder (minilm-static), measured with
``bench/conflicts.py`` on the tuning half of ``bench/data/pairs.json``.
"""

from dataclasses import dataclass
from typing import Literal

from memmesh.consolidate import corroborate as _corroborate
from memmesh.consolidate._values import Part, parts

__all__ = ["Relation", "Statement", "Verdict", "classify", "classify_statements"]

Relation = Literal["contradicts", "duplicate", "compatible"]

# Most words one text may say beside the other's when their values conflict, and the words
# they must share then.
MAX_EXTRA_WORDS = 1
MIN_SHARED_WITH_EXTRA = 2
# Most words a run filling a choice's slot may hold ("AWS Secrets Manager").
MAX_CHOICE_WORDS = 3
# Share of their content words (Jaccard) two texts of the same values and polarity need to be
# restatements, on words alone; and with a cosine of at least DUPLICATE_COSINE.
DUPLICATE_OVERLAP = 0.6
DUPLICATE_OVERLAP_NEAR = 0.4
DUPLICATE_COSINE = 0.8
# How many words of a subject a verdict names.
SUBJECT_WORDS = 5

# What may come right before a choice's slot: a verb of choosing, "with", "via", a copula.
_CUES = frozenset(
    """
    use uses used using with via through prefer prefers preferred follow follows against is
    are be was were
    """.split()
)
_COPULAS = frozenset(("is", "are", "be", "was", "were"))
# After a copula, a state ("anonymized", "flaky", "optional") is no choice: "the data is
# anonymized" and "the data is encrypted" can both hold.
_STATE_ENDINGS = ("ed", "ing", "able", "ible", "ful", "ous", "ive", "al", "y")
# A preposition that opens a slot after one of these verbs (as stemmed or as written):
# "hosted on", "stored in", "pushed to", "settled on".
_SLOT_PREPOSITIONS = frozenset(("in", "on", "to", "at", "into"))
_SLOT_VERBS = frozenset(
    """
    host stor live push report go goes went send writ pin kept set mov migrat switch build
    settl standardiz run runs ran is are
    """.split()
)


# Negations that are words of their own, and the positive twins they deny.
_ANTONYMS = frozenset(
    "disabled disable disables off forbidden prohibited banned disallowed optional".split()
)
_TWINS = frozenset(
    "enabled enable enables on allowed permitted fine ok okay required mandatory always".split()
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """How two texts relate.

    ``subject`` names what both speak of in a few words (``""`` when compatible); ``values``
    are the conflicting values, the first text's then the second's (``("", "")`` unless they
    contradict); ``reason`` is one line for the user.
    """

    relation: Relation
    subject: str
    values: tuple[str, str]
    reason: str


class Statement(_corroborate.Statement):
    """A text read once for comparing: corroboration's words and tokens, plus its parts, its
    content keys, its values and its polarity."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.parts = parts(text)
        self.keys = frozenset(p.key for p in self.parts if p.kind in ("word", "value"))
        self.values = frozenset(k for k in self.keys if k.startswith("#"))
        self.negative = sum(p.kind == "neg" for p in self.parts) % 2 == 1


def classify(a: str, b: str, *, cosine: float | None = None) -> Verdict:
    """How text ``a`` relates to text ``b`` (see the module docstring); ``cosine`` is their
    vectors' cosine under the store's embedder, when the caller has it."""
    return classify_statements(Statement(a), Statement(b), cosine=cosine)


def classify_statements(a: Statement, b: Statement, *, cosine: float | None = None) -> Verdict:
    """:func:`classify` for texts already read; the same verdict whichever comes first (the
    values and the reason follow the order given)."""
    if b.text < a.text:
        flipped = _decide(b, a, cosine)
        values = (flipped.values[1], flipped.values[0])
        return Verdict(
            flipped.relation,
            flipped.subject,
            values,
            _reason(flipped.relation, flipped.subject, values),
        )
    return _decide(a, b, cosine)


def _decide(a: Statement, b: Statement, cosine: float | None) -> Verdict:
    """The verdict on ``a`` and ``b``, in the order that makes it symmetric."""
    shared = a.keys & b.keys
    if not shared:
        return _verdict("compatible")
    only_a, only_b = a.keys - b.keys, b.keys - a.keys
    subject = _subject(a, shared)
    if a.negative != b.negative:
        if only_a or only_b:
            return _verdict("compatible")
        return _verdict("contradicts", subject, _polarity(a, b))
    if only_a & a.values and only_b & b.values:
        conflict = _values_conflict(a, b, only_a, only_b)
        if conflict is not None:
            return _verdict("contradicts", subject, conflict)
    if only_a and only_b:
        choice = _choice_conflict(a, b, only_a, only_b)
        if choice is not None:
            return _verdict("contradicts", subject, choice)
    if _duplicate(a, b, only_a, only_b, cosine):
        return _verdict("duplicate", subject)
    return _verdict("compatible")


def _values_conflict(
    a: Statement, b: Statement, only_a: frozenset[str], only_b: frozenset[str]
) -> tuple[str, str] | None:
    """The values the texts give for one thing, when all else they say is the same, or one
    says it with one more word than the other ("the health check interval is 10s", "the
    load balancer checks health every 30s")."""
    words_a, words_b = only_a - a.values, only_b - b.values
    if words_a and words_b:
        return None
    if len(words_a | words_b) > MAX_EXTRA_WORDS:
        return None
    if words_a or words_b:
        shared = (a.keys & b.keys) - a.values
        if len(shared) < MIN_SHARED_WITH_EXTRA:
            return None
        extra, s = (words_a, a) if words_a else (words_b, b)
        if _qualifies(s, extra, shared):
            return None
    common = {_dimension(k) for k in only_a} & {_dimension(k) for k in only_b}
    if not common:
        return None
    return (
        _shown(a, frozenset(k for k in only_a if _dimension(k) in common)),
        _shown(b, frozenset(k for k in only_b if _dimension(k) in common)),
    )


def _qualifies(s: Statement, extra: frozenset[str], shared: frozenset[str]) -> bool:
    """Whether a word of ``extra`` stands right before a ``shared`` word in ``s``, naming a
    narrower thing ("the HTTP connect timeout", "hotfix deploys") than the other text."""
    return any(
        p.key in extra and after.key in shared and after.kind == "word"
        for p, after in zip(s.parts, s.parts[1:], strict=False)
    )


def _choice_conflict(
    a: Statement, b: Statement, only_a: frozenset[str], only_b: frozenset[str]
) -> tuple[str, str] | None:
    """The runs of words each text puts in one choice's slot, when all else is the same."""
    run_a, run_b = _slot_run(a, only_a), _slot_run(b, only_b)
    if run_a is None or run_b is None:
        return None
    return run_a, run_b


def _slot_run(s: Statement, keys: frozenset[str]) -> str | None:
    """The words of ``keys`` as written, if they are one run of at most
    :data:`MAX_CHOICE_WORDS` words right after a choice's cue in ``s``."""
    at = [i for i, p in enumerate(s.parts) if p.kind in ("word", "value") and p.key in keys]
    first, last = at[0], at[-1]
    if last - first + 1 != len(at) or len(at) > MAX_CHOICE_WORDS:
        return None
    before = [
        p
        for p in s.parts[:first]
        if p.kind != "stop" or p.raw in _COPULAS or p.raw in _SLOT_PREPOSITIONS or p.raw in _CUES
    ]
    if not before or not _is_cue(before):
        return None
    state = s.parts[first].raw
    if (
        before[-1].raw in _COPULAS
        and len(at) == 1
        and state.isalpha()
        and state.endswith(_STATE_ENDINGS)
    ):
        return None
    end = last + 1
    while end < len(s.parts) and s.parts[end].kind == "word" and end - first < MAX_CHOICE_WORDS:
        end += 1
    return " ".join(p.raw for p in s.parts[first:end])


def _is_cue(before: list[Part]) -> bool:
    """Whether the parts ``before`` a run end with a choice's cue."""
    last = before[-1]
    if last.raw in _CUES:
        return True
    return (
        last.raw in _SLOT_PREPOSITIONS
        and len(before) > 1
        and (before[-2].key in _SLOT_VERBS or before[-2].raw in _SLOT_VERBS)
    )


def _duplicate(
    a: Statement,
    b: Statement,
    only_a: frozenset[str],
    only_b: frozenset[str],
    cosine: float | None,
) -> bool:
    """Whether ``a`` restates ``b``: the same values and polarity (checked before), and
    enough words in common."""
    if (only_a & a.values) or (only_b & b.values):
        return False
    if not only_a and not only_b:
        return True
    if any(not k.isalpha() for k in only_a | only_b):
        return False  # an identifier one names and the other does not
    overlap = len(a.keys & b.keys) / len(a.keys | b.keys)
    if cosine is not None and cosine >= DUPLICATE_COSINE and overlap >= DUPLICATE_OVERLAP_NEAR:
        return True
    if only_a and only_b and _substitution(a, b, only_a, only_b):
        return False
    if overlap >= DUPLICATE_OVERLAP:
        return True
    return _corroborate.same_fact(a, b, lambda: 1.0, min_cosine=0.0)


def _substitution(
    a: Statement, b: Statement, only_a: frozenset[str], only_b: frozenset[str]
) -> bool:
    """Whether each text puts its own run of words in one place of the same sentence
    ("Gunicorn runs 4 workers per pod", "Celery runs 4 workers per pod"): another thing
    said the same of, not a restatement."""
    place_a, place_b = _run_place(a, only_a), _run_place(b, only_b)
    return place_a is not None and place_a == place_b


def _run_place(s: Statement, keys: frozenset[str]) -> tuple[str] | tuple[()] | None:
    """The key of the word right before the run of ``keys`` in ``s`` (``()`` when the run
    opens the text), or ``None`` when they are no one run."""
    at = [i for i, p in enumerate(s.parts) if p.kind in ("word", "value") and p.key in keys]
    if not at or at[-1] - at[0] + 1 != len(at):
        return None
    before = [p.key for p in s.parts[: at[0]] if p.kind in ("word", "value")]
    return (before[-1],) if before else ()


def _dimension(key: str) -> str:
    """``time`` for ``#time:30``."""
    return key[1:].split(":", 1)[0]


def _shown(s: Statement, keys: frozenset[str]) -> str:
    """The parts of ``s`` whose keys are ``keys``, as written."""
    return " ".join(p.raw for p in s.parts if p.kind in ("word", "value") and p.key in keys)


def _polarity(a: Statement, b: Statement) -> tuple[str, str]:
    """How each text says yes or no: its first negation and the word it negates ("never
    squash", "not allowed", "disabled"), or, in a text that says yes, that word or the
    negation's positive twin ("squash", "allowed", "enabled")."""
    said = {id(s): _negated(s) for s in (a, b)}
    negated = next((word for _, word in said.values() if word is not None), None)
    return _yes_or_no(a, said[id(a)][0], negated), _yes_or_no(b, said[id(b)][0], negated)


def _negated(s: Statement) -> tuple[str, Part | None]:
    """The first negation of ``s`` as written with the word it negates, and that word."""
    for i, p in enumerate(s.parts):
        if p.kind != "neg":
            continue
        if p.raw in _ANTONYMS:
            return p.raw, None
        word = next((q for q in s.parts[i + 1 :] if q.kind in ("word", "soft")), None)
        return (f"{p.raw} {word.raw}" if word else p.raw), word
    return "", None


def _yes_or_no(s: Statement, negation: str, negated: Part | None) -> str:
    """What ``s`` says: its ``negation``, or the ``negated`` word or a positive twin in it."""
    if negation:
        return negation
    for p in s.parts:
        if (negated is not None and p.key == negated.key) or p.raw in _TWINS:
            return p.raw
    return "yes"


def _subject(s: Statement, keys: frozenset[str]) -> str:
    """Up to :data:`SUBJECT_WORDS` of the words of ``s`` with ``keys``, as written, in order."""
    seen: list[str] = []
    for p in s.parts:
        if p.kind in ("word", "value") and p.key in keys and p.raw not in seen:
            seen.append(p.raw)
    return " ".join(seen[:SUBJECT_WORDS])


def _verdict(relation: Relation, subject: str = "", values: tuple[str, str] = ("", "")) -> Verdict:
    if relation == "compatible":
        subject = ""
    return Verdict(relation, subject, values, _reason(relation, subject, values))


def _reason(relation: Relation, subject: str, values: tuple[str, str]) -> str:
    if relation == "contradicts":
        return f'a says {values[0]}, b says {values[1]} for "{subject}"'
    if relation == "duplicate":
        return f'a and b say the same of "{subject}"'
    return "a and b can both hold"
