"""Where an edited text differs from the original, for tests that must prove every other byte
stayed where it was."""


def span(before: str, after: str) -> tuple[str, str]:
    """The one stretch that differs: what ``before`` had there and what ``after`` has."""
    limit = min(len(before), len(after))
    prefix = 0
    while prefix < limit and before[prefix] == after[prefix]:
        prefix += 1
    limit -= prefix
    suffix = 0
    while suffix < limit and before[-1 - suffix] == after[-1 - suffix]:
        suffix += 1
    return before[prefix : len(before) - suffix], after[prefix : len(after) - suffix]


def inserted(before: str, after: str) -> str:
    """What ``after`` adds, asserting it only adds: every byte of ``before`` is still there."""
    removed, added = span(before, after)
    assert removed == "", f"original bytes were changed: {removed!r}"
    return added
