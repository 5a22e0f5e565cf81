"""The README's walk-through, run command by command: a real coordinator on loopback and the
laptops of Alice and Bob, each a fresh home, with the ids the README shows replaced by the ids
the commands printed (the conventions: tests/_walkthrough.py)."""

from pathlib import Path

import pytest

from tests._walkthrough import ALLOWED, Step, Walk, WalkthroughError, shown_pattern, steps_of

README = Path(__file__).resolve().parent.parent / "README.md"


def _walk(text: str, root: Path) -> Walk:
    """Run every step of ``text``; the walk, its daemons stopped."""
    steps, _ = steps_of(text)
    walk = Walk(root)
    try:
        for step in steps:
            walk.run(step)
    finally:
        broken = walk.close()
    assert not broken, "\n".join(broken)
    return walk


def test_every_command_of_the_readme_runs_as_written_and_prints_what_it_shows(
    tmp_path: Path,
) -> None:
    text = README.read_text(encoding="utf-8")
    steps, allowed = steps_of(text)

    walk = _walk(text, tmp_path)

    # Every allowed line is still in the README, every rewrite was needed, and the walk went
    # through the three machines.
    assert allowed == set(ALLOWED)
    assert walk.used == set(walk.rules)
    assert set(walk.machines) == {"alice", "bob", "team host"}
    assert sum(bool(step.shown) for step in steps) >= 10


def test_a_block_that_names_no_machine_fails_the_walkthrough() -> None:
    with pytest.raises(WalkthroughError, match=r"README.md:2: its block names no machine"):
        steps_of("```sh\nmem stats\n```\n")


def test_a_machine_named_mid_block_fails_the_walkthrough() -> None:
    with pytest.raises(WalkthroughError, match=r"README.md:3: a machine named mid-block"):
        steps_of("```sh\n# on alice's laptop\n# on bob's laptop\nmem stats\n```\n")


def test_an_id_used_before_any_command_printed_it_fails_the_walkthrough(tmp_path: Path) -> None:
    with pytest.raises(WalkthroughError, match="01J9ZC4XQM is used before any shown output"):
        _walk("```sh\n# on alice's laptop\nmem forget 01J9ZC4XQM\n```\n", tmp_path)


@pytest.mark.parametrize(
    ("block", "why"),
    [
        pytest.param("echo hello\n#> hullo\n", "shown:\nhullo\nbut exit 0", id="other-output"),
        pytest.param("echo hello; echo there\n#> hello\n", "but exit 0", id="more-output"),
        pytest.param("false\n", "exit 1", id="exit-code"),
        pytest.param("mem tell-me\n", "exit 2", id="no-such-command"),
    ],
)
def test_a_command_that_prints_or_exits_otherwise_than_shown_fails_the_walkthrough(
    tmp_path: Path, block: str, why: str
) -> None:
    with pytest.raises(WalkthroughError, match=why):
        _walk(f"```sh\n# on alice's laptop\n{block}```\n", tmp_path)


def test_shown_output_binds_each_placeholder_id_once_and_lets_scores_and_times_vary() -> None:
    shown = ["1.559  01J9ZC4XQM  x…", "01J9ZC4XQM at 2026-01-05T09:30:00+00:00"]
    pattern, binds = shown_pattern(shown, {})

    printed = "0.802  01K0AAAAAA  x and more\n01K0AAAAAA at 2027-03-01T10:00:00Z\n"
    matched = pattern.fullmatch(printed)
    assert matched is not None
    assert (binds, matched.group("g0")) == (["01J9ZC4XQM"], "01K0AAAAAA")
    assert pattern.fullmatch("0.802  01K0AAAAAA  x\n01K0BBBBBB at 2027-03-01T10:00:00Z\n") is None
    bound, _ = shown_pattern(shown[:1], {"01J9ZC4XQM": "01K0CCCCCC"})
    assert bound.fullmatch("0.1  01K0AAAAAA  x\n") is None


def test_a_step_says_where_it_is_in_the_readme() -> None:
    step = Step(12, "bob", "mem stats", "")
    assert step.where() == "README.md:12 (bob): mem stats"
