"""What a built-in secret detector is, and the pieces its patterns share.

A detector is a name, a pattern and a judgement on each match. Its pattern names the value it
judges in a group whose name starts with ``v`` (``vq…`` when the value was spelled out in
quotes); a detector that needs the words around a secret to find it (``password=…``,
``AccountKey=…``) reports only that value as the secret, the others the whole match.
"""

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import msgspec

from memmesh.policy._secret_values import is_placeholder, token_body

__all__ = [
    "BROAD",
    "GENERIC",
    "NO_RUN_BEFORE",
    "PROVIDER",
    "UUID",
    "Detector",
    "Form",
    "HintIndex",
    "Prefilter",
    "detector",
    "form",
    "literal_starts",
    "quoted",
    "secret_span",
    "token",
    "token_value",
    "unquoted_value",
    "value",
]

# How specific a detector is. Where two find the same secret, the more specific one names it:
# ``GITHUB_TOKEN=ghp_…`` is a GitHub token, not a secret-looking assignment.
PROVIDER = 0  # one provider's own format (``ghp_…``, ``dckr_pat_…``)
BROAD = 1  # a format that other providers' formats fit inside (``sk-…``, a headerless key body)
GENERIC = 2  # a secret found by where it stands (``password=…``, ``Bearer …``)

# A match may only start where the run of token characters it scans begins, so that a
# pattern is tried once per run rather than at every character of it.
NO_RUN_BEFORE = r"(?<![A-Za-z0-9_-])"
_RUN_CHAR = re.compile(r"[A-Za-z0-9_-]")
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


class Form(msgspec.Struct, frozen=True):
    """One of a detector's patterns, and the text it cannot match without.

    The pattern runs only where one of its ``hints`` occurs (in the lower-cased text when
    ``casefold``), so that a hundred providers' formats cost little on text naming none.
    """

    pattern: re.Pattern[str]
    hints: tuple[str, ...] = ()
    casefold: bool = False


def form(pattern: str, *hints: str, casefold: bool = False) -> Form:
    """A detector's pattern from its source; ``casefold`` hints must be lower-case."""
    assert not casefold or all(hint == hint.lower() for hint in hints)
    return Form(re.compile(pattern), hints, casefold)


class Detector(msgspec.Struct, frozen=True):
    """One built-in detector (see the module docstring)."""

    name: str
    forms: tuple[Form, ...]
    # Decides on the match; ``None`` accepts every match.
    accept: Callable[[re.Match[str]], bool] | None = None
    rank: int = PROVIDER
    # Whether the secret is the judged value only, rather than the whole match.
    value_only: bool = False
    # Whether a match counts only where a run of token characters begins (``xghp_…`` is not
    # a GitHub token). Checked on each match rather than by a lookbehind at the start of the
    # pattern, so that a pattern starting with a literal is searched for quickly.
    run_start: bool = False

    def matches(self, each: Form, text: str) -> Iterator[re.Match[str]]:
        """The matches of one of its forms in ``text`` that count (see ``run_start``)."""
        for match in each.pattern.finditer(text):
            start = match.start()
            if not (self.run_start and start and _RUN_CHAR.match(text, start - 1)):
                yield match


class HintIndex:
    """Which of a fixed set of hints occur in a text, found in one pass over it.

    One pattern, the hints as a trie (so that where several begin at one place, the longest
    matches), finds them without overlap. A hint inside a found one is there too; one that
    would begin inside a found one and run past its end is looked for on its own.
    """

    def __init__(self, hints: Iterable[str]) -> None:
        words = sorted(set(hints))
        assert all(words), "a hint is never empty"
        self._pattern = re.compile(_trie(words)) if words else None
        self._inside = {word: frozenset(o for o in words if o in word) for word in words}
        self._across = {
            word: tuple(
                other
                for other in words
                if any(
                    other.startswith(word[cut:]) and len(other) > len(word) - cut
                    for cut in range(1, len(word))
                )
            )
            for word in words
        }

    def present(self, text: str) -> set[str]:
        """The hints that occur in ``text``."""
        found: set[str] = set()
        if self._pattern is None:
            return found
        for word in set(self._pattern.findall(text)):
            found |= self._inside[word]
            for other in self._across[word]:
                if other not in found and other in text:
                    found.add(other)
        return found


