"""``coordinator:`` names one coordinator: one URL, or a list of the URLs of its processes, tried
in order. A bad list is refused as every team.yaml error is, naming the line and the entry."""

import pytest

from memmesh.policy import PolicyInvalid, parse_policy
from memmesh.policy.schema import policy_schema

PATH = "/team/home/team.yaml"
A = "https://coord-a.acme.internal:8400"
B = "https://coord-b.acme.internal:8400"
C = "https://10.0.0.7:8400"


def _invalid(source: str) -> PolicyInvalid:
    with pytest.raises(PolicyInvalid) as caught:
        parse_policy(source, PATH)
    return caught.value


def test_one_url_is_the_coordinator_and_its_only_address() -> None:
    policy = parse_policy(f"coordinator: {A}\n")

    assert policy.coordinator == A
    assert policy.coordinator_fallbacks == ()
    assert policy.coordinator_addresses() == (A,)


@pytest.mark.parametrize(
    "written",
    [f"coordinator:\n  - {A}\n  - {B}\n  - {C}\n", f"coordinator: [{A}, {B}, {C}]\n"],
    ids=["block-list", "flow-list"],
)
def test_a_list_names_one_coordinator_by_its_first_url_and_tries_the_others_in_order(
    written: str,
) -> None:
    policy = parse_policy(written)

    assert policy.coordinator == A  # its name: what requests are bound to without a pin
    assert policy.coordinator_fallbacks == (B, C)
    assert policy.coordinator_addresses() == (A, B, C)


def test_a_list_of_one_url_is_that_url() -> None:
    assert parse_policy(f"coordinator: [{A}]\n") == parse_policy(f"coordinator: {A}\n")


def test_no_coordinator_has_no_address() -> None:
    assert parse_policy("team: acme\n").coordinator_addresses() == ()


REFUSED = [
    pytest.param(
        "team: acme\ncoordinator: []\n",
        2,
        "coordinator",
        "an empty list names no coordinator: give its URL, or the URLs of its processes; "
        "without the key nothing is sent",
        id="empty-list",
    ),
    pytest.param(
        f"coordinator:\n  - {A}\n  - 8400\n",
        3,
        "coordinator[1]",
        "Expected `str`, got `int`",
        id="not-a-string",
    ),
    pytest.param(
        f"coordinator:\n  - {A}\n  - coord-b.acme.internal:8400\n",
        3,
        "coordinator[1]",
        "must be an http:// or https:// URL naming only a host and port: only http:// and "
        "https:// URLs are contacted; did you mean https://coord-b.acme.internal:8400?",
        id="not-a-url",
    ),
    pytest.param(
        f"coordinator:\n  - {A}\n  - http://127.0.0.1:8400\n",
        3,
        "coordinator[1]",
        "every address of the coordinator uses one scheme, the first's (https://): "
        "its processes serve the same certificate, or all plain http",
        id="mixed-schemes",
    ),
    pytest.param(
        f"coordinator:\n  - {A}\n  - {B}\n  - {A.upper()}/\n",
        4,
        "coordinator[2]",
        "the same address as coordinator[0]",
        id="same-address-twice",
    ),
    pytest.param(
        "coordinator: {url: http://team-host:8400}\n",
        1,
        "coordinator",
        "Expected `str | array | null`, got `object`",
        id="a-mapping",
    ),
]


@pytest.mark.parametrize(("source", "line", "key", "problem"), REFUSED)
def test_a_bad_coordinator_list_is_refused_naming_its_line_and_entry(
    source: str, line: int, key: str, problem: str
) -> None:
    error = _invalid(source)

    assert (error.path, error.line, error.key, error.problem) == (PATH, line, key, problem)
    assert error.exit_code == 3


def test_several_urls_in_one_string_are_refused_with_the_list_to_write() -> None:
    error = _invalid(f"coordinator: {A},{B}\n")

    assert error.key == "coordinator"
    assert error.problem.endswith(f"; write several addresses as a list: [{A}, {B}]")


def test_the_further_addresses_are_no_key_of_their_own() -> None:
    error = _invalid(f"coordinator: {A}\ncoordinator_fallbacks: [{B}]\n")

    assert (error.line, error.key, error.problem) == (2, "coordinator_fallbacks", "unknown key")


def test_the_schema_takes_one_url_or_a_list_of_them_and_not_the_loaders_own_key() -> None:
    properties = policy_schema()["$defs"]["Policy"]["properties"]

    assert properties["coordinator"]["anyOf"] == [
        {"type": "string"},
        {"type": "array", "items": {"type": "string"}, "minItems": 1},
        {"type": "null"},
    ]
    assert "coordinator_fallbacks" not in properties
