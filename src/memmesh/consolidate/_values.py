"""A memory text read as its parts, in order: the words that name what it speaks of, the values
it gives (numbers with their units, versions, weekdays, before or after), its negations, and
the words that carry nothing either way.

Values get a key that means the same however they are written: ``30s``, ``30 s`` and ``30
seconds`` are all ``#time:30``, ``1 hour`` is ``#time:3600``, ``two approvals`` is ``#n:2``
and ``v2`` is ``#n:2`` too. A word keeps its stem (:func:`memmesh.text.stem`), a compound
(``billing-api``, ``eu-west-1``, ``--force``) stays whole. Negations (``not``, ``never``,
``no longer``, ``don't``) and the words that say no by themselves (``disabled``,
``off``, ``forbidden``, ``optional``) are marked, so that a text's polarity is the parity of
its marks; their positive twins (``enabled``, ``allowed``, ``required``) carry nothing.
"""

import re
from typing import Literal, NamedTuple

from memmesh import text as _text

__all__ = ["Part", "parts"]

Kind = Literal["word", "value", "neg", "stop", "soft"]


class Part(NamedTuple):
    """One token of a text: what it is, what comparisons see of it, and how it was written."""

    kind: Kind
    key: str
    raw: str


# Times of day, numbers with thousands separators, and words (letters and digits, joined by
# . - _ + / : @ # = ' inside, led by dashes for flags, a percent sign after a number).
_CLOCK = re.compile(r"([0-9]{1,2}):([0-9]{2})")
_RAW = re.compile(r"\d{1,2}:\d{2}\b|\d{1,3}(?:,\d{3})+\b|-{0,2}\w+(?:['.\-_+/:@#=]\w+)*%?")
_NUMBER = re.compile(r"(\d+(?:[.,]\d+)*)([a-z%]*)")
_VERSION = re.compile(r"v(\d+(?:\.\d+)*)")

# unit -> (dimension, factor to the dimension's base: seconds, bytes, percent). A lone "m" is
# minutes in a duration ("5m") and thousandths of a CPU in a pod's limits ("500m"): its own.
_UNITS: dict[str, tuple[str, float]] = {
    **dict.fromkeys(("ms", "msec", "millisecond", "milliseconds"), ("time", 0.001)),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), ("time", 1.0)),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), ("time", 60.0)),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), ("time", 3600.0)),
    **dict.fromkeys(("d", "day", "days"), ("time", 86400.0)),
    **dict.fromkeys(("w", "wk", "week", "weeks"), ("time", 604800.0)),
    **dict.fromkeys(("month", "months"), ("time", 2592000.0)),
    **dict.fromkeys(("y", "yr", "year", "years"), ("time", 31536000.0)),
    **dict.fromkeys(("b", "byte", "bytes"), ("size", 1.0)),
    **dict.fromkeys(("k", "kb", "kib", "ki"), ("size", 1024.0)),
    **dict.fromkeys(("mb", "mib", "mi"), ("size", 1024.0**2)),
    **dict.fromkeys(("g", "gb", "gib", "gi"), ("size", 1024.0**3)),
    **dict.fromkeys(("t", "tb", "tib", "ti"), ("size", 1024.0**4)),
    **dict.fromkeys(("%", "percent", "pct"), ("percent", 1.0)),
    "m": ("m", 1.0),
}
# The units a number may be written apart from ("30 seconds", "10 MB"); a lone letter after a
# number ("3 s") is one too, but not "a", "i" or "x".
_SPACED_UNITS = frozenset(u for u in _UNITS if len(u) > 1 or u in "smhdbkgt%")
_NUMBER_WORDS = {
    w: str(n)
    for n, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
}
_WEEKDAYS = {
    day + suffix: day
    for day in "monday tuesday wednesday thursday friday saturday sunday".split()
    for suffix in ("", "s")
}
_NEGATIONS = frozenset(
    """
    not never no none nobody nothing neither nor without cannot can't don't doesn't
    didn't isn't aren't wasn't weren't won't wouldn't shouldn't mustn't haven't hasn't
    disabled disable disables off forbidden prohibited banned disallowed optional
    """.split()
)
# Words that carry neither a subject nor a value: the positive twins of the negations above,
# auxiliaries and light verbs that restatements swap freely, and the labels memories start
# with ("Gotcha:").
_SOFT = frozenset(
    """
    enabled enable enables allowed allow allows permitted fine ok okay required require
    requires requir mandatory always need needs use uses used using rely relies relied go goes
    went done get gets got set sets keep keeps kept make makes made run runs ran running listen
    listens also still currently now every longer anymore gotcha note decision convention tip
    fyi important reminder please
    """.split()
)
# Verb forms the stemmer leaves apart from their verb.
_IRREGULAR = dict(
    pair.split(":")
    for pair in """
    built:build written:write wrote:write chose:choose chosen:choose sent:send ran:run
    taken:take took:take brought:bring paid:pay held:hold led:lead left:leave lost:lose
    shown:show broke:break broken:break froze:freeze frozen:freeze began:begin begun:begin
    thrown:throw hid:hide hidden:hide fell:fall fallen:fall stuck:stick spun:spin
    """.split()
)
# A verb and its particle that are also written as one word: "time out" and "timeout".
_PHRASAL = {
    (stem, particle): joined
    for joined, stems, particle in (
        ("timeout", ("time", "tim"), "out"),
        ("login", ("log",), "in"),
        ("logout", ("log",), "out"),
        ("signin", ("sign",), "in"),
        ("setup", ("set",), "up"),
        ("rollback", ("roll",), "back"),
        ("backup", ("back",), "up"),
        ("cleanup", ("clean",), "up"),
        ("shutdown", ("shut",), "down"),
        ("startup", ("start",), "up"),
        ("fallback", ("fall",), "back"),
        ("failover", ("fail",), "over"),
        ("lookup", ("look",), "up"),
    )
    for stem in stems
}
_ARTICLES = frozenset("the a an our your their its this that these those my".split())