def _trie(words: list[str]) -> str:
    """A pattern matching any of ``words``, the longest where several begin at one place."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}
    return _branches(root)


def _branches(node: dict[str, Any]) -> str:
    alternatives = [re.escape(char) + _branches(below) for char, below in node.items() if char]
    if not alternatives:
        return ""
    body = alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"
    # Greedy: the longer hints below this node are tried before the one ending here.
    return f"(?:{body})?" if "" in node else body


class Prefilter:
    """The forms of ``detectors``, in order, and which of them a text can match: those one
    of whose hints it holds (lower-cased for a ``casefold`` form), and those without hints.

    This is each form's own hint check, for every form at once: a hundred providers' forms
    cost one pass over a text rather than a hundred.
    """

    def __init__(self, detectors: Iterable[Detector]) -> None:
        self.forms = tuple((found, each) for found in detectors for each in found.forms)
        self._always: list[int] = []
        self._cased: dict[str, list[int]] = {}
        self._folded: dict[str, list[int]] = {}
        for index, (_, each) in enumerate(self.forms):
            if not each.hints:
                self._always.append(index)
            for hint in each.hints:
                (self._folded if each.casefold else self._cased).setdefault(hint, []).append(index)
        self._cased_index = HintIndex(self._cased)
        self._folded_index = HintIndex(self._folded)

    def candidates(self, text: str, lowered: str) -> list[tuple[Detector, Form]]:
        """The forms to run on ``text`` (``lowered`` is ``text.lower()``), in order."""
        picked = set(self._always)
        for hint in self._cased_index.present(text):
            picked.update(self._cased[hint])
        for hint in self._folded_index.present(lowered):
            picked.update(self._folded[hint])
        return [self.forms[index] for index in sorted(picked)]


def detector(
    name: str,
    pattern: str | tuple[Form, ...],
    accept: Callable[[re.Match[str]], bool] | None = None,
    *,
    rank: int = PROVIDER,
    value_only: bool = False,
    hints: tuple[str, ...] = (),
    casefold: bool = False,
    run_start: bool = False,
) -> Detector:
    """A detector from a pattern's source (with its hints), or from several forms."""
    forms = (form(pattern, *hints, casefold=casefold),) if isinstance(pattern, str) else pattern
    return Detector(name, forms, accept, rank, value_only, run_start)


# Characters that end a pattern's literal start; ``\`` escapes the next one.
_SYNTAX = frozenset("[](){}?*+|^$.")


def literal_starts(prefix: str) -> tuple[str, ...]:
    """The literal text each top-level alternative of ``prefix`` begins with, or ``()``
    when one of them begins with none (``gh[pousr]_`` -> ``("gh",)``)."""
    alternatives, depth, current = [], 0, ""
    for char in prefix:
        depth += (char == "(") - (char == ")")
        if char == "|" and depth == 0:
            alternatives.append(current)
            current = ""
        else:
            current += char
    starts = []
    for alternative in [*alternatives, current]:
        literal, index = "", 0
        while index < len(alternative):
            char = alternative[index]
            if (
                char == "\\"
                and index + 1 < len(alternative)
                and not alternative[index + 1].isalnum()
            ):
                literal, index = literal + alternative[index + 1], index + 2
            elif char in _SYNTAX or char == "\\":
                # A quantifier may repeat the last character zero times: it is not certain.
                if char in "{?*":
                    literal = literal[:-1]
                break
            else:
                literal, index = literal + char, index + 1
        if not literal:
            return ()
        starts.append(literal)
    return tuple(starts)


def token(
    name: str,
    prefix: str,
    body: str,
    *,
    before: str | None = None,
    after: str = r"(?![A-Za-z0-9_-])",
    check: Callable[[str], bool] = token_body,
    rank: int = PROVIDER,
    hints: tuple[str, ...] | None = None,
) -> Detector:
    """A provider token: a fixed ``prefix`` and a random ``body`` that ``check`` judges.

    ``before`` and ``after`` say what may not come before the prefix (by default, a run of
    token characters) or after the body: a longer run is some other thing. ``hints`` default
    to the prefix's literal start.
    """
    pattern = (before or "") + "(?:" + prefix + ")(?P<v>" + body + ")" + after
    return detector(
        name,
        pattern,
        lambda match: check(match["v"]),
        rank=rank,
        hints=literal_starts(prefix) if hints is None else hints,
        run_start=before is None,
    )


def _value_group(match: re.Match[str]) -> str | None:
    for key, group in match.groupdict().items():
        if key.startswith("v") and group is not None:
            return key
    return None


def value(match: re.Match[str]) -> str:
    """The judged value: the first ``v…`` group that took part, else the whole match."""
    key = _value_group(match)
    return match.group() if key is None else match[key]


def token_value(match: re.Match[str]) -> bool:
    """Whether the judged value is a token's random part (:func:`token_body`)."""
    return token_body(value(match))


def quoted(match: re.Match[str]) -> bool:
    """Whether the value was spelled out in quotes (or as an XML element's text)."""
    return any(k.startswith("vq") and g is not None for k, g in match.groupdict().items())


_CLOSING = {")": "(", "]": "[", "}": "{"}


def unquoted_value(match: re.Match[str]) -> str:
    """The value, without the sentence punctuation an unquoted value may have picked up.

    A closing bracket stays when the value opened it (``${API_KEY}``), and a placeholder
    (``sk-...``) keeps the dots that make it one.
    """
    found = value(match)
    if quoted(match) or is_placeholder(found):
        return found
    while found:
        last = found[-1]
        if last in ".,:;" or (last in _CLOSING and found.count(last) > found.count(_CLOSING[last])):
            found = found[:-1]
        else:
            break
    return found


def secret_span(found: Detector, match: re.Match[str]) -> tuple[int, int]:
    """Where the secret itself is: the whole match, or only its judged value."""
    key = _value_group(match) if found.value_only else None
    if key is None:
        return match.start(), match.end()
    start = match.start(key)
    if quoted(match):
        return start, match.end(key)
    return start, start + len(unquoted_value(match))
