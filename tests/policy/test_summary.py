"""The one line `mem team policy check` prints: what team.yaml lets leave, or why nothing."""

import pytest

from memmesh.policy import parse_policy, policy_summary

COORDINATOR = "coordinator: http://127.0.0.1:8400\n"


@pytest.mark.parametrize(
    ("text", "summary"),
    [
        (
            "",
            "shares nothing: no coordinator (nothing leaves this laptop) "
            "and share.kinds lists no kinds",
        ),
        (COORDINATOR, "shares nothing: share.kinds lists no kinds"),
        # A project that lists no kinds adds nothing to share.
        (
            COORDINATOR + "share:\n  projects:\n    web: {kinds: []}\n    api: false\n",
            "shares nothing: share.kinds lists no kinds",
        ),
        (
            COORDINATOR + "share:\n  kinds: [decision]\n  min_reinforcements: 3\n",
            "shares kinds decision reinforced at least 3 times; "
            "never: tags private, secret, personal; auto_sync off",
        ),
        # Only one project shares: the rest share no kinds (so none is "but" another).
        (
            COORDINATOR + "share:\n  projects:\n    web: {kinds: [gotcha, command]}\n"
            "    hr: false\n",
            "shares no kinds team-wide; project web: kinds gotcha, command; "
            "never: tags private, secret, personal; auto_sync off",
        ),
        # A project's own floor, its kinds taken from the team-wide ones; `true` and `{}` add
        # nothing to say.
        (
            COORDINATOR + "share:\n  kinds: [fact]\n  projects:\n"
            "    web: {min_reinforcements: 2}\n    api: true\n    docs: {}\n"
            "    hr: {kinds: [], min_reinforcements: 1}\n",
            "shares kinds fact; project hr: no kinds; "
            "project web: kinds fact reinforced at least 2 times; "
            "never: tags private, secret, personal; auto_sync off",
        ),
        (
            COORDINATOR + "share: {kinds: [fact]}\nnever: {tags: [], patterns: [a, b]}\n",
            "shares kinds fact; never: no tags and 2 patterns; auto_sync off",
        ),
    ],
)
def test_the_summary_says_what_the_policy_allows(text: str, summary: str) -> None:
    assert policy_summary(parse_policy(text)) == summary