def parts(text: str) -> tuple[Part, ...]:
    """The parts of ``text`` in order (see the module docstring)."""
    raw = _RAW.findall(_text.fold(text).replace("\u2019", "'").replace("\u2018", "'"))
    out: list[Part] = []
    i = 0
    while i < len(raw):
        word = raw[i].removesuffix("'s")
        after = raw[i + 1] if i + 1 < len(raw) else ""
        if word == "no" and after in ("longer", "more"):
            out.append(Part("neg", "not", f"{word} {after}"))
            i += 2
            continue
        number = None
        if after.isalpha() and after not in _text.STOPWORDS:
            # "two approvals", "one week", "an hour"; not "one of", "a cache".
            number = _NUMBER_WORDS.get(word) or (
                "1" if word in ("a", "an") and _is_unit(after) else None
            )
        value = _value(number or word, after)
        if value is not None:
            key, used = value
            out.append(Part("value", key, " ".join(raw[i : i + used])))
            i += used
            continue
        joined = _PHRASAL.get((_text.stem(word), after))
        if joined is not None:
            out.append(Part("word", joined, f"{word} {after}"))
            i += 2
            continue
        out.append(_word(word))
        i += 1
    return tuple(out)


def _value(word: str, after: str) -> tuple[str, int] | None:
    """The value key ``word`` (followed by ``after``) gives, and how many tokens it takes."""
    if word in _WEEKDAYS:
        return f"#day:{_WEEKDAYS[word]}", 1
    if word in ("before", "after") and after and not (after[0].isdigit() or after in _NUMBER_WORDS):
        return f"#when:{word}", 1
    clock = _CLOCK.fullmatch(word)
    if clock:  # 14:30 (an aspect ratio 1:2:3, or 2024:01:02, is no time of day)
        return f"#clock:{int(clock.group(1))}:{clock.group(2)}", 1
    version = _VERSION.fullmatch(word)
    if version:
        return f"#n:{_version(version.group(1))}", 1
    match = _NUMBER.fullmatch(word)
    if match is None:
        return None
    digits, unit = match.groups()
    used = 1
    if not unit and after in _SPACED_UNITS:
        unit, used = after, 2
    if unit not in _UNITS:
        # A bare number, a version, or a number of things ("3 retries", "Node 18", "1.27").
        return (f"#n:{_version(digits)}", 1) if not unit else None
    dimension, factor = _UNITS[unit]
    try:
        amount = float(digits.replace(",", "")) * factor
    except ValueError:  # "1.2.3s": no amount
        return None
    return f"#{dimension}:{amount:.12g}", used


def _is_unit(word: str) -> bool:
    """Whether ``word`` is a unit written out ("hour", "weeks"), as after "an" or "a"."""
    return len(word) > 2 and word in _UNITS


def _version(digits: str) -> str:
    """``2.0`` and ``2`` are one version, ``1,000`` and ``1000`` one number."""
    digits = digits.replace(",", "")
    while digits.endswith(".0"):
        digits = digits[:-2]
    return digits


def _word(word: str) -> Part:
    """One word that is no value: a negation, a soft word, a stopword or a content word."""
    raw = word
    if word in _NEGATIONS or word.endswith("n't"):
        return Part("neg", "not", word)
    if word in _SOFT or word in _ARTICLES:
        return Part("soft" if word in _SOFT else "stop", word, word)
    if word in _text.STOPWORDS:
        return Part("stop", word, word)
    word = _IRREGULAR.get(word, word)
    if word.isalpha():
        return Part("word", _text.stem(word), raw)
    # "keep-alive" and "keepalive", "sign-in" and "signin" are one word; "billing-api" and
    # "eu-west-1" stay as written.
    plain = word.strip("-'")
    joined = plain.replace("-", "")
    return Part("word", joined if joined.isalpha() else plain, raw)
