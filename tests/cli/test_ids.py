"""Item ids at the command line: the short ids shown, and prefixes too short or naming
several items (tests/test_readme_walkthrough.py runs the README's own commands)."""

import re
from pathlib import Path

from memmesh.local.store import Store
from tests._clock import FakeClock
from tests.cli._output import error_line, json_of
from tests.conftest import MemRunner

README = Path(__file__).resolve().parents[2] / "README.md"
WEBHOOKS = "The billing service retries webhooks 5 times"
SQUASH = "Always squash-merge feature branches into main"
SHORT = re.compile(r"[0-9A-HJKMNP-TV-Z]{10,26}")


def commonprefix(ids: list[str]) -> str:
    """The prefix every one of ``ids`` starts with."""
    first, last = min(ids), max(ids)
    return first[
        : next((n for n, (a, b) in enumerate(zip(first, last, strict=True)) if a != b), 26)
    ]


def _made(mem: MemRunner, text: str, *args: str) -> str:
    """Remember ``text``; the full id."""
    item_id: str = json_of(mem("remember", text, "--json", *args))["id"]
    return item_id


def _shortest(item_id: str, others: list[str]) -> str:
    """What the shown id must be: the shortest prefix of at least 10 characters that no other
    id starts with (worked out by brute force, independently of memmesh's own way)."""
    for length in range(10, 27):
        if not any(other.startswith(item_id[:length]) for other in others if other != item_id):
            return item_id[:length]
    raise AssertionError(f"{item_id} is not unique")


# -- the ids shown ---------------------------------------------------------------------------


def test_every_command_shows_an_item_by_the_same_ten_characters_and_each_works_as_given(
    mem: MemRunner,
) -> None:
    made = mem("remember", WEBHOOKS)
    assert (made.returncode, made.stderr) == (0, "")
    shown = made.stdout.strip()
    assert made.stdout == shown + "\n"
    assert SHORT.fullmatch(shown)
    assert len(shown) == 10
    full = json_of(mem("show", shown, "--json"))["item"]["id"]
    assert full.startswith(shown)
    assert len(full) == 26

    assert mem("list").stdout == f"{shown}  [fact, global, active]  {WEBHOOKS}\n"
    recalled = mem("recall", "how often are webhooks retried").stdout
    assert re.fullmatch(rf"\d\.\d{{3}}  {shown}  \[fact, global\]  {WEBHOOKS}\n", recalled)
    assert mem("outcome", shown, "worked").stdout == f"{shown}: score +0.33\n"
    revised = mem("revise", shown, "The billing service retries webhooks 8 times").stdout.strip()
    assert len(revised) == 10
    assert revised != shown
    assert mem("forget", revised).stdout == f"archived {revised}\n"
    # `show` is the item in full, and --json always gives whole ids.
    assert mem("show", revised).stdout.splitlines()[0].startswith(f"id:             {revised}")
    assert len(mem("show", revised).stdout.splitlines()[0].split()[1]) == 26


def test_an_id_is_shown_longer_when_another_item_shares_its_first_ten_characters(
    mem: MemRunner, home: Path
) -> None:
    # Items made in the same millisecond share the ten characters of a ULID's time.
    with Store(home, author="tester", clock=FakeClock()) as store:
        first, _ = store.remember("Fact one about the build cache")
        second, _ = store.remember("Fact two about the linter config")
    later = _made(mem, WEBHOOKS)
    everyone = [first.id, second.id, later]
    assert first.id[:10] == second.id[:10]

    one, two, three = (_shortest(item_id, everyone) for item_id in everyone)
    assert len(one) == len(two) == len(commonprefix([first.id, second.id])) + 1 > 10
    assert three == later[:10]
    width = len(one)
    assert mem("list").stdout.splitlines() == [
        f"{three.ljust(width)}  [fact, global, active]  {WEBHOOKS}",
        f"{two}  [fact, global, active]  Fact two about the linter config",
        f"{one}  [fact, global, active]  Fact one about the build cache",
    ]
    assert mem("outcome", one, "worked").stdout == f"{one}: score +0.33\n"


# -- prefixes that name no single item -------------------------------------------------------


def test_a_prefix_naming_several_items_lists_each_with_its_kind_and_first_words(
    mem: MemRunner,
) -> None:
    """The README's sequence: remember, revise, then forget by the prefix first shown."""
    old = _made(mem, WEBHOOKS, "--kind", "gotcha")
    new = json_of(mem("revise", old, "Webhooks are retried 8 times, then dropped", "--json"))["id"]
    other = _made(mem, SQUASH, "--kind", "convention")
    prefix = commonprefix([old, new, other])[:9]
    assert len(prefix) >= 4  # made a moment apart, they share the start of their time

    refused = mem("forget", prefix)

    assert refused.returncode == 2
    assert error_line(refused) == (
        f"mem: error: id prefix '{prefix}' matches 3 items; give more characters: "
        f'{old[:10]} gotcha "The billing service retries webhooks 5…" (superseded) | '
        f'{new[:10]} gotcha "Webhooks are retried 8 times, then…" | '
        f'{other[:10]} convention "Always squash-merge feature branches…"'
    )
    assert json_of(mem("show", new, "--json"))["item"]["status"] == "active"


def test_a_prefix_naming_more_than_ten_items_lists_ten_and_counts_the_rest(
    mem: MemRunner, home: Path
) -> None:
    with Store(home, author="tester", clock=FakeClock()) as store:
        made = [store.remember(f"Build step {n} runs in container {n}")[0] for n in range(12)]
    ids = sorted(item.id for item in made)
    texts = {item.id: item.text for item in made}
    prefix = commonprefix(ids)

    refused = mem("show", prefix.lower())

    assert refused.returncode == 2
    listed = " | ".join(f'{_shortest(i, ids)} fact "{texts[i]}"' for i in ids[:10])
    assert error_line(refused) == (
        f"mem: error: id prefix '{prefix.lower()}' matches 12 items; give more characters: "
        f"{listed} | and 2 more"
    )


def test_a_prefix_under_four_characters_says_it_is_too_short(mem: MemRunner) -> None:
    shown = mem("remember", WEBHOOKS).stdout.strip()
    for command in (("show", shown[:2]), ("forget", shown[:3]), ("outcome", "", "worked")):
        refused = mem(*command)
        assert refused.returncode == 2
        assert error_line(refused) == (
            f"mem: error: id prefix '{command[1]}' is too short: give at least 4 characters"
        )
    assert mem("show", shown[:4]).returncode == 0
