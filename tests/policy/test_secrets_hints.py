"""The secret detectors' shared prefilter: one pass over a text names the hints it holds, and
only the forms one of whose hints it holds run. It must pick exactly the forms that each
form's own hint check picks, hints that overlap in the text included (``…da2-us12`` holds
both ``da2-`` and ``-us``)."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from memmesh.policy._detector import Form
from memmesh.policy.secrets import DETECTORS, PREFILTER, find_secrets
from tests.policy.test_secrets import HARMLESS, SECRETS

FORMS: list[Form] = [form for detector in DETECTORS for form in detector.forms]
HINTS = sorted({hint for form in FORMS for hint in form.hints})


def _own_checks(text: str) -> list[Form]:
    """The forms whose own hints occur in ``text``, in the detectors' order."""
    lowered = text.lower()
    return [
        form
        for form in FORMS
        if any(hint in (lowered if form.casefold else text) for hint in form.hints)
    ]


def _picked(text: str) -> list[Form]:
    return [form for _, form in PREFILTER.candidates(text, text.lower())]


def test_every_form_has_hints_so_that_the_prefilter_can_skip_it() -> None:
    assert all(form.hints for form in FORMS)


def test_the_prefilter_picks_the_forms_each_form_would_pick_on_the_corpus() -> None:
    texts = [secret.text for secret in SECRETS] + HARMLESS
    for text in texts:
        assert _picked(text) == _own_checks(text), text


def test_a_form_that_finds_a_secret_is_always_picked() -> None:
    for secret in SECRETS:
        picked = _picked(secret.text)
        for found, form in PREFILTER.forms:
            accepted = [
                match
                for match in found.matches(form, secret.text)
                if found.accept is None or found.accept(match)
            ]
            if accepted:
                assert form in picked, (secret.text, found.name)


def test_hints_overlapping_in_the_text_are_all_found() -> None:
    # ``da2-`` (an AppSync key's prefix) ends where ``-us`` (a Mailchimp key's suffix) begins.
    key = "9f3c71b0e4a85d26c1f07e9b3a4d6da2-us12"
    text = f"the mailchimp key is {key} for the list"
    assert _picked(text) == _own_checks(text)
    assert [finding.detector for finding in find_secrets(text)] == ["mailchimp-api-key"]
    # ``--`` inside ``-----BEGIN `` and ``AAAA`` inside a longer run of ``A``.
    for text in ("x-----BEGIN y", "AAAAAAAAAAAAAAAAAAAAAAAAA", "sk-ant-sk_live", "hvs.hvb.1//0"):
        assert _picked(text) == _own_checks(text), text


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(HINTS),
            st.sampled_from(HINTS).map(str.upper),
            st.sampled_from(HINTS).flatmap(
                lambda hint: st.integers(0, len(hint)).map(lambda cut: hint[cut:])
            ),
            st.sampled_from(["", " ", "-", "=", "\n", "İ", "ß", "0123456789abcdef"]),
        ),
        max_size=12,
    )
)
def test_the_prefilter_picks_the_same_forms_on_any_mix_of_hints(parts: list[str]) -> None:
    text = "".join(parts)
    assert _picked(text) == _own_checks(text)


def test_the_prefilter_picks_the_same_forms_on_random_glued_secrets() -> None:
    rng = random.Random(20261205)
    values = [secret.value for secret in SECRETS]
    for _ in range(3000):
        head, tail = rng.choice(values), rng.choice(values + HINTS)
        text = head[: rng.randint(0, len(head))] + tail + rng.choice(["", "-us12", "_", "."])
        assert _picked(text) == _own_checks(text), text
